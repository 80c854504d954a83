"""Sentences are data (issue 40): the library returns each sentence as its English text holding
its message id and values; a view writes it in its language from those, never by reading the
finished English back. Formatting, nesting, joins, pickling, JSON; a third language needs only
its code in LANGS and a catalog; the representative commands in Chinese leave no English
sentence and pass no formatted sentence to a view as plain text."""

from __future__ import annotations

import contextlib
import copy
import gettext
import io
import json
import pickle
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

import suanli.i18n as i18n
from suanli.i18n import (
    N_,
    Msg,
    Sentence,
    concat,
    from_data,
    join,
    message_of,
    sentence,
    set_lang,
    to_data,
)

ROOT = Path(__file__).resolve().parent.parent
CJK = re.compile(r"[\u4e00-\u9fff]")
NEEDS = N_("{model} needs {size:,.1f} GiB on {gpu!r} ({share:.0%} of it)")


# --- a tiny catalog in a made-up language ------------------------------------------------------
class Catalog(gettext.NullTranslations):
    """A catalog held in a dict (message id -> translation)."""

    def __init__(self, messages: dict[str, str]) -> None:
        super().__init__()
        self.messages = messages

    def gettext(self, message: str) -> str:
        return self.messages.get(message, message)


TOY = Catalog(
    {
        str(NEEDS): "[{gpu}] {model}: {size} GiB, {share}",  # reordered, specs dropped
        "does not fit": "PASSE PAS",
        "; ": " | ",
        "{gpu} cannot run it: {why}": "{gpu} NON: {why}",
        "positional {} and {}": "{1} <- {0}",
    }
)


def toy(text: str) -> str:
    return i18n.render(text, TOY.gettext)


def test_a_sentence_is_its_english_holding_its_message_id_and_values() -> None:
    made = NEEDS.format(model="llama", size=81.56, gpu="rtx-4090", share=0.5)
    assert isinstance(NEEDS, Msg) and isinstance(made, Sentence) and isinstance(made, str)
    assert made == "llama needs 81.6 GiB on 'rtx-4090' (50% of it)"
    assert made.msgid == str(NEEDS)
    assert made.values == {"model": "llama", "size": 81.56, "gpu": "rtx-4090", "share": 0.5}
    # The translation is filled with each value as the English formatted it (its spec, its !r).
    assert toy(made) == "['rtx-4090'] llama: 81.6 GiB, 50%"
    assert sentence(made, "en") == str(made) and type(sentence(made, "en")) is str


def test_values_that_are_sentences_are_translated_in_the_same_language() -> None:
    why = N_("does not fit")
    made = N_("{gpu} cannot run it: {why}").format(gpu="a100", why=why)
    assert made == "a100 cannot run it: does not fit"
    assert toy(made) == "a100 NON: PASSE PAS"
    twice = N_("{gpu} cannot run it: {why}").format(gpu="h100", why=made)
    assert toy(twice) == "h100 NON: a100 NON: PASSE PAS"
    # Real catalog: a reason inside a reason, in Chinese, the numbers as the English wrote them.
    reason = N_("does not fit in {gib:.0f} GiB at up to {gpus} GPUs").format(gib=24.0, gpus=8)
    assert sentence(reason, "zh") == "每卡 24 GiB，最多 8 张 GPU 也放不下"


def test_positional_fields_escaped_braces_and_unknown_ids() -> None:
    made = N_("positional {} and {}").format("a", N_("does not fit"))
    assert made == "positional a and does not fit"
    assert toy(made) == "PASSE PAS <- a"
    braces = N_("{{literal}} {x:>5}").format(x=7)
    assert braces == "{literal}     7" and toy(braces) == "{literal}     7"
    unknown = N_("a sentence no catalog has: {x!r}").format(x="v")
    assert sentence(unknown, "zh") == "a sentence no catalog has: 'v'"


