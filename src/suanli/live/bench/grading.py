"""Grading: each measured figure against the catalog datasheet and the achievable ceiling
(:func:`suanli.catalog.network.ceiling_for`), with the likely cause of a shortfall."""

from __future__ import annotations

from typing import Any

from suanli.i18n import N_, join
from suanli.live.bench.device import MiB
from suanli.live.bench.profile import (
    AllReduceResult,
    BandwidthResult,
    Grade,
    Health,
    MatmulResult,
)

#: Grade thresholds, as a share of the achievable ceiling.
PASS_AT = 0.90
WARN_AT = 0.75

#: Pinned host<->device copies reach about this share of the PCIe line rate: 0.88 (stas00,
#: 55.43 GB/s host-to-device on H200, Gen5) and 0.83 (Azure nvbandwidth, 26.3 GB/s on A100,
#: Gen4); see the pcie4-x16 and pcie5-x16 notes in catalog/data/interconnect.toml.
HOST_COPY_FRACTION = 0.85
HOST_COPY_SOURCE = N_(
    "pinned copies reach 0.83-0.88 of the PCIe line rate (Azure nvbandwidth A100 Gen4; "
    "stas00 H200 Gen5); catalog/data/interconnect.toml"
)


# --------------------------------------------------------------------------- grading


def busbw(algbw_bytes_per_s: float, ranks: int) -> float:
    """All-reduce bus bandwidth, nccl-tests convention: ``algbw · 2(n-1)/n``."""
    if ranks < 1:
        raise ValueError(N_("ranks must be at least 1"))
    return algbw_bytes_per_s * 2 * (ranks - 1) / ranks


def _causes(kind: str, health: Health) -> list[str]:
    """Specific causes NVML can show for ``kind``, most telling first."""
    causes = []
    if kind in ("matmul", "memory") and health.throttle_reasons:
        causes.append(
            N_("throttling ({reasons})").format(reasons=", ".join(health.throttle_reasons))
        )
    if kind in ("matmul", "memory", "allreduce") and health.other_processes:
        causes.append(
            N_("busy GPU: {count} other process(es) on it").format(count=health.other_processes)
        )
    if (
        kind == "matmul"
        and health.sm_clock_mhz
        and health.max_sm_clock_mhz
        and health.sm_clock_mhz < 0.85 * health.max_sm_clock_mhz
    ):
        causes.append(
            N_("throttling: SM clock {clock} of {max_clock} MHz").format(
                clock=health.sm_clock_mhz, max_clock=health.max_sm_clock_mhz
            )
        )
    if kind == "host" and health.pcie_gen and health.max_pcie_gen and health.pcie_width:
        slow_gen = health.pcie_gen < health.max_pcie_gen
        narrow = bool(health.max_pcie_width and health.pcie_width < health.max_pcie_width)
        if slow_gen or narrow:
            causes.append(
                N_(
                    "slow link: PCIe Gen{gen} x{width} (the GPU supports Gen{max_gen} x{max_width})"
                ).format(
                    gen=health.pcie_gen,
                    width=health.pcie_width,
                    max_gen=health.max_pcie_gen,
                    max_width=health.max_pcie_width,
                )
            )
    return causes


#: The usual suspects when NVML shows nothing specific.
GENERIC_CAUSE = {
    "matmul": N_(
        "throttling (power or thermal cap), a busy GPU, or an old cuBLAS/driver; "
        "check 'nvidia-smi -q -d PERFORMANCE' and other processes in 'nvidia-smi'"
    ),
    "memory": N_(
        "a busy GPU, reduced memory clocks or throttling; "
        "check 'nvidia-smi -q -d CLOCK,PERFORMANCE'"
    ),
    "host": N_(
        "slow link: PCIe trained below its generation or width, the process on the far "
        "NUMA node, or virtualisation/IOMMU overhead; check 'nvidia-smi -q' (GPU Link Info) and "
        "'nvidia-smi topo -m'"
    ),
    "allreduce": N_(
        "slow link: NCCL not using NVLink/P2P (check 'nvidia-smi topo -m', "
        "NCCL_P2P_DISABLE, NCCL_DEBUG=INFO) or another job sharing the links"
    ),
}


