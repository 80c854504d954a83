"""A static batch larger than the KV cache holds runs in waves (estimate/load.static_batch), in
the answer, its JSON and the CLI table."""

from __future__ import annotations

import json
import math

import pytest

from suanli.answers.perf import InferPerfAnswer, PerfRequest, perf
from suanli.answers.request import WorkRequest
from suanli.estimate.load import static_batch

from ..cli.test_cli import run


def _request_s(n: int) -> float:
    # Any increasing end-to-end time: a fixed prefill-and-weights part plus a per-sequence part.
    return 10.0 + 0.05 * n


def test_a_batch_the_cache_holds_runs_at_once() -> None:
    for held in (0, 64, 1000):
        run = static_batch(64, held, 100, _request_s)
        assert run.waves == 1 and run.held == 64
        assert run.tokens_per_s == pytest.approx(64 * 100 / _request_s(64))


def test_twice_what_the_cache_holds_takes_two_full_waves() -> None:
    run = static_batch(200, 100, 50, _request_s)
    assert run.waves == 2 and run.held == 100
    # Two waves of 100 move tokens at the rate of one wave of 100.
    assert run.tokens_per_s == pytest.approx(100 * 50 / _request_s(100))


def test_one_sequence_over_makes_a_last_wave_of_one() -> None:
    seen: list[int] = []

    def timed(n: int) -> float:
        seen.append(n)
        return _request_s(n)

    run = static_batch(101, 100, 50, timed)
    assert run.waves == 2 and sorted(seen) == [1, 100]
    assert run.tokens_per_s == pytest.approx(101 * 50 / (_request_s(100) + _request_s(1)))
    # The straggler wave costs almost a whole request: slower than a wave of 100 alone.
    assert run.tokens_per_s < 100 * 50 / _request_s(100)


def test_static_batch_rejects_nothing_to_run() -> None:
    with pytest.raises(ValueError):
        static_batch(0, 10, 10, _request_s)
    with pytest.raises(ValueError):
        static_batch(10, 10, 0, _request_s)


def _infer(batch: int, prompt: int = 128, output: int = 4096) -> InferPerfAnswer:
    answer = perf(
        PerfRequest(
            model="llama-3.1-8b",
            gpu="h100",
            work=WorkRequest(task="infer", batch=batch),
            prompt=prompt,
            output=output,
            ignore_fit=True,
        )
    )
    assert isinstance(answer, InferPerfAnswer)
    return answer


def test_the_answer_runs_an_oversized_batch_in_waves_of_the_largest_that_fits() -> None:
    big = _infer(batch=1000)
    held = big.largest_batch
    assert not big.fits and 0 < held < 1000
    assert big.batch_waves == math.ceil(1000 / held)
    full, rest = divmod(1000, held)
    # Each wave is the job at a batch that fits, timed on its own by the same estimate.
    wave = _infer(batch=held)
    assert wave.fits and wave.batch_waves == 1
    seconds = full * wave.request_s + (_infer(batch=rest).request_s if rest else 0.0)
    assert big.batch_tokens_per_s == pytest.approx(1000 * 4096 / seconds)
    # Not the hypothetical of all 1,000 at once, which the other fields still describe.
    assert big.batch_tokens_per_s != pytest.approx(1000 * 4096 / big.request_s)
    assert big.to_json()["batch_waves"] == big.batch_waves


def test_a_job_whose_weights_do_not_fit_has_no_waves() -> None:
    answer = perf(
        PerfRequest(
            model="llama-3.1-70b",
            gpu="rtx-4090-24gb",
            work=WorkRequest(task="infer", batch=8),
            prompt=512,
            output=128,
            ignore_fit=True,
        )
    )
    assert isinstance(answer, InferPerfAnswer)
    assert not answer.fits and answer.largest_batch == 0 and answer.batch_waves == 1
    assert answer.batch_tokens_per_s == pytest.approx(8 * 128 / answer.request_s)


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_table_says_how_many_waves(lang: str) -> None:
    args = ["perf", "llama-3.1-8b", "--task", "infer", "--gpu", "h100", "--batch", "1000"]
    args += ["--prompt", "128", "--output", "4096", "--ignore-fit", "--lang", lang]
    result = run(*args)
    assert result.returncode == 0, result.stderr
    doc = json.loads(run(*args, "--json").stdout)
    waves, held = str(doc["batch_waves"]), f"{doc['largest_batch']:,}"
    text = " ".join(result.stdout.split())
    assert waves in text and held in text
    assert ("waves" in text) if lang == "en" else ("轮" in text and "waves" not in text)
