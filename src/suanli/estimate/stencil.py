"""Memory and time of a stencil simulation on GPUs: FDTD (Yee scheme) and other grid codes.

A stencil code updates every cell of a structured grid from its neighbours once per time step.
It does a few FLOPs per byte it moves, so on a GPU its time is set by memory bandwidth, not by
arithmetic (Williams, Waterman & Patterson 2009, "Roofline", CACM 52(4); for 3-D FDTD on a GPU,
Kim et al. 2011, Comput. Phys. Commun. 182:1201, who found the roofline prediction to agree with
their measurements). Per step on the busiest GPU::

    compute_s = cells · FLOPs per cell / (non-tensor peak · efficiency)
    memory_s  = cells · bytes per cell / (bandwidth · memory efficiency)
    kernel_s  = max(compute_s, memory_s)
    halo_s    = exchanges · p2p(halo bytes / exchanges)            (neighbouring GPUs)
    step_s    = kernel_s + halo_s            or, overlapped, max(kernel_s, halo_s)

Bytes per cell come from a streaming model: every field array is moved between DRAM and the chip
``accesses_per_field`` times per step and every coefficient array is read once; reads of the
neighbouring cells hit the on-chip caches. Defaults describe a 3-D Yee FDTD code for an
inhomogeneous medium (Taflove & Hagness, "Computational Electrodynamics: The Finite-Difference
Time-Domain Method", 3rd ed. 2005, ch. 3, §3.6: six field components updated in two half-steps
with per-component update coefficients C_a, C_b and D_a, D_b).

The compute peak is the GPU's non-tensor FP32 or FP64 rate from the catalog (a stencil does not
run on tensor cores), not ``Device.peak_flops``, which is the tensor peak of the precision the
device was built for. Bandwidth, its measured efficiency and the network come from the Device.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

from suanli.catalog.formats import overhead_bytes
from suanli.catalog.gpu import GPU
from suanli.estimate.comm import p2p_s
from suanli.estimate.perf import Device
from suanli.i18n import N_
from suanli.units import DTYPE_BYTES

#: Bytes per element of the precisions a stencil code stores its fields in.
STENCIL_DTYPE_BYTES: dict[str, int] = {
    dtype: int(DTYPE_BYTES[dtype]) for dtype in ("fp16", "fp32", "fp64")
}

#: FLOPs per cell per step of the 3-D Yee update: each of the six components is
#: ``F = C_a·F + C_1·(G_i − G_i') − C_2·(K_j − K_j')``: 2 differences, 3 products, 2 sums = 7
#: (Taflove & Hagness 2005, §3.6; the same form as gprMax's ``update_e``/``update_h`` kernels).
#: Point sources touch O(1) cells and are not counted.
YEE_FLOPS_PER_CELL_STEP = 6 * 7

#: Per-component update coefficients of an inhomogeneous medium: C_a, C_b for Ex, Ey, Ez and
#: D_a, D_b for Hx, Hy, Hz (Taflove & Hagness 2005, §3.6).
YEE_COEFFICIENT_ARRAYS = 12

#: Yee's leapfrog runs the E and H updates as two sweeps: a component is read and written in
#: its own update and read once more as the curl source of the other one.
YEE_ACCESSES_PER_FIELD = 3

_AXES = ("x", "y", "z")


@dataclass(frozen=True)
class StencilWork:
    """One stencil simulation: the grid, what each cell stores and moves, and the GPU layout.

    The defaults are a 3-D Yee FDTD code (six field components, twelve per-cell update
    coefficients in the field precision, 42 FLOPs per cell per step, a one-cell halo, two halo
    exchanges per step carrying the two tangential components towards each neighbour).
    """

    nx: int
    ny: int
    nz: int
    time_steps: int = 1
    dtype: str = "fp32"
    """Precision of the field arrays: ``fp16``, ``fp32`` or ``fp64``."""
    fields: int = 6
    """Field arrays updated every step (6 for Maxwell's E and H; 19 for D3Q19 lattice Boltzmann)."""
    coefficient_arrays: int = YEE_COEFFICIENT_ARRAYS
    """Per-cell read-only arrays (material coefficients or material ids)."""
    coefficient_bytes: int | None = None
    """Bytes per coefficient element; ``None`` means the field precision (4 for uint32 ids)."""
    flops_per_cell_step: float = YEE_FLOPS_PER_CELL_STEP
    accesses_per_field: int = YEE_ACCESSES_PER_FIELD
    """DRAM transfers of each field array per step: 3 for leapfrog (read + write in its own
    sweep, read as the source of the other), 2 for a single fused sweep (read + write)."""
    buffers_per_field: int = 1
    """Stored copies of each field (1 for in-place updates, 2 for ping-pong buffers)."""
    extra_bytes_per_cell: float = 0.0
    """Other per-cell storage (flags, outputs, auxiliary arrays such as PML or dispersion)."""
    extra_bytes_per_cell_step: float = 0.0
    """Other per-cell traffic per step (e.g. a flag byte read every step)."""
    halo_depth: int = 1
    """Ghost layers per neighbour face (the stencil radius: 1 for Yee's second order)."""
    halo_fields: int = 2
    """Field arrays whose boundary layers a GPU sends to each neighbour per step (Yee: the two
    tangential components, H one way and E the other; a symmetric stencil sends all of them)."""
    halo_exchanges_per_step: int = 2
    """Separate exchange phases per step (Yee: one after each half-step)."""
    gpus: int = 1
    split_axis: str = "x"
    """Axis the grid is cut along into ``gpus`` slabs (x: contiguous planes in C order)."""
    overlap_halo: bool = False
    """Whether the halo exchange runs while the interior cells update."""
    reserved_bytes: float | None = None
    """Memory per GPU outside the grid; ``None`` means the catalog's CUDA context default."""

    def __post_init__(self) -> None:
        for name in ("nx", "ny", "nz", "time_steps", "fields", "gpus", "accesses_per_field"):
            value = getattr(self, name)
            if not isinstance(value, int) or value < 1:
                raise ValueError(
                    N_("{name} must be a positive integer, got {value!r}").format(
                        name=name, value=value
                    )
                )
        for name in ("coefficient_arrays", "halo_depth", "halo_fields"):
            value = getattr(self, name)
            if not isinstance(value, int) or value < 0:
                raise ValueError(
                    N_("{name} must be a non-negative integer, got {value!r}").format(
                        name=name, value=value
                    )
                )
        if self.dtype not in STENCIL_DTYPE_BYTES:
            known = ", ".join(STENCIL_DTYPE_BYTES)
            raise ValueError(
                N_("unknown stencil dtype {dtype!r}; use one of {known}").format(
                    dtype=self.dtype, known=known
                )
            )
        if self.split_axis not in _AXES:
            raise ValueError(
                N_("split_axis must be one of x, y, z, got {axis!r}").format(axis=self.split_axis)
            )
        if self.gpus > self.axis_cells:
            raise ValueError(
                N_("cannot cut {cells} cells along {axis} over {gpus} GPUs").format(
                    cells=self.axis_cells, axis=self.split_axis, gpus=self.gpus
                )
            )
        if self.gpus > 1 and self.halo_depth < 1:
            raise ValueError(N_("halo_depth must be at least 1 when the grid spans several GPUs"))
        if self.halo_exchanges_per_step < 1 or self.buffers_per_field < 1:
            raise ValueError(N_("halo_exchanges_per_step and buffers_per_field must be at least 1"))
        if self.coefficient_bytes is not None and self.coefficient_bytes < 1:
            raise ValueError(
                N_("coefficient_bytes must be positive, got {value}").format(
                    value=self.coefficient_bytes
                )
            )
        for name in ("flops_per_cell_step", "extra_bytes_per_cell", "extra_bytes_per_cell_step"):
            if getattr(self, name) < 0:
                raise ValueError(
                    N_("{name} must not be negative, got {value}").format(
                        name=name, value=getattr(self, name)
                    )
                )
        if self.reserved_bytes is not None and self.reserved_bytes < 0:
            raise ValueError(
                N_("{name} must not be negative, got {value}").format(
                    name="reserved_bytes", value=self.reserved_bytes
                )
            )

    @property
    def cells(self) -> int:
        """Cells of the whole grid."""
        return self.nx * self.ny * self.nz

    @property
    def dtype_bytes(self) -> int:
        """Bytes per field element."""
        return STENCIL_DTYPE_BYTES[self.dtype]

    @property
    def axis_cells(self) -> int:
        """Cells along the split axis."""
        return {"x": self.nx, "y": self.ny, "z": self.nz}[self.split_axis]

    @property
    def face_cells(self) -> int:
        """Cells of one cut face (the product of the two other extents)."""
        return self.cells // self.axis_cells


def bytes_per_cell(work: StencilWork) -> float:
    """Resident bytes per owned cell: ``fields·b·buffers + coefficients·b_c + extra``."""
    b = work.dtype_bytes
    b_c = work.coefficient_bytes if work.coefficient_bytes is not None else b
    return (
        work.fields * b * work.buffers_per_field
        + work.coefficient_arrays * b_c
        + work.extra_bytes_per_cell
    )


def bytes_per_cell_step(work: StencilWork) -> float:
    """DRAM traffic per cell update in the streaming model:
    ``fields·accesses·b + coefficient_arrays·b_c + extra``.

    Cache assumption: the neighbour reads of a cell (±1 along each axis) are served by L1/L2,
    so each array element crosses the DRAM bus once per sweep that uses it. That holds while a
    few planes of the source arrays fit in L2 (tens of MB on A100/H100), or with tiling. Yee
    FDTD fp32 with per-cell coefficients: ``6·3·4 + 12·4 = 120`` bytes.
    """
    b = work.dtype_bytes
    b_c = work.coefficient_bytes if work.coefficient_bytes is not None else b
    return (
        work.fields * work.accesses_per_field * b
        + work.coefficient_arrays * b_c
        + work.extra_bytes_per_cell_step
    )


def _reserved_bytes(work: StencilWork) -> tuple[float, str]:
    if work.reserved_bytes is not None:
        return work.reserved_bytes, N_("given")
    return overhead_bytes("cuda-context")[0], "catalog/data/overhead.toml cuda-context"


def _layout(work: StencilWork, gpus: int) -> tuple[int, int, int]:
    """Owned cells, ghost cells and neighbours of the busiest GPU of a ``gpus``-slab cut."""
    layers = math.ceil(work.axis_cells / gpus)
    neighbours = min(2, gpus - 1)
    owned = layers * work.face_cells
    ghost = neighbours * work.halo_depth * work.face_cells
    return owned, ghost, neighbours


def memory_breakdown(work: StencilWork, gpus: int | None = None) -> dict[str, float]:
    """Bytes on the busiest GPU (an interior slab): ``fields``, ``coefficients``, ``halos``
    (ghost layers of every field array), ``extra`` and ``reserved`` (the CUDA context).

    Slab of ``ceil(n_axis / gpus)`` layers; ghost cells ``min(2, gpus-1)·depth·face``.
    """
    owned, ghost, _ = _layout(work, gpus or work.gpus)
    b = work.dtype_bytes
    b_c = work.coefficient_bytes if work.coefficient_bytes is not None else b
    per_field_cell = work.fields * b * work.buffers_per_field
    return {
        "fields": float(per_field_cell * owned),
        "coefficients": float(work.coefficient_arrays * b_c * owned),
        "halos": float(per_field_cell * ghost),
        "extra": float(work.extra_bytes_per_cell * owned),
        "reserved": _reserved_bytes(work)[0],
    }


def memory_per_gpu_bytes(work: StencilWork, gpus: int | None = None) -> float:
    """Total of :func:`memory_breakdown`."""
    return sum(memory_breakdown(work, gpus).values())


def halo_bytes_per_step(work: StencilWork) -> float:
    """Bytes the busiest GPU sends per step: ``neighbours·halo_fields·depth·face·b``."""
    _, _, neighbours = _layout(work, work.gpus)
    return float(
        neighbours * work.halo_fields * work.halo_depth * work.face_cells * work.dtype_bytes
    )


def compute_peak_flops(gpu: GPU, dtype: str) -> float:
    """The non-tensor peak a stencil in ``dtype`` runs at: FP64 for fp64, else FP32 (fp16
    storage with FP32 arithmetic, as stencil codes do; packed half2 math could double it)."""
    precision = "fp64" if dtype == "fp64" else "fp32"
    peak = gpu.peak_flops(precision)
    if not peak:
        raise ValueError(
            N_("{gpu} has no {precision} peak in the catalog; pick another GPU").format(
                gpu=gpu.id, precision=precision
            )
        )
    return peak


@dataclass(frozen=True, kw_only=True)
class StencilEstimate:
    """Memory, time and throughput of a :class:`StencilWork` on one kind of GPU."""

    gpus: int
    cells: int
    cells_per_gpu: int
    """Cells the busiest GPU updates per step."""
    memory_breakdown_bytes: dict[str, float]
    memory_per_gpu_bytes: float
    gpu_memory_bytes: float
    fits: bool
    bytes_per_cell_step: float
    flops_per_cell_step: float
    halo_bytes_per_step: float
    breakdown_s: dict[str, float]
    """``compute``, ``memory``, ``halo`` (all per step) and ``exposed_halo``."""
    step_time_s: float
    total_time_s: float
    bound: str
    """``memory``, ``compute`` or ``communication``: the largest of the three per step."""
    assumptions: tuple[str, ...] = ()

    @property
    def cells_per_s(self) -> float:
        """Cell updates per second of the whole job."""
        return self.cells / self.step_time_s

    @property
    def mcells_per_s(self) -> float:
        """Million cell updates per second (the unit FDTD papers report)."""
        return self.cells_per_s / 1e6

    @property
    def arithmetic_intensity(self) -> float:
        """FLOPs per byte of DRAM traffic."""
        return self.flops_per_cell_step / self.bytes_per_cell_step


def stencil_estimate(gpu: GPU, work: StencilWork, device: Device) -> StencilEstimate:
    """Roofline estimate of ``work`` on ``work.gpus`` GPUs like ``gpu``.

    ``compute = cells·FLOPs / (non-tensor peak · device.matmul_efficiency)``,
    ``memory = cells·bytes_per_cell_step / device.bandwidth``, kernel time the larger (Williams
    et al. 2009). Halo: ``exchanges · p2p(halo bytes / exchanges)`` over
    ``device.network.point_to_point_link(gpus)``
    (``B/bw + alpha`` per transfer), added to the step, or
    overlapped: ``max(kernel, halo)``. Total ``= steps · step``.
    """
    owned, _, _ = _layout(work, work.gpus)
    peak = compute_peak_flops(gpu, work.dtype)
    per_cell = bytes_per_cell_step(work)
    compute_s = owned * work.flops_per_cell_step / (peak * device.matmul_efficiency)
    memory_s = owned * per_cell / device.bandwidth
    kernel_s = max(compute_s, memory_s)
    halo_bytes = halo_bytes_per_step(work)
    link = device.network.point_to_point_link(work.gpus)
    exchanges = work.halo_exchanges_per_step
    halo_s = exchanges * p2p_s(halo_bytes / exchanges, link) if work.gpus > 1 else 0.0
    exposed = max(0.0, halo_s - kernel_s) if work.overlap_halo else halo_s
    step = kernel_s + exposed
    bound = max(
        ("memory", memory_s),
        ("compute", compute_s),
        ("communication", halo_s),
        key=lambda kv: kv[1],
    )[0]
    breakdown = memory_breakdown(work)
    total_memory = sum(breakdown.values())
    reserved_source = _reserved_bytes(work)[1]
    precision = "fp64" if work.dtype == "fp64" else "fp32"
    assumptions = (
        N_(
            "compute at the non-tensor {precision} peak ({tflops:.1f} TFLOP/s) times "
            "{efficiency:.0%} ({source})"
        ).format(
            precision=precision,
            tflops=peak / 1e12,
            efficiency=device.matmul_efficiency,
            source=device.efficiency_source,
        ),
        N_("memory at {efficiency:.0%} of {bandwidth:.0f} GB/s").format(
            efficiency=device.memory_efficiency, bandwidth=device.memory_bytes_per_s / 1e9
        ),
        N_(
            "streaming model: each field array crosses DRAM {accesses}x per step, "
            "each coefficient array once; neighbour reads hit L1/L2 (a few planes of the source "
            "arrays fit in L2, or the kernel tiles)"
        ).format(accesses=work.accesses_per_field),
        N_(
            "{gpus} GPU(s) in slabs along {axis}; the busiest holds {layers} layers and exchanges "
            "{fields} field array(s) x {depth} layer(s) with each neighbour in {phases} phase(s) "
            "per step over {link}"
        ).format(
            gpus=work.gpus,
            axis=work.split_axis,
            layers=math.ceil(work.axis_cells / work.gpus),
            fields=work.halo_fields,
            depth=work.halo_depth,
            phases=work.halo_exchanges_per_step,
            link=link.name,
        ),
        N_("halo exchange overlapped with the interior update")
        if work.overlap_halo
        else N_("halo exchange not overlapped: it adds to every step"),
        N_("reserved memory per GPU: {mib:.0f} MiB ({source})").format(
            mib=breakdown["reserved"] / 2**20, source=reserved_source
        ),
        N_(
            "boundary layers (PML), sources and outputs are not counted unless given as extra bytes"
        ),
    )
    return StencilEstimate(
        gpus=work.gpus,
        cells=work.cells,
        cells_per_gpu=owned,
        memory_breakdown_bytes=breakdown,
        memory_per_gpu_bytes=total_memory,
        gpu_memory_bytes=float(gpu.memory_bytes),
        fits=total_memory <= gpu.memory_bytes,
        bytes_per_cell_step=per_cell,
        flops_per_cell_step=work.flops_per_cell_step,
        halo_bytes_per_step=halo_bytes,
        breakdown_s={
            "compute": compute_s,
            "memory": memory_s,
            "halo": halo_s,
            "exposed_halo": exposed,
        },
        step_time_s=step,
        total_time_s=step * work.time_steps,
        bound=bound,
        assumptions=assumptions,
    )


# --- fit -------------------------------------------------------------------------------------


def largest_cubic_grid(gpu: GPU, work: StencilWork) -> int:
    """The largest ``n`` such that an ``n³`` grid of ``work`` fits ``work.gpus`` GPUs like ``gpu``
    (busiest GPU's :func:`memory_per_gpu_bytes` ≤ ``gpu.memory_bytes``); 0 if none does."""

    def fits(n: int) -> bool:
        trial = _resized(work, n, n, n)
        return memory_per_gpu_bytes(trial) <= gpu.memory_bytes

    if not fits(max(work.gpus, 1)):
        return 0
    low, high = max(work.gpus, 1), max(work.gpus, 2)
    while fits(high):
        low, high = high, high * 2
    while high - low > 1:
        mid = (low + high) // 2
        if fits(mid):
            low = mid
        else:
            high = mid
    return low


def gpus_needed(gpu: GPU, work: StencilWork) -> int:
    """The fewest GPUs like ``gpu`` that hold ``work``'s grid cut into slabs along
    ``work.split_axis`` (ignores ``work.gpus``). ValueError when even one layer per GPU does not
    fit."""
    # The busiest GPU's memory falls as the slabs get thinner: bisect, so a grid of 10^7
    # layers costs ~24 evaluations, not 10^7.
    low, high = 1, work.axis_cells
    if memory_per_gpu_bytes(work, high) <= gpu.memory_bytes:
        while low < high:
            mid = (low + high) // 2
            if memory_per_gpu_bytes(work, mid) <= gpu.memory_bytes:
                high = mid
            else:
                low = mid + 1
        return low
    raise ValueError(
        N_(
            "the grid does not fit {gpu} even at one {axis}-layer per GPU; "
            "cut it along two axes or use GPUs with more memory"
        ).format(gpu=gpu.id, axis=work.split_axis)
    )


def _resized(work: StencilWork, nx: int, ny: int, nz: int) -> StencilWork:
    fields = asdict(work)
    fields.update(nx=nx, ny=ny, nz=nz)
    return StencilWork(**fields)


# --- report ----------------------------------------------------------------------------------


def stencil_report(gpu: GPU, work: StencilWork, device: Device) -> dict[str, Any]:
    """A JSON-ready document of :func:`stencil_estimate`, the fit and the inputs (base units:
    bytes, seconds, FLOP, cells per second)."""
    est = stencil_estimate(gpu, work, device)
    try:
        needed: int | None = gpus_needed(gpu, work)
    except ValueError:
        needed = None
    return {
        "gpu": gpu.id,
        "device": device.name,
        "work": asdict(work),
        "cells": est.cells,
        "cells_per_gpu": est.cells_per_gpu,
        "memory": {
            "per_gpu_bytes": est.memory_per_gpu_bytes,
            "breakdown_bytes": dict(est.memory_breakdown_bytes),
            "gpu_memory_bytes": est.gpu_memory_bytes,
            "fits": est.fits,
            "bytes_per_cell": bytes_per_cell(work),
        },
        "time": {
            "step_s": est.step_time_s,
            "total_s": est.total_time_s,
            "breakdown_s": dict(est.breakdown_s),
        },
        "throughput": {
            "cells_per_s": est.cells_per_s,
            "mcells_per_s": est.mcells_per_s,
            "bytes_per_cell_step": est.bytes_per_cell_step,
            "flops_per_cell_step": est.flops_per_cell_step,
            "arithmetic_intensity_flop_per_byte": est.arithmetic_intensity,
            "halo_bytes_per_step": est.halo_bytes_per_step,
        },
        "bound": est.bound,
        "fit": {
            "largest_cubic_grid": largest_cubic_grid(gpu, work),
            "gpus_needed": needed,
        },
        "assumptions": list(est.assumptions),
    }
