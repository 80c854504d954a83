"""The stencil / FDTD estimator: hand-computed memory, roofline rules, scaling, published runs."""

from __future__ import annotations

import json
import math
from dataclasses import replace

import pytest

from suanli.catalog import GPU, bundled_gpus, find_gpu
from suanli.estimate.comm import Link, Network
from suanli.estimate.device import device_for
from suanli.estimate.perf import Device
from suanli.estimate.stencil import (
    StencilWork,
    bytes_per_cell,
    bytes_per_cell_step,
    gpus_needed,
    largest_cubic_grid,
    memory_breakdown,
    memory_per_gpu_bytes,
    stencil_estimate,
    stencil_report,
)

GPUS = bundled_gpus()
A100 = find_gpu("a100-sxm-80gb", GPUS)
H100 = find_gpu("h100-sxm-80gb", GPUS)
A100_DEV = device_for(A100, "fp32")
H100_DEV = device_for(H100, "fp32")


# --- memory ----------------------------------------------------------------------------------


def test_memory_of_a_small_grid_by_hand() -> None:
    """10 x 20 x 30 Yee grid, fp32: 6 fields x 4 B + 12 coefficients x 4 B = 72 B per cell."""
    work = StencilWork(10, 20, 30, reserved_bytes=0)
    assert bytes_per_cell(work) == 72
    assert memory_breakdown(work) == {
        "fields": 6 * 4 * 6000,
        "coefficients": 12 * 4 * 6000,
        "halos": 0,
        "extra": 0,
        "reserved": 0,
    }
    # Two GPUs cut along x: 5 layers of 20 x 30 = 3000 cells each, one ghost layer (600 cells).
    two = replace(work, gpus=2)
    assert memory_breakdown(two) == {
        "fields": 6 * 4 * 3000,
        "coefficients": 12 * 4 * 3000,
        "halos": 6 * 4 * 600,
        "extra": 0,
        "reserved": 0,
    }
    # Three GPUs: the busiest holds ceil(10/3) = 4 layers and ghosts on both faces.
    three = replace(work, gpus=3)
    assert memory_per_gpu_bytes(three) == 72 * 2400 + 6 * 4 * 2 * 600


def test_reserved_memory_defaults_to_the_cuda_context() -> None:
    work = StencilWork(10, 20, 30)
    assert memory_breakdown(work)["reserved"] == 512 * 2**20


def test_fp64_doubles_bytes() -> None:
    fp32 = StencilWork(64, 64, 64, reserved_bytes=0)
    fp64 = replace(fp32, dtype="fp64")
    assert bytes_per_cell(fp64) == 2 * bytes_per_cell(fp32)
    assert bytes_per_cell_step(fp64) == 2 * bytes_per_cell_step(fp32)
    assert memory_per_gpu_bytes(fp64) == 2 * memory_per_gpu_bytes(fp32)
    # Memory-bound, so the step takes twice as long too.
    t32 = stencil_estimate(A100, fp32, A100_DEV)
    t64 = stencil_estimate(A100, fp64, A100_DEV)
    assert t64.step_time_s == pytest.approx(2 * t32.step_time_s)


# --- roofline ---------------------------------------------------------------------------------


@pytest.mark.parametrize(("gpu", "device"), [(A100, A100_DEV), (H100, H100_DEV)])
@pytest.mark.parametrize("dtype", ["fp32", "fp64"])
def test_fdtd_is_memory_bound(gpu: GPU, device: Device, dtype: str) -> None:
    est = stencil_estimate(gpu, StencilWork(512, 512, 512, dtype=dtype), device)
    assert est.bound == "memory"
    assert est.breakdown_s["memory"] > 5 * est.breakdown_s["compute"]
    # Yee fp32: 42 FLOPs over 120 bytes.
    assert est.arithmetic_intensity == pytest.approx(42 / (120 if dtype == "fp32" else 240))


