"""Buy vs rent vs API for the same work: a token volume becomes GPU-hours at the GPUs' speed,
so every column prices the same tokens."""

from __future__ import annotations

import pytest

from suanli.answers.cost import CostRequest, cost

from ..cli.test_cli import run


def _assumption(answer, name):  # type: ignore[no-untyped-def]
    return next(a for a in answer.assumptions if a.name == name)


def test_the_gpus_are_costed_for_the_hours_the_tokens_take() -> None:
    tokens, speed, rent = 1e9, 1000.0, 2.0
    answer = cost(
        CostRequest("rtx-4090-24gb", gpus=1, years=2, tokens_per_year=tokens, api="llama-3.1-8b",
                    gpu_tokens_per_s=speed, rent=rent, price=1600)
    )  # fmt: skip
    hours = tokens / speed / 3600  # 277.8 GPU-hours a year
    assert answer.inputs.utilisation == pytest.approx(hours / 8760)
    assert answer.totals.rent_usd == pytest.approx(2 * hours * rent)
    assert answer.totals.busy_gpu_hours == pytest.approx(2 * hours)
    assert _assumption(answer, "utilisation").source.startswith("derived")
    assert _assumption(answer, "gpu_output_tokens_per_s").value == speed
    # At 3% busy, renting beats buying and the verdict says so, for the same volume as the API.
    assert "renting saves" in answer.verdict


def test_the_speed_is_estimated_for_the_api_model() -> None:
    answer = cost(
        CostRequest("rtx-4090-24gb", gpus=1, tokens_per_year=1e9, api="llama-3.1-8b", price=1600)
    )
    speed = _assumption(answer, "gpu_output_tokens_per_s")
    assert speed.source.startswith("estimated (suanli perf): llama-3.1-8b")
    # A 4090 serving an 8B model in bf16 to 16 requests: hundreds of tokens/s, not tens of
    # thousands (memory-bound decode: 16 GB of weights per step at ~1 TB/s, 16 tokens per step).
    assert 100 < float(speed.value) < 2000
    assert answer.inputs.utilisation == pytest.approx(1e9 / float(speed.value) / 3600 / 8760)


def test_a_volume_the_gpus_cannot_serve_names_the_gpus_needed() -> None:
    with pytest.raises(ValueError, match="give --gpus 32 or more"):
        cost(CostRequest("rtx-4090-24gb", gpus=1, tokens_per_year=1e12, gpu_tokens_per_s=1000,
                         price=1600))  # fmt: skip
    with pytest.raises(ValueError, match="needs the GPUs' speed"):
        cost(CostRequest("rtx-4090-24gb", gpus=1, tokens_per_year=1e9, price=1600))


def test_cli_takes_a_measured_speed() -> None:
    out = run("cost", "rtx-4090-24gb", "--gpus", "1", "--price", "1600", "--tokens-per-year",
              "1e9", "--api", "llama-3.1-8b", "--gpu-tokens-per-s", "500", "--json")  # fmt: skip
    assert out.returncode == 0, out.stderr
    out = run("cost", "rtx-4090-24gb", "--gpu-tokens-per-s", "0")
    assert out.returncode == 2 and "Traceback" not in out.stderr
