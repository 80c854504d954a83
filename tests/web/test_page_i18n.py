"""The page in Chinese: every text the scripts write is a catalog message, and
``POST /api/sentences`` shows an answer's English sentences in Chinese (answers stay English)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("fastapi", reason="the web extra (fastapi) is not installed")
from fastapi.testclient import TestClient

from suanli.answers.base import SCHEMA_VERSION
from suanli.i18n import sentence, translate_to
from suanli.web.app import create_app
from suanli.web.page_messages import PAGE_MESSAGES, PAGE_WORDS, SCRIPT_MESSAGES
from suanli.web.schemas import SENTENCES_MAX_CHARS, SENTENCES_MAX_TEXTS

STATIC = Path(__file__).parents[2] / "src/suanli/web/static"
# t("...") and th("...") calls, their id possibly written as "a" + "b" over lines.
CALL = re.compile(r'\b(?:t|th)\(\s*((?:"(?:[^"\\]|\\.)*"\s*\+\s*)*"(?:[^"\\]|\\.)*")\s*[,)]')
LITERAL = re.compile(r'"((?:[^"\\]|\\.)*)"')
HOLE = re.compile(r"\{(\w+)")


@pytest.fixture(scope="module")
def client() -> Iterator[TestClient]:
    app = create_app(allow_hub=False, allow_hosts=("testserver",), search_processes=False)
    with TestClient(app) as c:
        yield c


def script_ids() -> set[str]:
    found = set()
    for name in ("app.js", "card.js", "lang.js"):
        for call in CALL.finditer((STATIC / name).read_text("utf-8")):
            found.add("".join(LITERAL.findall(call.group(1))).replace('\\"', '"'))
    return found


def test_every_script_text_is_a_catalog_message() -> None:
    assert script_ids() == set(SCRIPT_MESSAGES)
    for message in (*SCRIPT_MESSAGES, *PAGE_WORDS):
        chinese = translate_to("zh", message)
        assert chinese != message, f"no Chinese for {message!r}"
        assert set(HOLE.findall(chinese)) == set(HOLE.findall(message)), message


def test_messages_serve_the_scripts_texts(client: TestClient) -> None:
    zh = client.get("/api/messages?lang=zh").json()["messages"]
    assert set(zh) == {*PAGE_MESSAGES, *SCRIPT_MESSAGES, *PAGE_WORDS}
    assert zh["does not fit"] == "放不下"
    assert zh["fits on {yes}"] == "放得下：{yes}"
    assert zh["arithmetic intensity (FLOP per byte)"] == "算术强度（每字节 FLOP）"
    en = client.get("/api/messages?lang=en").json()["messages"]
    assert all(k == v for k, v in en.items())


def test_sentences_translate_an_answers_error(client: TestClient) -> None:
    bad = client.post("/api/memory", json={"model": "no-such-model", "gpu": "4090"})
    assert bad.status_code == 400
    error = bad.json()["error"]
    assert error.startswith("unknown model 'no-such-model'")  # the answer stays English
    empty = "the uploaded config.json is empty"
    texts = [error, empty, "not a sentence anyone wrote", ""]
    zh = client.post("/api/sentences", json={"lang": "zh-CN", "texts": texts})
    assert zh.status_code == 200
    doc = zh.json()
    assert doc["lang"] == "zh"
    assert doc["texts"][0].startswith("未知模型 'no-such-model'")
    assert doc["texts"][1] == "上传的 config.json 是空的"
    assert doc["texts"][2:] == texts[2:]  # unknown sentences come back as they were
    en = client.post("/api/sentences", json={"lang": "en", "texts": texts}).json()
    assert en == {"schema_version": SCHEMA_VERSION, "lang": "en", "texts": texts}


def test_sentences_translate_an_answers_assumptions(client: TestClient) -> None:
    body = {"model": "llama-3.1-8b", "task": "lora", "gpu": "4090", "cards": ["4090"]}
    doc = client.post("/api/memory", json=body).json()
    texts = doc["assumptions"] + [note for fit in doc["fits"] for note in fit["notes"]]
    zh = client.post("/api/sentences", json={"lang": "zh", "texts": texts}).json()["texts"]
    assert zh == [sentence(text, "zh") for text in texts]
    again = client.post("/api/memory", json=body).json()
    assert again == doc  # asking for Chinese changed nothing in the answers


@pytest.mark.parametrize(
    ("body", "status", "words"),
    [
        ({"lang": "fr", "texts": ["a b c"]}, 400, "zh or en"),
        ({"lang": "zh", "texts": ["x"] * (SENTENCES_MAX_TEXTS + 1)}, 422, "texts"),
        ({"lang": "zh", "texts": ["x" * (SENTENCES_MAX_CHARS + 1)]}, 422, "texts.0"),
        ({"lang": "zh", "texts": [1]}, 422, "texts.0"),
        ({"lang": "zh"}, 422, "missing field texts"),
        ({"lang": "zh", "texts": [], "more": 1}, 422, "unknown field more"),
        ({"lang": "", "texts": []}, 422, "lang"),
        ([], 422, "JSON object"),
    ],
)
def test_sentences_are_bounded(client: TestClient, body: object, status: int, words: str) -> None:
    answer = client.post("/api/sentences", json=body)
    assert answer.status_code == status, answer.text
    error = answer.json()["error"]
    assert words in error and "\n" not in error


def test_sentences_take_the_body_limit(client: TestClient) -> None:
    big = client.post(
        "/api/sentences",
        content=b'{"lang": "zh", "texts": ["' + b"x" * (1 << 20) + b'"]}',
        headers={"content-type": "application/json"},
    )
    assert big.status_code == 413 and "limit" in big.json()["error"]


def test_the_web_errors_read_in_chinese() -> None:
    assert sentence("missing field texts", "zh") == "缺少字段 texts"
    assert sentence("no such endpoint /api/nothing; see /docs", "zh") == (
        "没有端点 /api/nothing；见 /docs"
    )
    assert sentence("'bf17' is not one of bf16, fp16", "zh") == "'bf17' 不在可选值 bf16, fp16 之中"