def test_a_translation_that_does_not_fit_its_message_shows_the_english() -> None:
    broken = Catalog({"{a} and {b}": "{a} und {c}", "{a} only": "{a} {"})
    for message in ("{a} and {b}", "{a} only"):
        made = Msg(message).format(a=1, b=2)
        assert i18n.render(made, broken.gettext) == str(made)


def test_join_and_concat_keep_every_piece() -> None:
    parts = [
        N_("does not fit"),
        "rtx-4090",
        N_("{gpu} cannot run it: {why}").format(gpu="x", why="y"),
    ]
    joined = join(parts, N_("; "))
    assert joined == "; ".join(parts) and isinstance(joined, Sentence) and joined.msgid is None
    assert toy(joined) == "PASSE PAS | rtx-4090 | x NON: y"
    assert sentence(join([N_("does not fit")] * 2, N_("; ")), "zh") == "放不下；放不下"
    assert join([], N_("; ")) == "" and not join([], N_("; "))
    inner = concat(parts[0], " (", parts[1], ")")
    outer = concat(inner, ". ", N_("does not fit"))
    assert outer == "does not fit (rtx-4090). does not fit"
    assert outer.args[0] == "does not fit" and len(outer.args) == 6  # flattened
    assert toy(outer) == "PASSE PAS (rtx-4090). PASSE PAS"


def test_sentences_pickle_copy_and_serialise_as_their_english() -> None:
    made = N_("{gpu} cannot run it: {why}").format(
        gpu="a100", why=NEEDS.format(model="m", size=1.0, gpu="g", share=1.0)
    )
    doc = {"reason": made, "parts": [join([made, N_("does not fit")], N_("; "))]}
    for protocol in range(pickle.HIGHEST_PROTOCOL + 1):
        back = pickle.loads(pickle.dumps(doc, protocol))
        assert back == doc and isinstance(back["reason"], Sentence)
        assert toy(back["reason"]) == toy(made) and toy(back["parts"][0]) == toy(doc["parts"][0])
    assert pickle.loads(pickle.dumps(N_("does not fit"))).__class__ is Msg
    assert copy.deepcopy(doc)["reason"] is made
    assert json.loads(json.dumps(doc)) == {"reason": str(made), "parts": [str(doc["parts"][0])]}
    # Between suanli's own processes (doctor run's child): the ids survive JSON as data.
    again = from_data(json.loads(json.dumps(to_data(doc))))
    assert again == doc and toy(again["reason"]) == toy(made)
    assert toy(again["parts"][0]) == toy(doc["parts"][0])
    assert from_data(to_data(N_("does not fit"))).__class__ is Msg


def test_an_exception_carries_its_sentence() -> None:
    made = N_("does not fit in {gib:.0f} GiB at up to {gpus} GPUs").format(gib=24.0, gpus=8)
    error = ValueError(made)
    assert message_of(error) is made and str(error) == str(made)
    assert message_of(pickle.loads(pickle.dumps(error))) == made
    assert isinstance(message_of(pickle.loads(pickle.dumps(error))), Sentence)
    assert message_of(KeyError("x")) == "'x'"  # not ours: as str() writes it
    assert message_of(OSError(2, "No such file")) == "[Errno 2] No such file"


def test_plain_text_is_looked_up_whole_never_matched() -> None:
    assert sentence("does not fit", "zh") == "放不下"  # a word the library left unmarked
    written = "does not fit in 24 GiB at up to 8 GPUs"  # finished text: not parsed back
    assert sentence(written, "zh") == written
    assert i18n.FALLBACKS[written] >= 1
    long = "does not fit; " * 10_000
    assert sentence(long, "zh") == long


