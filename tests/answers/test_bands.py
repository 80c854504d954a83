"""The error band on speed answers (issue 41): what it is computed from and how it is shown."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

from suanli.answers.bands import (
    Band,
    banded,
    cells,
    family,
    quantile,
    speed_band,
)

ROOT = Path(__file__).resolve().parents[2]


def test_the_shipped_bands_are_those_of_todays_model_and_corpus() -> None:
    """A change to the model or the corpus must regenerate the bands (speed_bands.py)."""
    out = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "speed_bands.py"), "--check"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=False,
    )
    assert out.returncode == 0, out.stdout + out.stderr


def test_coverage_is_in_the_issues_target() -> None:
    data = json.loads((ROOT / "src/suanli/catalog/data/speed_bands.json").read_text("utf-8"))
    assert 0.70 <= data["coverage"] <= 0.90
    for entry in data["cells"].values():
        assert entry["rows"] >= 5 and entry["sources"] >= 2
        assert 0 < entry["low"] <= entry["high"]


@pytest.mark.parametrize("q", [0.0, 0.1, 0.37, 0.9, 1.0])
def test_quantile_is_linear_between_order_statistics(q: float) -> None:
    values = [3.0, 1.0, 4.0, 1.5, 9.0, 2.6]
    ordered = sorted(values)
    position = q * (len(values) - 1)
    low, frac = int(position), position - int(position)
    upper = ordered[min(low + 1, len(values) - 1)]
    assert quantile(values, q) == pytest.approx(ordered[low] + frac * (upper - ordered[low]))


def test_speeds_scale_and_durations_divide() -> None:
    band = Band(low=0.8, high=1.1, cell=("1",), rows=5, sources=2, coverage=0.8, date="x")
    out = banded({"tokens_per_s": 100.0, "step_time_s": 2.0, "cost_usd": None}, band)
    assert out["tokens_per_s"] == pytest.approx([80.0, 110.0])
    # a run 10% faster than estimated takes 1/1.1 of the time
    assert out["step_time_s"] == pytest.approx([2.0 / 1.1, 2.0 / 0.8])
    assert "cost_usd" not in out


def test_a_thin_cell_falls_back_to_its_coarser_cell_then_to_none() -> None:
    single = dict(framework="hf", architecture="Hopper", vendor="nvidia", moe=False)
    fine, coarse = cells(gpus=1, task="infer", stack=family("hf"), architecture="Hopper",
                         vendor="nvidia", moe=False)  # fmt: skip
    assert coarse == ("1", "dense", "inference") and fine[:1] == ("1",)
    band = speed_band(gpus=1, task="infer", **single)
    assert band is not None and band.cell in (fine, coarse) and band.rows >= 5
    assert speed_band(gpus=20000, task="infer", moe=True, framework="hf",
                      architecture="Volta", vendor="nvidia") is None  # fmt: skip


def test_every_catalog_framework_has_a_family() -> None:
    """frameworks.toml gives each framework its family: a new preset is a data row only."""
    from suanli.catalog.frameworks import frameworks

    assert all(family(fw.id) != "other" for fw in frameworks())
    assert family("nemo") == family("megatron") == "Megatron/NeMo"  # an alias
    assert family("no-such-stack") == "other"


def test_perf_answers_carry_the_band_or_say_unvalidated() -> None:
    from suanli.answers.perf import PerfRequest, perf
    from suanli.answers.request import WorkRequest

    infer = perf(PerfRequest(model="llama-3.1-8b", work=WorkRequest(task="infer"), gpu="h100"))
    assert infer.band is not None and infer.band_basis is not None
    band = speed_band(gpus=1, framework="hf", architecture="Hopper", vendor="nvidia",
                      moe=False, task="infer")  # fmt: skip
    assert band is not None and infer.band_basis["cell"] == list(band.cell)
    assert infer.band["tokens_per_s"] == pytest.approx(
        [infer.tokens_per_s * band.low, infer.tokens_per_s * band.high]
    )
    assert infer.band["tpot_s"][0] < infer.band["tpot_s"][1]
    doc = infer.to_json()
    assert set(doc["band"]) == {"tokens_per_s", "ttft_s", "tpot_s"}
    assert doc["band_basis"]["rows"] >= 5 and math.isfinite(doc["band_basis"]["coverage"])
    lora = perf(PerfRequest(model="llama-3.1-8b", work=WorkRequest(task="lora"), gpu="4090"))
    assert lora.band is None and lora.to_json()["band"] is None
    assert any("unvalidated" in line for line in lora.assumptions)
