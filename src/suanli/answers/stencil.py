"""How long, and on what, does a stencil simulation run? Memory and time of an FDTD (Yee) or
other grid code on one GPU or on every catalog GPU (``suanli stencil``).

The estimate is :func:`suanli.estimate.stencil.stencil_estimate` (docs/stencil.md): a roofline
on the non-tensor peak and the memory bandwidth, plus the halo exchange between GPUs.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from suanli.answers.base import FLATTEN_OPTIONAL, OMIT_NONE, Answer, from_result
from suanli.catalog import GPU, find_gpu, load_catalog
from suanli.estimate.device import device_for
from suanli.estimate.perf import Device
from suanli.estimate.stencil import (
    StencilWork,
    bytes_per_cell,
    gpus_needed,
    largest_cubic_grid,
    stencil_estimate,
)
from suanli.i18n import N_
from suanli.limits import MAX_GRID_CELLS


@dataclass(frozen=True)
class StencilRequest:
    """The simulation (grid, steps, what a cell stores) and where it runs."""

    grid: tuple[int, int, int] = (512, 512, 512)
    """Grid cells along x, y, z."""
    steps: int = 10_000
    """Time steps."""
    dtype: str = "fp32"
    """Precision of the field arrays: fp16, fp32 or fp64."""
    fields: int = 6
    """Field components (6 for 3-D Maxwell E and H)."""
    coefficients: int = 12
    """Material coefficient arrays stored per cell."""
    gpu: str | None = None
    """One GPU; without it every catalog GPU is ranked by time."""
    gpus: int = 1
    """GPUs in the domain decomposition (slabs along x)."""
    overlap_halo: bool = False
    """Overlap the halo exchange with compute."""
    catalog_file: str | None = None
    """Extra or overriding GPU entries (TOML)."""


@dataclass(frozen=True, kw_only=True)
class StencilMemory:
    """Memory on the busiest GPU and whether it fits."""

    per_gpu_bytes: float
    breakdown_bytes: dict[str, float]
    """fields, coefficients, halos, extra, reserved."""
    gpu_memory_bytes: float
    fits: bool
    bytes_per_cell: float
    """Resident bytes per owned cell."""


@dataclass(frozen=True, kw_only=True)
class StencilTime:
    """Time per step and in total."""

    step_s: float
    total_s: float
    breakdown_s: dict[str, float]
    """compute, memory, halo (per step) and exposed_halo."""


@dataclass(frozen=True, kw_only=True)
class StencilThroughput:
    """Cell updates per second and the traffic behind them."""

    cells_per_s: float
    mcells_per_s: float
    """Million cell updates per second (the unit FDTD papers report)."""
    bytes_per_cell_step: float
    flops_per_cell_step: float
    arithmetic_intensity_flop_per_byte: float
    halo_bytes_per_step: float


@dataclass(frozen=True, kw_only=True)
class StencilFit:
    """How big a grid fits, and how many GPUs the grid asked about needs."""

    largest_cubic_grid: int
    """The largest n such that an n^3 grid fits the GPUs given; 0 if none does."""
    gpus_needed: int | None
    """The fewest GPUs that hold the grid in slabs; None if one layer per GPU does not fit."""


@dataclass(frozen=True, kw_only=True)
class StencilReport:
    """The simulation on one kind of GPU: memory, time, throughput, the bound and the fit."""

    gpu: str
    """Catalog id."""
    device: str
    """The device model's name."""
    work: StencilWork
    """Every input of the estimate, defaults included."""
    cells: int
    cells_per_gpu: int
    """Cells the busiest GPU updates per step."""
    memory: StencilMemory
    time: StencilTime
    throughput: StencilThroughput
    bound: str
    """memory, compute or communication: the largest of the three per step."""
    fit: StencilFit
    assumptions: tuple[str, ...]


@dataclass(frozen=True, kw_only=True)
class StencilAnswer(Answer):
    """The simulation on the GPU asked about (its report at the top level) or on every catalog
    GPU (``rows``), those that fit first, then fastest first."""

    schema_name = "stencil"

    report: StencilReport | None = field(default=None, metadata=FLATTEN_OPTIONAL)
    """The one GPU asked about (``gpu`` in the request)."""
    rows: tuple[StencilReport, ...] | None = field(default=None, metadata=OMIT_NONE)
    """Every GPU that could run it, ranked (no ``gpu`` in the request)."""

    @property
    def reports(self) -> tuple[StencilReport, ...]:
        """The reports, ranked, whichever form the answer has."""
        return (self.report,) if self.report is not None else (self.rows or ())


def gpu_report(gpu: GPU, work: StencilWork, device: Device) -> StencilReport:
    """:func:`stencil_estimate` with the fit and the inputs (bytes, seconds, FLOP, cells/s).

    Raises ``ValueError`` when the GPU has no peak for the work's precision.
    """
    est = stencil_estimate(gpu, work, device)
    try:
        needed: int | None = gpus_needed(gpu, work)
    except ValueError:
        needed = None
    return StencilReport(
        gpu=gpu.id,
        device=device.name,
        work=work,
        cells=est.cells,
        cells_per_gpu=est.cells_per_gpu,
        memory=StencilMemory(
            per_gpu_bytes=est.memory_per_gpu_bytes,
            breakdown_bytes=dict(est.memory_breakdown_bytes),
            gpu_memory_bytes=est.gpu_memory_bytes,
            fits=est.fits,
            bytes_per_cell=bytes_per_cell(work),
        ),
        time=StencilTime(
            step_s=est.step_time_s,
            total_s=est.total_time_s,
            breakdown_s=dict(est.breakdown_s),
        ),
        throughput=from_result(
            StencilThroughput,
            est,
            arithmetic_intensity_flop_per_byte=est.arithmetic_intensity,
        ),
        bound=est.bound,
        fit=StencilFit(largest_cubic_grid=largest_cubic_grid(gpu, work), gpus_needed=needed),
        assumptions=tuple(est.assumptions),
    )


def stencil(req: StencilRequest) -> StencilAnswer:
    """Memory and time of the simulation on ``req.gpu``, or on every catalog GPU, ranked.

    Without ``req.gpu``, GPUs the estimate cannot use (no FP32/FP64 peak) are left out. Raises
    ``ValueError`` with one sentence on bad input.
    """
    cells = req.grid[0] * req.grid[1] * req.grid[2]
    if cells > MAX_GRID_CELLS:
        raise ValueError(
            N_(
                "the grid has {cells:.3g} cells; suanli sizes grids up to {most:.0e} "
                "(a petacell); give a smaller --grid"
            ).format(cells=cells, most=MAX_GRID_CELLS)
        )
    work = StencilWork(
        nx=req.grid[0],
        ny=req.grid[1],
        nz=req.grid[2],
        time_steps=req.steps,
        dtype=req.dtype,
        fields=req.fields,
        coefficient_arrays=req.coefficients,
        gpus=req.gpus,
        overlap_halo=req.overlap_halo,
    )
    catalog = load_catalog(req.catalog_file)
    candidates = [find_gpu(req.gpu, catalog)] if req.gpu else catalog
    reports: list[StencilReport] = []
    for gpu in candidates:
        try:
            device = device_for(gpu, "fp32")
        except ValueError:
            continue
        try:
            reports.append(gpu_report(gpu, work, device))
        except ValueError:
            if req.gpu:
                raise
    reports.sort(key=lambda r: (not r.memory.fits, r.time.total_s))
    if req.gpu and reports:
        return StencilAnswer(report=reports[0])
    return StencilAnswer(rows=tuple(reports))