def grade_figure(
    measured: float,
    datasheet: float | None,
    ceiling_fraction: float | None,
    kind: str,
    *,
    health: Health | None = None,
    ceiling_source: str = "",
    no_datasheet: str = N_("no datasheet figure to compare with"),
    small_problem: bool = False,
) -> Grade:
    """Grade ``measured`` against ``datasheet`` x ``ceiling_fraction``.

    ``kind`` (matmul, memory, host, allreduce) picks the likely causes of a shortfall;
    ``small_problem`` adds that quick-mode problems may be too small to reach the ceiling.
    """
    if not datasheet or datasheet <= 0:
        return Grade("info", cause=no_datasheet)
    fraction = ceiling_fraction if ceiling_fraction and ceiling_fraction > 0 else 1.0
    ceiling = datasheet * fraction
    of_ceiling = measured / ceiling
    of_datasheet = measured / datasheet
    if of_ceiling >= PASS_AT:
        grade, cause = "pass", ""
        if of_datasheet > 1.05:
            cause = N_("above the datasheet: boost clocks above the rated ones")
    else:
        grade = "warn" if of_ceiling >= WARN_AT else "fail"
        causes = _causes(kind, health or Health()) or [GENERIC_CAUSE.get(kind, N_("unknown"))]
        if small_problem:
            causes.append(
                N_(
                    "problems may be too small to reach the ceiling (use a full run, and "
                    "all-reduce messages of 256 MiB or more)"
                )
            )
        cause = join(causes, N_("; "))
    return Grade(
        grade=grade,
        datasheet=datasheet,
        ceiling=ceiling,
        percent_of_datasheet=100 * of_datasheet,
        percent_of_ceiling=100 * of_ceiling,
        cause=cause,
        ceiling_source=ceiling_source,
    )


# --------------------------------------------------------------------------- grading a run


def grade_matmul(r: MatmulResult, gpu: Any, health: Health, quick: bool, why: str) -> Grade:
    """The grade of a dtype's best matmul FLOP/s against the catalog peak of ``gpu``
    (``info`` with ``why`` when there is no catalog GPU)."""
    if not r.best_flops_per_s:
        return Grade(
            "info",
            cause=N_("not measured: {why}").format(
                why=join(r.skipped, N_("; ")) or N_("no shape ran")
            ),
        )
    if gpu is None:
        return Grade("info", cause=why)
    from suanli.catalog.network import ceiling_for

    peak = gpu.peak_flops(r.precision)
    if not peak:
        return Grade(
            "info",
            cause=N_("{gpu} has no {precision} peak in the catalog").format(
                gpu=gpu.id, precision=r.precision
            ),
        )
    ceiling = ceiling_for(gpu, r.precision)
    return grade_figure(
        r.best_flops_per_s,
        peak,
        ceiling.matmul_fraction,
        "matmul",
        health=health,
        ceiling_source=ceiling.source,
        small_problem=quick,
    )


def grade_memory(r: BandwidthResult, gpu: Any, health: Health, why: str) -> Grade:
    """The grade of the device memory bandwidth against the catalog bandwidth of ``gpu``."""
    if gpu is None or r.bytes_per_s is None:
        return Grade("info", cause=why)
    from suanli.catalog.network import ceiling_for

    ceiling = ceiling_for(gpu, "bf16" if gpu.peak_flops("bf16") else "fp32")
    return grade_figure(
        r.bytes_per_s,
        gpu.memory_bandwidth_bytes_per_s,
        ceiling.memory_fraction,
        "memory",
        health=health,
        ceiling_source=ceiling.source,
    )


def grade_host(r: BandwidthResult, gpu: Any, health: Health, why: str) -> Grade:
    """The grade of a host<->device copy against the PCIe line rate of ``gpu`` (pinned copies
    only; pageable ones are ``info``)."""
    if r.bytes_per_s is None:
        return Grade("info", cause=r.note)
    if gpu is None:
        return Grade("info", cause=why)
    if "pageable" in r.name:
        return Grade(
            "info",
            cause=N_(
                "pageable copies are staged through a pinned buffer; pinned is the one graded"
            ),
        )
    gen = int(gpu.get("pcie_gen") or 4)
    lanes = int(gpu.get("pcie_lanes") or 16)
    from suanli.catalog.network import get_link

    try:
        link = get_link(f"pcie{min(max(gen, 3), 6)}-x16")
    except ValueError:
        return Grade("info", cause=N_("no PCIe Gen{gen} link in the catalog").format(gen=gen))
    line_rate = link.unidirectional_bytes_per_s * lanes / 16
    return grade_figure(
        r.bytes_per_s,
        line_rate,
        HOST_COPY_FRACTION,
        "host",
        health=health,
        ceiling_source=f"{link.name} x{lanes}: {HOST_COPY_SOURCE}",
    )


def grade_allreduce(r: AllReduceResult, gpu: Any, health: Health, quick: bool, why: str) -> Grade:
    """The grade of the best all-reduce bus bandwidth against the intra-node link of ``gpu``."""
    if r.best_busbw_bytes_per_s is None:
        return Grade("info", cause=r.note)
    if gpu is None:
        return Grade("info", cause=why)
    from suanli.estimate.links import intra_node_link

    link = intra_node_link(gpu)
    small = quick or max(s.bytes for s in r.sizes) < 256 * MiB
    return grade_figure(
        r.best_busbw_bytes_per_s,
        link.bandwidth_bytes_per_s,
        link.efficiency,
        "allreduce",
        health=health,
        ceiling_source=N_("{link}: bus efficiency from catalog/data/interconnect.toml").format(
            link=link.name
        ),
        small_problem=small,
    )
