"""Matmul ceilings of GPUs without their own measurement: the class default of efficiency.toml,
per precision where the class measured one (fp8, tf32 and fp32 reach other shares of their
peaks than 16-bit GEMMs: fp32 SIMT GEMMs on GeForce cards reach about two thirds)."""

from __future__ import annotations

import pytest

from suanli.catalog import bundled_gpus, find_gpu
from suanli.catalog.network import _default_class, ceiling_for
from suanli.catalog.toml_data import read_data

DEFAULTS = {str(r["id"]): r for r in read_data("efficiency.toml")["default"]}
MEASURED = {
    (str(r["gpu_id"]), str(r["precision"])) for r in read_data("efficiency.toml")["ceiling"]
}


@pytest.mark.parametrize(
    ("gpu", "precision", "fraction"),
    [
        # The GeForce class: 16-bit capped at the rated boost (1.0), fp32 the median of five
        # measured cards (0.657).
        ("rtx-4080-super-16gb", "bf16", 1.0),
        ("rtx-4080-super-16gb", "fp32", 0.657),
        # The SXM class: fp8 is the median of H100, H200 and B200 (0.734), not the 16-bit 0.801.
        ("h800-sxm-80gb", "fp8", 0.734),
        ("h800-sxm-80gb", "bf16", 0.801),
        ("mi325x-256gb", "fp8", 0.468),
        ("rx-7800-xt-16gb", "fp32", 0.41),
        # CPUs have their own class (until 2026-12 they borrowed a GPU class's fractions).
        ("xeon-8480plus-cpu", "fp32", 0.837),
        ("xeon-8480plus-cpu", "bf16", 0.27),
        ("epyc-9654-cpu", "fp32", 0.837),
    ],
)
def test_a_class_default_is_per_precision(gpu: str, precision: str, fraction: float) -> None:
    card = find_gpu(gpu, bundled_gpus())
    assert (card.id, precision) not in MEASURED
    ceiling = ceiling_for(card, precision)
    assert ceiling.matmul_fraction == pytest.approx(fraction)
    assert "class default" in ceiling.source


def test_every_cpu_takes_the_cpu_class() -> None:
    cpus = [g for g in bundled_gpus() if g.form_factor == "cpu"]
    assert len(cpus) >= 9
    assert {_default_class(g) for g in cpus} == {"cpu"}
    assert ceiling_for(find_gpu("grace", bundled_gpus()), "fp32").memory_fraction == 0.389


def test_a_measured_row_wins_over_the_class() -> None:
    h100 = find_gpu("h100", bundled_gpus())
    assert ("h100-sxm-80gb", "fp8") in MEASURED
    assert ceiling_for(h100, "fp8").source.startswith("measured")


def test_applies_to_lists_only_cards_of_that_class() -> None:
    """The class a GPU takes is computed from its vendor, form factor and architecture; each
    class's ``applies_to`` (the cards its medians come from) must agree with that rule."""
    gpus = {g.id: g for g in bundled_gpus()}
    for cls, row in DEFAULTS.items():
        for gid in row.get("applies_to", []):
            assert gid in gpus, (cls, gid)
            assert _default_class(gpus[gid]) == cls, (cls, gid)