def test_step_time_is_the_streaming_bytes_over_the_achievable_bandwidth() -> None:
    work = StencilWork(256, 256, 256)
    est = stencil_estimate(A100, work, A100_DEV)
    expected = 256**3 * (6 * 3 * 4 + 12 * 4) / (2039e9 * A100_DEV.memory_efficiency)
    assert est.step_time_s == pytest.approx(expected)


def test_compute_uses_the_non_tensor_peak() -> None:
    """A bf16 Device carries the tensor peak; the stencil still uses the catalog's FP32 rate."""
    work = StencilWork(128, 128, 128, flops_per_cell_step=1e5)  # force compute-bound
    bf16_device = device_for(A100, "bf16")
    est = stencil_estimate(A100, work, bf16_device)
    assert est.bound == "compute"
    flops = 128**3 * 1e5
    assert est.breakdown_s["compute"] == pytest.approx(
        flops / (19.5e12 * bf16_device.matmul_efficiency)
    )


def test_time_is_linear_in_cells_and_steps() -> None:
    base = StencilWork(128, 128, 128, time_steps=100)
    one = stencil_estimate(A100, base, A100_DEV)
    more_steps = stencil_estimate(A100, replace(base, time_steps=300), A100_DEV)
    more_cells = stencil_estimate(A100, replace(base, nx=512), A100_DEV)
    assert more_steps.total_time_s == pytest.approx(3 * one.total_time_s)
    assert more_cells.step_time_s == pytest.approx(4 * one.step_time_s)
    assert more_cells.mcells_per_s == pytest.approx(one.mcells_per_s)


def test_doubling_gpus_halves_the_kernel_and_adds_halo_time() -> None:
    work = StencilWork(1024, 1024, 1024)
    one = stencil_estimate(A100, work, A100_DEV)
    two = stencil_estimate(A100, replace(work, gpus=2), A100_DEV)
    four = stencil_estimate(A100, replace(work, gpus=4), A100_DEV)
    assert two.breakdown_s["memory"] == pytest.approx(one.breakdown_s["memory"] / 2)
    assert four.breakdown_s["memory"] == pytest.approx(two.breakdown_s["memory"] / 2)
    assert one.breakdown_s["halo"] == 0
    # Two GPUs: one neighbour; four: the inner GPUs have two, so twice the halo bytes.
    face = 1024 * 1024 * 4
    assert two.halo_bytes_per_step == 2 * face
    assert four.halo_bytes_per_step == 4 * face
    link = A100_DEV.network.intra
    assert two.breakdown_s["halo"] == pytest.approx(
        2 * face / link.effective_bytes_per_s + 2 * link.latency_s
    )
    assert four.breakdown_s["halo"] > two.breakdown_s["halo"]
    assert two.step_time_s == pytest.approx(one.step_time_s / 2 + two.breakdown_s["halo"])
    assert one.step_time_s / 2 < two.step_time_s < one.step_time_s


def test_overlap_hides_the_halo_behind_the_kernel() -> None:
    work = StencilWork(1024, 1024, 1024, gpus=4)
    plain = stencil_estimate(A100, work, A100_DEV)
    overlapped = stencil_estimate(A100, replace(work, overlap_halo=True), A100_DEV)
    assert overlapped.breakdown_s["exposed_halo"] == 0
    assert overlapped.step_time_s == pytest.approx(plain.breakdown_s["memory"])
    assert overlapped.step_time_s < plain.step_time_s


def test_pcie_halo_between_nodes_can_dominate_a_thin_slab() -> None:
    """Across nodes the bottleneck link is the inter-node one; thin slabs become comm-bound."""
    work = StencilWork(64, 4096, 4096, gpus=32)
    est = stencil_estimate(A100, work, A100_DEV)
    assert A100_DEV.network.point_to_point_link(32) is A100_DEV.network.inter
    assert est.bound == "communication"


# --- fit --------------------------------------------------------------------------------------


