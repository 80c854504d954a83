"""A serving engine's element-wise kernels at their measured bandwidth, against the op times Vidur
measured (tests/fixtures/elementwise-op-times.csv, a subset of microsoft/vidur 7d47513
data/profiling/compute/*/mlp.csv; scripts/derive_elementwise_profiles.py)."""

from __future__ import annotations

import csv
import statistics

import pytest

from suanli.catalog import find_gpu, load_catalog
from suanli.catalog.network import ceiling_for
from suanli.estimate.device import device_for
from suanli.estimate.elementwise import serving_op_bytes
from suanli.estimate.kernel_fits import kernel_model
from suanli.estimate.kernels import serving_ops_seconds
from suanli.estimate.serving.timing import elementwise_seconds_per_token
from suanli.models.resolve import load_model

from ..scripts import load_script

ak = load_script("benchmarks/accuracy_elementwise.py")
FIXTURE = ak.ELEMENTWISE_FIXTURE
CATALOG = load_catalog()
CARDS = ("a100-sxm-80gb", "h100-sxm-80gb", "a40-48gb")


def _errors(gpu_id: str, low: int, *, streaming: bool = False) -> dict[str, list[float]]:
    """Per kind of op: measured / model - 1 (positive: the model is faster) from ``low`` tokens."""
    return {
        kind: [e for n, e in errors if n >= low]
        for kind, errors in ak.elementwise_errors(gpu_id, streaming=streaming).items()
    }


def test_the_fixture_holds_every_op_of_three_cards() -> None:
    with FIXTURE.open(newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert {r["gpu_id"] for r in rows} == set(CARDS)
    assert {r["op"] for r in rows} == set(ak.ELEMENTWISE_KINDS)
    assert len(rows) > 2000


@pytest.mark.parametrize("gpu_id", CARDS)
def test_large_ops_match_their_measured_times(gpu_id: str) -> None:
    for kind, errors in _errors(gpu_id, 2048).items():
        assert abs(statistics.median(errors)) < 0.05, kind
        assert statistics.median(abs(e) for e in errors) < 0.15, kind


@pytest.mark.parametrize("gpu_id", ["a100-sxm-80gb", "h100-sxm-80gb"])
def test_streaming_at_the_gemm_rate_was_twice_too_fast_for_norms(gpu_id: str) -> None:
    # What the model assumed before: every element-wise op at the GEMMs' streaming efficiency.
    assert statistics.median(_errors(gpu_id, 2048, streaming=True)["norm"]) > 1.0


def test_small_ops_stay_within_a_third_down_to_512_tokens() -> None:
    for gpu_id in CARDS:
        for kind, errors in _errors(gpu_id, 512).items():
            assert statistics.median(abs(e) for e in errors) < 0.33, (gpu_id, kind)


def test_op_bytes_of_llama_2_7b() -> None:
    spec = load_model("llama-2-7b").spec  # h 4096, 32 heads of 128 (no GQA), I 11008
    one = serving_op_bytes(spec)
    assert (one.norm, one.add) == (2 * 2 * 4096, 3 * 2 * 4096)
    assert one.rope == 2 * 2 * (32 + 32) * 128
    assert one.activation == 3 * 2 * 11008
    two = serving_op_bytes(spec, tp=2)
    assert (two.norm, two.add) == (one.norm, one.add)  # replicated over the group
    assert (two.rope, two.activation) == (one.rope / 2, one.activation / 2)


def test_gpt2_runs_no_rotary_kernel() -> None:
    spec = load_model("gpt2").spec
    assert serving_op_bytes(spec).rope == 0
    gpu = find_gpu("a100-sxm-80gb", CATALOG)
    model = kernel_model(gpu, ceiling_for(gpu, "fp16"), precision="fp16")
    ops = serving_op_bytes(spec)
    # One token: every kernel at its floor, five of them per layer (two norms, activation, two
    # adds), none for rotary.
    seconds = serving_ops_seconds(ops, 1, spec.num_layers, 2.0e12, model)
    assert seconds == pytest.approx(spec.num_layers * 5 * model.small_op_s)


def test_the_capacity_simulator_prices_large_batches_as_perf_does() -> None:
    spec = load_model("llama-3.1-8b").spec
    device = device_for(find_gpu("h100-sxm-80gb", CATALOG), "bf16", auto_calibration=False)
    rows = 8192  # every kernel far above its floor
    perf_s = serving_ops_seconds(
        serving_op_bytes(spec),
        rows,
        spec.num_layers,
        device.memory_bytes_per_s,
        device.gemm_model,
    )
    assert rows * elementwise_seconds_per_token(spec, device) == pytest.approx(perf_s, rel=1e-9)


@pytest.mark.parametrize(
    ("gpu_id", "generation"),
    [
        ("h200-sxm-141gb", "h100-sxm-80gb"),
        ("b200-sxm-180gb", "h100-sxm-80gb"),
        ("l40s-48gb", "a40-48gb"),
        ("rtx-4090-24gb", "a40-48gb"),
    ],
)
def test_other_cards_take_their_generations_shares(gpu_id: str, generation: str) -> None:
    # Each kind loses to the card's GEMM streaming rate what it loses on the measured card.
    def model(g: str, precision: str):  # type: ignore[no-untyped-def]
        gpu = find_gpu(g, CATALOG)
        return kernel_model(gpu, ceiling_for(gpu, precision), precision=precision)

    # The reference at the precision it was profiled in (fp16): its fit as measured.
    card, ref = model(gpu_id, "bf16"), model(generation, "fp16")
    scale = card.memory_efficiency / ref.memory_efficiency
    for kind in ("norm", "rope", "activation"):  # (the H100's add sits at the 98% cap)
        expected = getattr(ref.elementwise, kind) * scale
        assert getattr(card.elementwise, kind) == pytest.approx(expected)


@pytest.mark.parametrize(("model", "per_layer"), [("gpt2", 5), ("llama-3.1-8b", 6)])
def test_capacitys_floor_counts_the_kernels_perf_counts(model: str, per_layer: int) -> None:
    """`capacity`'s per-iteration floor pays one element-wise floor per kernel the serving path
    runs: two norms, two adds, the activation, and rotary only where the model has it."""
    import dataclasses

    from suanli.estimate.serving.timing import kernel_floor_s

    spec = load_model(model).spec
    device = device_for(find_gpu("h100", load_catalog()), "bf16")
    gemm = device.gemm_model
    no_floor = dataclasses.replace(device, gemm=dataclasses.replace(gemm, small_op_s=0.0))
    small = kernel_floor_s(spec, device) - kernel_floor_s(spec, no_floor)
    assert small == pytest.approx(spec.num_layers * per_layer * gemm.small_op_s)
