"""The error band on plan's and compare's rows (issue 41): each row carries the band perf gives
its layout, computed by :mod:`suanli.answers.bands` (the same ``speed_band`` and ``banded``),
or null and the sentence that its regime is unvalidated; the ranking stays by the estimate.

The shipped bands change when the corpus or the model does: these tests compare with the
functions called directly, or put bands of their own in place of the shipped ones."""

from __future__ import annotations

from typing import Any

import pytest

from suanli.answers import bands
from suanli.answers.bands import banded, speed_band, unvalidated
from suanli.answers.compare import CompareRequest, compare
from suanli.answers.plan import PlanAnswer, PlanRequest, plan
from suanli.answers.request import WorkRequest
from suanli.catalog import find_gpu, load_catalog

CATALOG = load_catalog(None)
#: A serving plan and a large pretraining plan (every row its own regime by GPU generation).
SERVE = PlanRequest(model="llama-3.1-8b", task="infer", rps=20, max_gpus=8)
TRAIN = PlanRequest(
    model="llama-3.1-70b",
    task="pretrain",
    gpus=("h100", "a100-sxm-80gb", "b200", "4090", "mi300x"),
    max_gpus=256,
    tokens=1e11,
)


def _expected(gpu_id: str, gpus: int, task: str) -> bands.Band | None:
    gpu = find_gpu(gpu_id, CATALOG)
    return speed_band(
        gpus=gpus,
        framework="hf",
        architecture=str(gpu.get("architecture") or ""),
        vendor=gpu.vendor,
        moe=False,
        task=task,
    )


def _values(layout: Any) -> dict[str, float | None]:
    return {k: getattr(layout, a) for k, a in bands.PLAN_FIGURES.items() if hasattr(layout, a)}


def _check_rows(answer: PlanAnswer) -> int:
    """Every row against speed_band + banded called directly; the rows with a band."""
    assert isinstance(answer, PlanAnswer)
    banded_rows = 0
    for row in answer.rows:
        lay = row.layout
        if lay is None:
            assert row.band is None and row.band_basis is None and row.unvalidated is None
            continue
        count = lay.tp if answer.inference else lay.gpus  # type: ignore[union-attr]
        band = _expected(row.gpu, count, answer.task)
        if band is None:
            assert row.band is None and row.band_basis is None
            assert row.unvalidated == unvalidated(count, answer.task, False)
            continue
        banded_rows += 1
        assert row.band == banded(_values(lay), band)
        assert row.band_basis == band.basis()
        assert row.unvalidated is None
    return banded_rows


@pytest.fixture
def made_up_bands(monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """Bands of this test's own in place of the shipped file: generations far apart, so that a
    ranking by the band would differ from the ranking by the estimate."""
    cell = {"rows": 7, "sources": 3}
    data: dict[str, Any] = {
        "date": "test",
        "coverage": 0.8,
        "cells": {
            "1 | dense | inference": {"low": 0.7, "high": 1.2, **cell},
            "65-1024 | HF/TRL/PEFT | Hopper | dense | pretrain": {
                "low": 0.2,
                "high": 0.3,
                **cell,
            },
            "65-1024 | dense | pretrain": {"low": 2.0, "high": 3.0, **cell},
            "9-64 | dense | pretrain": {"low": 2.0, "high": 3.0, **cell},
        },
    }
    monkeypatch.setattr(bands, "_bands", lambda: data)
    return data


def test_plan_rows_carry_their_regimes_band_as_perf_computes_it() -> None:
    """With the shipped bands: each row is what speed_band and banded give for its layout."""
    for req in (SERVE, TRAIN):
        answer = plan(req)
        assert isinstance(answer, PlanAnswer)
        _check_rows(answer)


def test_every_fitting_row_has_a_band_or_says_unvalidated(made_up_bands: dict[str, Any]) -> None:
    answer = plan(TRAIN)
    assert isinstance(answer, PlanAnswer)
    assert _check_rows(answer) >= 2  # a Hopper row (its own cell) and the others (coarse)
    winner = next(r for r in answer.rows if r.runnable)
    assert winner.band is not None and winner.layout is not None
    # the made-up coarse band (2-3x) brackets speeds above the estimate, durations below it
    low, high = winner.band["tokens_per_s"]
    assert winner.layout.tokens_per_s < low < high
    early, late = winner.band["time_to_train_s"]
    assert winner.layout.time_s is not None and early < late < winner.layout.time_s
    doc = answer.to_json()["rows"]
    assert all(("band" in r and "band_basis" in r) for r in doc)
    serve = plan(SERVE)
    assert isinstance(serve, PlanAnswer)
    assert _check_rows(serve) >= 1
    top = next(r for r in serve.rows if r.runnable)
    assert top.band is not None and set(top.band) >= {"tokens_per_s", "ttft_s", "tpot_s"}


def test_a_regime_without_a_band_gives_null_and_the_sentence(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(bands, "_bands", lambda: {"date": "x", "coverage": None, "cells": {}})
    answer = plan(SERVE)
    assert isinstance(answer, PlanAnswer)
    fitting = [r for r in answer.rows if r.layout is not None]
    assert fitting and all(r.band is None for r in answer.rows)
    assert all(r.unvalidated and "unvalidated" in r.unvalidated for r in fitting)
    doc = answer.to_json()["rows"]
    top = doc[0]
    assert top["band"] is None and top["band_basis"] is None and "unvalidated" in top["unvalidated"]
    assert all(r["unvalidated"] is None for r in doc if not r["fits"])


def test_plans_rank_by_the_estimate_not_the_band(
    made_up_bands: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Hopper's made-up band is ten times below the others': ranking by it would reorder."""
    with_bands = plan(TRAIN)
    monkeypatch.setattr(bands, "_bands", lambda: {"date": "x", "coverage": None, "cells": {}})
    without = plan(TRAIN)
    assert [r.gpu for r in with_bands.rows] == [r.gpu for r in without.rows]
    assert isinstance(with_bands, PlanAnswer)
    hopper = [r for r in with_bands.rows if r.band_basis and "Hopper" in r.band_basis["cell"]]
    assert hopper, "the made-up Hopper cell should band the H100 row"


def test_compare_rows_carry_the_band_and_a_cpu_has_none() -> None:
    answer = compare(
        CompareRequest(
            model="qwen2.5-0.5b",
            work=WorkRequest(task="infer"),
            devices=("h100", "rtx4090", "epyc-9654-cpu"),
            prompt=128,
            output=16,
        )
    )
    for row in answer.rows:
        if row.device == "epyc-9654-cpu":
            # no published row ran on a CPU: the coarse cell's GPU rows do not vouch for it
            assert row.band is None and row.unvalidated
            continue
        band = _expected(row.device, 1, "infer")
        values = {"tokens_per_s": row.tokens_per_s, "ttft_s": row.ttft_s, "tpot_s": row.tpot_s}
        assert row.band == (banded(values, band) if band else None)
        assert (row.unvalidated is None) == (band is not None)
    train = compare(
        CompareRequest(
            model="qwen2.5-0.5b", work=WorkRequest(task="full"), devices=("h100", "a100")
        )
    )
    for row in train.rows:
        band = _expected(row.device, 1, "full")
        values = {"tokens_per_s": row.tokens_per_s, "step_time_s": row.step_time_s}
        assert row.band == (banded(values, band) if band else None)