def test_largest_cubic_grid_is_the_edge_of_fitting() -> None:
    work = StencilWork(1, 1, 1)
    n = largest_cubic_grid(A100, work)
    assert memory_per_gpu_bytes(replace(work, nx=n, ny=n, nz=n)) <= A100.memory_bytes
    assert memory_per_gpu_bytes(replace(work, nx=n + 1, ny=n + 1, nz=n + 1)) > A100.memory_bytes
    # 80 GiB less the 512 MiB context over 72 B per cell: about 1,060 cells a side.
    assert n == math.floor(((80 * 2**30 - 2**29) / 72) ** (1 / 3))
    four = largest_cubic_grid(A100, replace(work, nx=8, ny=8, nz=8, gpus=4))
    assert four > n * 4 ** (1 / 3) * 0.99


def test_gpus_needed_is_the_smallest_count_that_fits() -> None:
    work = StencilWork(2048, 2048, 2048)  # 8.6e9 cells x 72 B = 618 GB
    needed = gpus_needed(A100, work)
    assert memory_per_gpu_bytes(work, needed) <= A100.memory_bytes
    assert memory_per_gpu_bytes(work, needed - 1) > A100.memory_bytes
    assert needed == 8
    assert gpus_needed(A100, StencilWork(256, 256, 256)) == 1


def test_gpus_needed_refuses_a_grid_too_wide_for_slabs() -> None:
    with pytest.raises(ValueError, match="does not fit"):
        gpus_needed(A100, StencilWork(2, 200_000, 200_000))


# --- input checks and the report -------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"dtype": "bf16"}, "unknown stencil dtype"),
        ({"gpus": 20}, "cannot cut"),
        ({"nx": 0}, "nx must be a positive integer"),
        ({"split_axis": "w"}, "split_axis"),
        ({"gpus": 2, "halo_depth": 0}, "halo_depth"),
    ],
)
def test_bad_input_raises_one_clear_sentence(kwargs: dict[str, object], message: str) -> None:
    base: dict[str, object] = {"nx": 16, "ny": 16, "nz": 16}
    with pytest.raises(ValueError, match=message):
        StencilWork(**{**base, **kwargs})  # type: ignore[arg-type]


def test_fp64_on_a_gpu_without_an_fp64_figure_is_refused() -> None:
    rtx = find_gpu("rtx-4090", GPUS)
    with pytest.raises(ValueError, match="no fp64 peak"):
        stencil_estimate(rtx, StencilWork(64, 64, 64, dtype="fp64"), device_for(rtx, "fp32"))


def test_report_is_json_ready() -> None:
    work = StencilWork(1024, 1024, 1024, time_steps=10_000, gpus=4)
    doc = stencil_report(A100, work, A100_DEV)
    text = json.dumps(doc)
    assert json.loads(text) == doc
    assert doc["bound"] == "memory"
    assert doc["memory"]["fits"] is True
    assert doc["time"]["total_s"] == pytest.approx(10_000 * doc["time"]["step_s"])
    assert doc["fit"]["gpus_needed"] == 1
    assert doc["assumptions"]


# --- published throughput ---------------------------------------------------------------------

#: FluidX3D (Lehmann et al. 2022, Computation 10(6):92, doi:10.3390/computation10060092),
#: README "Single-GPU/CPU Benchmarks" table, ProjectPhysX/FluidX3D commit 8986874: D3Q19 lattice
#: Boltzmann, FP32/FP32, empty 256³ box; the README states 153 bytes of traffic per cell and
#: step (19 DDFs read and written, 1 flag byte), 93 bytes of storage and 363 FLOPs per cell.
FLUIDX3D_MLUPS = {
    "a100-sxm-80gb": 10228,
    "a100-sxm-40gb": 8522,
    "h100-sxm-80gb": 17602,
    "h200-sxm-141gb": 23056,
    "v100-sxm2-32gb": 4471,
}

