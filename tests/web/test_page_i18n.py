"""The page in Chinese: every text the scripts write is a catalog message, and an answer asked
for with ``?lang=zh`` has its sentences written in Chinese (without it, the CLI's English)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("fastapi", reason="the web extra (fastapi) is not installed")
from fastapi.testclient import TestClient

from suanli.i18n import sentence, translate_to
from suanli.web.app import create_app
from suanli.web.page_messages import PAGE_MESSAGES, PAGE_WORDS, SCRIPT_MESSAGES

STATIC = Path(__file__).parents[2] / "src/suanli/web/static"
# t("...") and th("...") calls, their id possibly written as "a" + "b" over lines.
CALL = re.compile(r'\b(?:t|th)\(\s*((?:"(?:[^"\\]|\\.)*"\s*\+\s*)*"(?:[^"\\]|\\.)*")\s*[,)]')
LITERAL = re.compile(r'"((?:[^"\\]|\\.)*)"')
HOLE = re.compile(r"\{(\w+)")
CJK = re.compile(r"[\u4e00-\u9fff]")


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


def _skeleton(doc: object) -> object:
    """``doc`` with every string emptied: its keys, numbers and shape."""
    if isinstance(doc, dict):
        return {k: _skeleton(v) for k, v in doc.items()}
    if isinstance(doc, list):
        return [_skeleton(v) for v in doc]
    return "" if isinstance(doc, str) else doc


def test_an_error_comes_in_the_language_the_request_names(client: TestClient) -> None:
    body = {"model": "no-such-model", "gpu": "4090"}
    bad = client.post("/api/memory", json=body)
    assert bad.status_code == 400
    assert bad.json()["error"].startswith("unknown model 'no-such-model'")  # scripts: English
    zh = client.post("/api/memory?lang=zh-CN", json=body)
    assert zh.status_code == 400
    assert zh.json()["error"].startswith("未知模型 'no-such-model'")
    assert "not a preset" not in zh.json()["error"]


def test_an_answer_comes_in_the_language_the_request_names(client: TestClient) -> None:
    """The sentences are written from their message ids and values, as the CLI writes them;
    keys, numbers and identifiers stay; without ?lang= the answer is the CLI's English JSON."""
    from suanli.answers.memory import memory
    from suanli.web.schemas import MemoryRequest

    body = {"model": "llama-3.1-8b", "task": "lora", "gpu": "4090", "cards": ["4090"]}
    en = client.post("/api/memory", json=body).json()
    zh = client.post("/api/memory?lang=zh", json=body).json()
    answer = memory(MemoryRequest(**body).to_request())  # type: ignore[arg-type]
    assert en["assumptions"] == [str(a) for a in answer.assumptions]
    assert zh["assumptions"] == [sentence(a, "zh") for a in answer.assumptions]
    assert all(CJK.search(a) for a in zh["assumptions"])
    assert _skeleton(zh) == _skeleton(en) and zh["total_bytes"] == en["total_bytes"]
    assert zh["model"] == en["model"] and zh["task"] == en["task"]
    assert client.post("/api/memory", json=body).json() == en  # Chinese changed nothing


def test_a_cached_plan_is_kept_per_language(client: TestClient) -> None:
    body = {"model": "llama-3.1-70b", "task": "full", "gpu": ["4090", "h100"], "max_gpus": 2}
    en = client.post("/api/plan", json=body).json()
    zh = client.post("/api/plan?lang=zh", json=body).json()
    reasons = [(e["reason"], z["reason"]) for e, z in zip(en["rows"], zh["rows"], strict=True)]
    assert any(e and e != z and CJK.search(z) for e, z in reasons), reasons
    assert client.post("/api/plan", json=body).json() == en


@pytest.mark.parametrize(
    ("path", "words"),
    [
        ("/api/nothing?lang=zh", "没有端点 /api/nothing；见 /docs"),
        ("/api/presets?lang=fr", "unknown language 'fr'; use one of en, zh"),
    ],
)
def test_the_web_errors_read_in_the_language(client: TestClient, path: str, words: str) -> None:
    answer = client.get(path)
    assert answer.status_code in (400, 404)
    assert answer.json()["error"] == words


def test_a_refused_field_reads_in_chinese(client: TestClient) -> None:
    unknown = client.post("/api/memory?lang=zh", json={"nope": 1}).json()["error"]
    assert unknown == "未知字段 nope；此端点的字段见 /docs"
    bad = client.post("/api/perf?lang=zh", json={"dtype": "bf17"}).json()["error"]
    assert "'bf17' 不在可选值" in bad and "is not one of" not in bad
