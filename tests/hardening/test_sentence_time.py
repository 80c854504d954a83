"""Translating a sentence into Chinese takes time linear in its length (issue 39): the worst
inputs benchmarks/bench_sentences.py knows stay far from the seconds a backtracking matcher took.

The bound here is ten times the benchmark's 50 ms target, so a loaded CI machine does not fail
it while an exponential matcher (25 s for 631 characters) still does; the benchmark reports the
measured times (docs/security.md).
"""

from __future__ import annotations

import pytest

from suanli.i18n import sentence
from suanli.i18n.matcher import MAX_SENTENCE_CHARS
from tests.scripts import load_script

BENCH = load_script("benchmarks/bench_sentences.py")
BOUND_MS = 500.0


@pytest.mark.parametrize("name", list(BENCH.adversarial_inputs()))
def test_the_worst_inputs_translate_in_bounded_time(name: str) -> None:
    text = BENCH.adversarial_inputs()[name]
    assert len(text) == BENCH.LENGTH
    assert BENCH.time_ms(text, repeat=1) < BOUND_MS


def test_text_past_the_cap_is_shown_as_written() -> None:
    long = "does not fit; " * (MAX_SENTENCE_CHARS // 10)
    assert sentence(long, "zh") == long
    assert sentence("does not fit", "zh") != "does not fit"
