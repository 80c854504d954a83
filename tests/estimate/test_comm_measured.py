"""The model's all-reduce time against measured NCCL curves.

Fixture ``tests/fixtures/collectives-vidur.csv``: a subset of the collective times the Vidur
project measured (microsoft/vidur commit 7d47513, data/profiling/network/<cluster>/all_reduce.csv,
MIT licence; written by docs/research/derive_collective_fits.py): every point of 2-64 KiB and
the sizes nearest 48, 56, 64 (and for the A100 pairs 128, 256, 512) MiB, fp16, median kernel
time on rank 0. Clusters: ``a100_dgx``/``h100_dgx`` (8 GPUs on NVSwitch), ``*_pairwise_nvlink``
(4 GPUs, NVLink bridges between pairs, PCIe between the pairs).

Tolerance: 35% of each measured time for bandwidth-bound messages (48 MiB and more), and of the
median time of the 1-64 KiB window for latency-bound ones (single small points are bimodal, 7 us
and 40 us at the same size). A small all-reduce costs ``base + 2·log2(n)·alpha`` in the model;
both are fitted per link on the 1-64 KiB medians of 2, 4 and 8 GPUs (and nccl-tests' 8-GPU
1 KiB times), least squares in log space (docs/research/derive_collective_fits.py). Two groups
stay outside the tolerance and are asserted as known misses, so a change is noticed: A100 on
NVSwitch with 4 GPUs measures 20.5 us, below its own 2-GPU floor of 46 us, which no model that
grows with n can meet together (over-predicted), and 4 A100 PCIe cards whose ring crosses PCIe
measure a 59 us floor (the PCIe link carries no base latency: under-predicted).
"""

from __future__ import annotations

import csv
import statistics
from collections import defaultdict
from pathlib import Path

import pytest

from suanli.catalog import bundled_gpus, find_gpu
from suanli.catalog.network import collective_fits, get_link
from suanli.estimate.comm import Link, all_reduce_s
from suanli.estimate.links import intra_node_link, link_of

FIXTURE = Path(__file__).parent.parent / "fixtures" / "collectives-vidur.csv"
TOLERANCE = 0.35
SMALL = 64 * 1024
LARGE = 48 * 2**20


def _points() -> dict[tuple[str, int], list[tuple[int, float]]]:
    out: dict[tuple[str, int], list[tuple[int, float]]] = defaultdict(list)
    with FIXTURE.open() as f:
        for row in csv.DictReader(f):
            assert row["collective"] == "all_reduce"
            assert row["num_workers"] == row["devices_per_node"]  # one node
            key = (row["cluster"], int(row["num_workers"]))
            out[key].append((int(row["size_bytes"]), float(row["seconds"])))
    return dict(out)


POINTS = _points()
GPUS = bundled_gpus()


def _link(cluster: str, n: int) -> Link:
    """The link the model uses for this measured group."""
    if cluster == "a100_dgx":
        return intra_node_link(find_gpu("a100-sxm-80gb", GPUS))
    if cluster == "h100_dgx":
        return intra_node_link(find_gpu("h100-sxm-80gb", GPUS))
    if n == 2:  # a bridged pair
        return link_of(get_link(f"nvlink-bridge-{cluster[:4]}"))
    # 4 PCIe cards: the ring crosses PCIe between the pairs (A100 PCIe Gen4, H100 NVL Gen5)
    return intra_node_link(find_gpu(f"{cluster[:4]}-pcie-80gb", GPUS))


#: Groups whose 1-64 KiB median the model meets within the tolerance.
SMALL_WITHIN = [
    ("a100_dgx", 2),
    ("a100_dgx", 8),
    ("h100_dgx", 2),
    ("h100_dgx", 4),
    ("h100_dgx", 8),
    ("a100_pairwise_nvlink", 2),
    ("h100_pairwise_nvlink", 2),
    ("h100_pairwise_nvlink", 4),
]
#: Groups the fitted base latency leaves outside the tolerance: +1 over-predicted, -1 under.
SMALL_KNOWN_MISS = {
    ("a100_dgx", 4): +1,  # 20.5 us measured, below the 2-GPU floor of 46 us (model +66%)
    ("a100_pairwise_nvlink", 4): -1,  # a 59 us floor over PCIe, no base latency there (-62%)
}


def test_fixture_covers_every_modelled_group() -> None:
    assert sorted(POINTS) == sorted(SMALL_WITHIN + list(SMALL_KNOWN_MISS))
    for key, points in POINTS.items():
        assert sum(s <= SMALL for s, _ in points) >= 7, key
        assert sum(s >= LARGE for s, _ in points) >= 3, key


