"""Time Chinese sentence translation (``suanli.i18n.sentence``) on the worst inputs we know.

The matcher once compiled each catalog template into a regular expression of lazy groups, and a
crafted text of a few hundred characters took seconds to tens of seconds (issue 39). This prints
the time of each adversarial 2,000-character input: runs of the separators the translator splits
on, runs of every template's literal pieces, and the pieces of the most specific templates
joined. Target: under 50 ms each. Run: ``python benchmarks/bench_sentences.py``.
"""

from __future__ import annotations

import time

LENGTH = 2000


def adversarial_inputs() -> dict[str, str]:
    """Name -> a 2,000-character text built to make a backtracking matcher slow."""
    from suanli.i18n import _templates

    templates = _templates("zh")
    pieces = [p for t in templates for p in t.pieces if p.strip()]
    cases = {
        "semicolons": "a; " * 700,
        "colons": "x: " * 700,
        "spaces": "a " * 1000,
        "'of' and 'on'": "1 of 2 on " * 200,
        "every piece, spaced": " ".join(pieces),
        "every piece, joined by '; '": "; ".join(pieces),
        "every piece, joined by ': '": ": ".join(pieces),
    }
    for template in templates[:20]:  # the most specific: long literal text, many holes
        cases[f"pieces of {template.pieces[0][:20]!r}..."] = "x".join(template.pieces) * 40
    return {name: text[:LENGTH] for name, text in cases.items()}


def time_ms(text: str, repeat: int = 3) -> float:
    """The fastest of ``repeat`` translations of ``text`` into Chinese, in milliseconds."""
    from suanli.i18n import sentence

    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        sentence(text, "zh")
        best = min(best, time.perf_counter() - start)
    return best * 1000


def main() -> None:
    """Print each input's time and the worst."""
    from suanli.i18n import sentence

    sentence("warm-up", "zh")  # load the catalog once
    worst = 0.0
    for name, text in adversarial_inputs().items():
        ms = time_ms(text)
        worst = max(worst, ms)
        print(f"{ms:8.2f} ms  {len(text):5d} chars  {name}")
    print(f"worst: {worst:.2f} ms (target 50 ms)")


if __name__ == "__main__":
    main()