# --- a third language: its code in LANGS and a catalog ------------------------------------------
@pytest.fixture
def third_language(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """``xx``: a catalog compiled into a locale folder of its own and the code added to LANGS;
    nothing else changes."""
    pytest.importorskip("babel", reason="babel (the catalog tool) is not installed")
    from babel.messages.catalog import Catalog as BabelCatalog
    from babel.messages.mofile import write_mo

    catalog = BabelCatalog(locale="fr")
    for message, translation in TOY.messages.items():
        catalog.add(message, translation)
    catalog.add("error: {message}", "ERREUR -> {message}")
    catalog.add("unknown GPU {name!r}; see suanli gpus", "GPU INCONNU {name!r}")
    for lang in ("xx", "zh"):
        folder = tmp_path / lang / "LC_MESSAGES"
        folder.mkdir(parents=True)
        if lang == "zh":  # the real Chinese stays where it was found
            source = i18n.LOCALE_DIR / "zh" / "LC_MESSAGES" / "suanli.mo"
            (folder / "suanli.mo").write_bytes(source.read_bytes())
            continue
        buffer = io.BytesIO()
        write_mo(buffer, catalog)
        (folder / "suanli.mo").write_bytes(buffer.getvalue())
    monkeypatch.setattr(i18n, "LANGS", (*i18n.LANGS, "xx"))
    monkeypatch.setattr(i18n, "LOCALE_DIR", tmp_path)
    i18n._translations.cache_clear()
    try:
        yield "xx"
    finally:
        set_lang(None)
        i18n._translations.cache_clear()


def test_a_third_language_needs_only_its_code_and_a_catalog(third_language: str) -> None:
    assert i18n.normalize("XX-yy.UTF-8") == "xx"
    assert i18n.lang_from_environment({"LANG": "xx_YY.UTF-8"}) == "xx"
    made = NEEDS.format(model="llama", size=81.56, gpu="rtx-4090", share=0.5)
    assert sentence(made, "xx") == "['rtx-4090'] llama: 81.6 GiB, 50%"
    reasons = join([N_("does not fit"), N_("does not fit")], N_("; "))
    assert sentence(reasons, "xx") == "PASSE PAS | PASSE PAS"
    assert sentence(reasons, "zh") == "放不下；放不下"
    set_lang("xx")
    assert i18n._("error: {message}") == "ERREUR -> {message}"


def test_the_web_answers_in_a_third_language(third_language: str) -> None:
    pytest.importorskip("fastapi", reason="the web extra (fastapi) is not installed")
    from fastapi.testclient import TestClient

    from suanli.web.app import create_app

    app = create_app(allow_hub=False, allow_hosts=("testserver",), search_processes=False)
    with TestClient(app) as client:
        nothing = client.post("/api/memory?lang=xx", json={"gpu": "no-such-gpu-xyz"}).json()
        assert "PASSE PAS" not in nothing["error"]  # an error it has no translation for: English
        assert client.get("/api/presets?lang=xx").status_code == 200
        assert client.get("/api/messages?lang=xx").json()["lang"] == "xx"


# --- the representative commands in Chinese ------------------------------------------------------
COMMANDS = {
    "mem": ("mem", "llama-3.1-8b", "--task", "lora", "--gpu", "4090", "--explain"),
    "mem-to-fit": ("mem", "llama-3.1-8b", "--task", "full", "--gpu", "4090"),
    "perf": ("perf", "llama-3.1-8b", "--task", "full", "--gpu", "h100", "--tp", "8", "--explain"),
    "perf-infer": ("perf", "qwen2.5-7b", "--task", "infer", "--gpu", "l40s", "--explain"),
    "plan": ("plan", "llama-3.1-70b", "--task", "full", "--max-gpus", "8"),
    "card": ("card", "4090"),
    "capacity": ("capacity", "llama-3.1-8b", "--gpu", "l40s", "--rate", "20", "--requests", "100"),
    "cost": ("cost", "h100", "--gpus", "8", "--price", "25000", "--utilisation", "0.6"),
    "compare": ("compare", "llama-3.1-8b", "--task", "qlora", "--devices", "cpu,4090,h100"),
    "doctor": ("doctor",),
    "error-fit": ("perf", "llama-3.1-70b", "--task", "full", "--gpu", "4090"),
    "error-model": ("mem", "no-such-model-xyz"),
    "error-usage": ("plan", "--gpus", "x"),
    "error-doctor-run": ("doctor", "run", "/no/such/script.py"),
}


def _templates() -> list[tuple[re.Pattern[str], str]]:
    """Each catalog message with placeholders as a pattern that finds text written from it
    (the test's oracle only: a view never does this)."""
    found = []
    for message in i18n._translations("zh")._catalog:  # type: ignore[attr-defined]
        if not isinstance(message, str) or "{" not in message:
            continue
        pieces = re.split(r"\{[^{}]*\}", message.replace("{{", "\0").replace("}}", "\1"))
        literal = "".join(pieces)
        if sum(c.isalpha() for c in literal) < 12:
            continue  # "{a}: {b}" and the like say nothing by themselves
        pattern = ".+?".join(re.escape(p).replace("\0", "{").replace("\1", "}") for p in pieces)
        found.append((re.compile(pattern, re.DOTALL), message))
    return found


def _english_pieces() -> list[str]:
    """The English of catalog messages that their Chinese does not keep: any of these in a
    Chinese output is a sentence left in English (a piece between placeholders, four words at
    least)."""
    catalog = i18n._translations("zh")._catalog  # type: ignore[attr-defined]
    pieces = set()
    for message, chinese in catalog.items():
        if not isinstance(message, str) or not message:
            continue
        for piece in re.split(r"\{[^{}]*\}", message):
            piece = piece.strip(" .,;:()'\"")
            if len(re.findall(r"[A-Za-z]{2,}", piece)) >= 4 and piece not in chinese:
                pieces.add(piece)
    return sorted(pieces)


@pytest.fixture(scope="module")
def chinese_runs() -> dict[str, tuple[str, list[str]]]:
    """Each command run in this process with --lang zh: its output and the plain texts that
    reached a view's sentence()."""
    from click.testing import CliRunner

    from suanli.cli.main import main

    runner = CliRunner()
    runs = {}
    env = {"COLUMNS": "400", "HF_HUB_OFFLINE": "1", "SUANLI_FAKE_GPUS": "problems"}
    try:
        for name, args in COMMANDS.items():
            i18n.FALLBACKS.clear()
            # (the exit status is not looked at: the output says what happened)
            with runner.isolation(env=env) as (_out, _err, output), contextlib.suppress(SystemExit):
                main(["--lang", "zh", *args])
            runs[name] = (output.getvalue().decode("utf-8"), list(i18n.FALLBACKS))
    finally:
        set_lang(None)
    return runs


def test_the_commands_ran(chinese_runs: dict[str, tuple[str, list[str]]]) -> None:
    for name, (output, _plain) in chinese_runs.items():
        assert CJK.search(output), (name, output[:400])
        assert "Traceback" not in output, (name, output)


@pytest.mark.parametrize("name", list(COMMANDS))
def test_no_formatted_sentence_reaches_a_view_as_plain_text(
    chinese_runs: dict[str, tuple[str, list[str]]], name: str
) -> None:
    """What a view translates has its message id; plain text is data (ids, formulas, sources)
    or a whole message id, never text written from a template that lost its values."""
    catalog = i18n._translations("zh")._catalog  # type: ignore[attr-defined]
    templates = _templates()
    lost = [
        (text, message)
        for text in chinese_runs[name][1]
        if text not in catalog
        for pattern, message in templates
        if pattern.fullmatch(text)
    ]
    assert not lost, lost


@pytest.mark.parametrize("name", list(COMMANDS))
def test_no_english_sentence_is_left(
    chinese_runs: dict[str, tuple[str, list[str]]], name: str
) -> None:
    output = " ".join(chinese_runs[name][0].split())
    left = [piece for piece in _english_pieces() if piece in output]
    assert not left, (left, output[:2000])