@pytest.mark.parametrize(
    ("cluster", "n"), sorted(POINTS), ids=[f"{c}-{n}" for c, n in sorted(POINTS)]
)
def test_large_messages_within_tolerance_of_each_point(cluster: str, n: int) -> None:
    link = _link(cluster, n)
    for size, measured in POINTS[(cluster, n)]:
        if size >= LARGE:
            predicted = all_reduce_s(size, n, link)
            assert predicted == pytest.approx(measured, rel=TOLERANCE), (cluster, n, size)


def _small_medians(cluster: str, n: int) -> tuple[float, float]:
    link = _link(cluster, n)
    small = [(s, t) for s, t in POINTS[(cluster, n)] if s <= SMALL]
    measured = statistics.median(t for _, t in small)
    predicted = statistics.median(all_reduce_s(s, n, link) for s, _ in small)
    return predicted, measured


@pytest.mark.parametrize(("cluster", "n"), SMALL_WITHIN, ids=[f"{c}-{n}" for c, n in SMALL_WITHIN])
def test_small_messages_within_tolerance(cluster: str, n: int) -> None:
    predicted, measured = _small_medians(cluster, n)
    assert predicted == pytest.approx(measured, rel=TOLERANCE)


@pytest.mark.parametrize(
    ("cluster", "n"),
    sorted(SMALL_KNOWN_MISS),
    ids=[f"{c}-{n}" for c, n in sorted(SMALL_KNOWN_MISS)],
)
def test_known_miss_small_messages_of_small_groups(cluster: str, n: int) -> None:
    """Documented misses (docs/research/collective-calibration.md): the A100 4-GPU floor is
    below the 2-GPU one, and the 4 A100 PCIe cards' floor is not in the PCIe link."""
    predicted, measured = _small_medians(cluster, n)
    if SMALL_KNOWN_MISS[(cluster, n)] > 0:
        assert predicted > (1 + TOLERANCE) * measured
    else:
        assert predicted < (1 - TOLERANCE) * measured


def test_a100_small_floors_cannot_both_be_met() -> None:
    """Why one A100 NVSwitch group must miss: within 35% needs >= 0.65 x 46 us at 2 GPUs and
    <= 1.35 x 20.5 us at 4 GPUs, but the model's small all-reduce grows with n."""
    two = _small_medians("a100_dgx", 2)[1]
    four = _small_medians("a100_dgx", 4)[1]
    assert (1 - TOLERANCE) * two > (1 + TOLERANCE) * four
    link = _link("a100_dgx", 2)
    assert all_reduce_s(1024, 4, link) >= all_reduce_s(1024, 2, link)


def test_base_latency_is_fitted_where_measured() -> None:
    """Links with measured 2/4/8-GPU small messages carry a sourced base latency; the per-step
    latency was re-fitted with it and stays positive."""
    for lid in ("nvlink3", "nvlink4", "nvlink-bridge-a100", "nvlink-bridge-h100"):
        spec = get_link(lid)
        assert 1e-6 <= spec.base_latency_s <= 60e-6, lid
        assert spec.latency_s > 0 and spec.base_latency_source and spec.base_latency_date, lid
        assert "microsoft/vidur 7d47513" in spec.base_latency_source, lid


def test_small_all_reduce_on_nvswitch_is_tens_of_microseconds() -> None:
    """8 GPUs, 1 KiB: nccl-tests on Azure ND H100 v5 25.6 us, ND H200 v5 29.9 us, ND A100 v4
    44.8 us (Azure/AI-benchmarking-guide, busbw 0.07/0.06/0.04 GB/s at 1 KiB)."""
    h100 = all_reduce_s(1024, 8, _link("h100_dgx", 8))
    a100 = all_reduce_s(1024, 8, _link("a100_dgx", 8))
    assert 25.6e-6 * 0.85 <= h100 <= 29.9e-6 * 1.15
    assert a100 == pytest.approx(44.8e-6, rel=0.25)


def test_collective_fit_table_is_sourced_and_matches_the_links() -> None:
    fits = collective_fits()
    assert len(fits) >= 20
    for fit in fits:
        assert "microsoft/vidur 7d47513" in fit.source and fit.date, fit
        assert fit.bus_bytes_per_s > 0 and fit.latency_s >= 0
    modelled = {(f.cluster, f.num_workers): f for f in fits if f.link}
    assert sorted(modelled) == sorted(POINTS)
    for (cluster, n), fit in modelled.items():
        link = _link(cluster, n)
        assert get_link(fit.link).latency_s == link.latency_s
        assert get_link(fit.link).base_latency_s == link.base_latency_s
        # the recorded model errors are those of the current links
        predicted, measured = _small_medians(cluster, n)
        assert fit.model_small_rel_error == pytest.approx(predicted / measured - 1, abs=0.02)