FLUIDX3D = StencilWork(
    256,
    256,
    256,
    fields=19,
    coefficient_arrays=0,
    accesses_per_field=2,
    extra_bytes_per_cell=17,  # rho (4) + u (12) + flags (1)
    extra_bytes_per_cell_step=1,  # the flag byte
    flops_per_cell_step=363,
)


def test_fluidx3d_bytes_per_cell_match_its_readme() -> None:
    assert bytes_per_cell_step(FLUIDX3D) == 153
    assert bytes_per_cell(FLUIDX3D) == 93


@pytest.mark.parametrize("gpu_id", sorted(FLUIDX3D_MLUPS))
def test_generic_stencil_against_fluidx3d(gpu_id: str) -> None:
    """A tuned memory-bound stencil reaches 85-100% of our roofline (which uses the BabelStream
    bandwidth of efficiency.toml): the estimate is an upper bound within 20%."""
    gpu = find_gpu(gpu_id, GPUS)
    est = stencil_estimate(gpu, FLUIDX3D, device_for(gpu, "fp32"))
    assert est.bound == "memory"
    ratio = FLUIDX3D_MLUPS[gpu_id] / est.mcells_per_s
    assert 0.8 <= ratio <= 1.02, f"{gpu_id}: measured/predicted = {ratio:.2f}"


#: Tesla P100 16 GB (datasheet: 732 GB/s HBM2, 9.3 TFLOP/s FP32 PCIe); not in the catalog.
P100 = GPU(
    id="tesla-p100-16gb",
    name="Tesla P100 16GB",
    vendor="nvidia",
    form_factor="pcie",
    memory_bytes=16 * 2**30,
    memory_type="HBM2",
    memory_bandwidth_bytes_per_s=732e9,
    launch_year=2016,
    software_stack="cuda",
    figures={"peak_fp32_flops": 9.3e12, "peak_fp64_flops": 4.7e12},
)
#: Memory efficiency of a tuned stencil on this GPU: FluidX3D's P100 16GB row, 3295 MLUPs/s x
#: 153 B = 504 GB/s = 69% of 732 GB/s (table above).
P100_DEV = Device(
    name=P100.id,
    peak_flops=9.3e12,
    matmul_efficiency=0.8,
    memory_bytes_per_s=732e9,
    memory_efficiency=3295e6 * 153 / 732e9,
    network=Network(
        intra=Link(
            name="PCIe 3.0 x16", bandwidth_bytes_per_s=15.75e9, latency_s=5e-6, efficiency=0.8
        ),
        inter=Link(name="IB", bandwidth_bytes_per_s=12.5e9, latency_s=5e-6),
        gpus_per_node=8,
    ),
)


def test_fdtd_against_gprmax_on_p100() -> None:
    """gprMax's CUDA engine (Warren et al. 2019, "A CUDA-based GPU engine for gprMax", Comput.
    Phys. Commun. 237:208-218, doi:10.1016/j.cpc.2018.11.007): "up to 3405 Mcells/s" on Pascal,
    the best being the Tesla P100 (HBM2).

    Its kernels (gprMax/fields_updates_gpu.py, update_e/update_h) keep fp32 fields and one uint32
    material id per component, with the coefficients in constant memory: 6 fields x 3 accesses
    x 4 B + 6 ids x 4 B = 96 B per cell and step. The roofline at FluidX3D's P100 bandwidth gives
    ~5,260 Mcells/s; gprMax reaches 65% of it (1-D thread indexing with integer divisions, PML
    slabs, separate kernels). Stated tolerance: published within [50%, 100%] of the bound. On the
    12 GB P100 (549 GB/s) the ratio would be 0.88, also inside.
    """
    gprmax = StencilWork(
        400,
        400,
        400,
        coefficient_arrays=6,
        coefficient_bytes=4,
    )
    assert bytes_per_cell_step(gprmax) == 96
    est = stencil_estimate(P100, gprmax, P100_DEV)
    assert est.bound == "memory"
    ratio = 3405 / est.mcells_per_s
    assert 0.5 <= ratio <= 1.0, f"published/predicted = {ratio:.2f}"
