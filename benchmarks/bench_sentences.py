"""Time of one sentence in Chinese, written from its message id and values (issue 40), against
matching its finished English text back to a catalog template (what every view did before).

1. The sentences of real answers (``mem``, ``perf``, ``plan``, ``card``, ``cost`` and a refused
   request: every value of their JSON that carries a message id): the mean time per sentence of
   ``suanli.i18n.sentence(s, "zh")``, best of 5 rounds over all of them. With
   ``--reference SRC`` (the ``src`` folder of a checkout before issue 40, e.g. from
   ``git archive e214dd7 src | tar -x -C /tmp/ref``), the same English texts are also translated
   by that checkout's ``sentence()``, the matcher, in a subprocess.
2. The worst inputs we know for the old matcher (issue 39): 2,000-character runs of separators
   and of the catalog's literal pieces, shown as plain text (looked up whole) and inside a
   sentence as a value. Target: under 50 ms each.

Run: ``python benchmarks/bench_sentences.py [--reference /tmp/ref/src]``.
"""

from __future__ import annotations

import json
import string
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from typing import Any

LENGTH = 2000
ROUNDS = 5

#: Run in the reference checkout: the mean microseconds per text of its sentence(), best of 5.
REFERENCE = """
import json, sys, time
from suanli.i18n import sentence
texts = json.load(open(sys.argv[1], encoding="utf-8"))
sentence(texts[0], "zh")
best = float("inf")
for _ in range(5):
    start = time.perf_counter()
    for text in texts:
        sentence(text, "zh")
    best = min(best, (time.perf_counter() - start) / len(texts))
print(best * 1e6)
"""


def _sentences(doc: Any) -> Iterator[str]:
    """Every value of a JSON document that carries its message id."""
    from suanli.i18n import is_sentence

    if isinstance(doc, dict):
        for value in doc.values():
            yield from _sentences(value)
    elif isinstance(doc, (list, tuple)):
        for value in doc:
            yield from _sentences(value)
    elif isinstance(doc, str) and is_sentence(doc):
        yield doc


def answer_sentences() -> list[str]:
    """The sentences of a few real answers and of a refused request."""
    import suanli as api

    work = api.WorkRequest
    docs = [
        api.memory(api.MemoryRequest(model="llama-3.1-8b", work=work(task="lora"), gpu="4090")),
        api.perf(api.PerfRequest(model="llama-3.1-8b", work=work(task="full", tp=8), gpu="h100")),
        api.plan_gpus(api.PlanRequest(model="llama-3.1-70b", work=work(task="full"), max_gpus=8)),
        api.card(api.CardRequest(gpu="4090")),
        api.cost(api.CostRequest(gpu="h100", price=30000)),
    ]
    found = [s for answer in docs for s in _sentences(answer.to_json())]
    try:
        api.perf(api.PerfRequest(model="llama-3.1-70b", work=work(task="full"), gpu="4090"))
    except ValueError as exc:
        found.append(exc.args[0])
    return found


def per_sentence_us(translate: Callable[[str], str], texts: list[str]) -> float:
    """The best of ROUNDS mean times of ``translate`` over ``texts``, in microseconds."""
    best = float("inf")
    for _ in range(ROUNDS):
        start = time.perf_counter()
        for text in texts:
            translate(text)
        best = min(best, (time.perf_counter() - start) / len(texts))
    return best * 1e6


def reference_us(source: str, texts: list[str]) -> float:
    """The reference checkout's time per text (its ``sentence()``), in a subprocess."""
    with tempfile.NamedTemporaryFile("w", suffix=".json", encoding="utf-8") as f:
        json.dump(texts, f)
        f.flush()
        out = subprocess.run(
            [sys.executable, "-c", REFERENCE, f.name],
            env={"PYTHONPATH": source, "PATH": "/usr/bin:/bin"},
            capture_output=True,
            text=True,
            check=True,
        )
    return float(out.stdout.strip())


def adversarial_inputs() -> dict[str, str]:
    """Name -> a 2,000-character text built to make a backtracking matcher slow."""
    from suanli.i18n import _translations

    catalog = _translations("zh")._catalog  # type: ignore[attr-defined]
    pieces = [
        literal
        for message in catalog
        if isinstance(message, str) and "{" in message
        for literal, _name, _spec, _conv in string.Formatter().parse(message)
        if literal.strip()
    ]
    cases = {
        "semicolons": "a; " * 700,
        "colons": "x: " * 700,
        "spaces": "a " * 1000,
        "'of' and 'on'": "1 of 2 on " * 200,
        "every piece, spaced": " ".join(pieces),
        "every piece, joined by '; '": "; ".join(pieces),
        "every piece, joined by ': '": ": ".join(pieces),
    }
    return {name: text[:LENGTH] for name, text in cases.items()}


def time_ms(text: str, repeat: int = 3) -> float:
    """The fastest of ``repeat`` Chinese renderings of ``text``, as plain text and as the value
    of a sentence, in milliseconds."""
    from suanli.i18n import N_, sentence

    held = N_("{gpu} cannot run it: {why}").format(gpu="h100", why=text)
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        sentence(text, "zh")
        sentence(held, "zh")
        best = min(best, time.perf_counter() - start)
    return best * 1000


def main() -> None:
    """Print the time per sentence (and the reference's), then each adversarial input's."""
    from suanli.i18n import sentence

    texts = answer_sentences()
    sentence(texts[0], "zh")  # load the catalog once
    by_id = per_sentence_us(lambda s: sentence(s, "zh"), texts)
    print(f"{len(texts)} sentences of real answers")
    print(f"{by_id:8.1f} us per sentence, from its message id and values")
    if "--reference" in sys.argv:
        source = sys.argv[sys.argv.index("--reference") + 1]
        before = reference_us(source, [str(t) for t in texts])
        print(f"{before:8.1f} us per sentence, matched from its English text ({source})")
    worst = 0.0
    for name, text in adversarial_inputs().items():
        ms = time_ms(text)
        worst = max(worst, ms)
        print(f"{ms:8.3f} ms  {len(text):5d} chars  {name}")
    print(f"worst: {worst:.3f} ms (target 50 ms)")


if __name__ == "__main__":
    main()
