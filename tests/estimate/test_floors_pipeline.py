"""Pipeline schedules (``--pp-schedule``, issue 41) over random models, layouts, cards and
networks: the zero-bubble schedules never charge more bubble than 1F1B on the same layout
(DualPipe <= ZB-H1 <= 1F1B), never a negative one; DualPipe holds at least 1F1B's memory (two
stages' parameters); the vectorized planner computes what the scalar path computes with the
schedule drawn too; and the option refuses the layouts a schedule cannot run."""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from suanli.estimate.memory import training_memory
from suanli.estimate.perf import training_perf
from suanli.estimate.pipeline import pass_shares
from suanli.estimate.workload import PP_SCHEDULES, Parallelism, TrainWork
from tests.estimate.floors import FLOORS, NETWORKS, Case, cases, device, one_layout, preset

np = pytest.importorskip("numpy")
vector = pytest.importorskip("suanli.estimate.vector")

#: Mixture-of-experts presets: DualPipe's pairing hides their all-to-alls.
MOE = ("mixtral-8x7b", "qwen3-30b-a3b", "deepseek-v2-lite")


def _with(case: Case, schedule: str) -> Case:
    return replace(
        case,
        work=replace(case.work, parallel=replace(case.work.parallel, pp_schedule=schedule)),
    )


@st.composite
def moe_cases(draw: st.DrawFn) -> Case:
    """A mixture-of-experts job with expert parallelism over a 2- to 8-stage pipeline."""
    spec = preset(draw(st.sampled_from(MOE)))
    parallel = Parallelism(
        dp=draw(st.sampled_from((1, 2, 8, 64))),
        tp=draw(st.sampled_from((1, 2))),
        pp=draw(st.sampled_from((2, 4, 8))),
        ep=draw(st.sampled_from((2, 8, 32))),
    )
    work = TrainWork(
        task="pretrain",
        batch=draw(st.sampled_from((1, 2, 4))),
        seq=draw(st.sampled_from((1024, 4096))),
        grad_accum=draw(st.sampled_from((8, 32))),
        recompute=draw(st.sampled_from(("none", "full", "selective"))),
        parallel=parallel,
    )
    card = draw(st.sampled_from(("h100-sxm-80gb", "a100-sxm-80gb")))
    per_node = draw(st.sampled_from((None, 8)))
    return Case(spec, work, card, device(card, draw(st.sampled_from(NETWORKS)), per_node))


def _pipelined(case: Case) -> None:
    assume(case.work.parallel.pp > 1)


@settings(FLOORS, max_examples=300)
@given(st.one_of(cases(), moe_cases()))
def test_zero_bubble_schedules_never_charge_more_bubble_than_1f1b(case: Case) -> None:
    """On one layout: bubble(DualPipe) <= bubble(ZB-H1) <= bubble(1F1B), all >= 0, and neither
    zero-bubble schedule makes a step shorter than its compute and memory time."""
    _pipelined(case)
    runs = {s: training_perf(case.spec, _with(case, s).work, case.device) for s in PP_SCHEDULES}
    bubble = {s: r.breakdown_s["bubble"] for s, r in runs.items()}
    assert 0 <= bubble["dualpipe"] <= bubble["zb-h1"] * (1 + 1e-12) + 1e-15
    assert bubble["zb-h1"] <= bubble["1f1b"] * (1 + 1e-12)
    for schedule in ("zb-h1", "dualpipe"):
        r = runs[schedule]
        assert r.breakdown_s["communication"] >= 0
        busy = r.breakdown_s["compute"] + r.breakdown_s["memory"]
        assert r.step_time_s >= busy * (1 - 1e-12)


@settings(FLOORS, max_examples=150)
@given(moe_cases())
def test_dualpipe_hides_communication_only_behind_the_paired_compute(case: Case) -> None:
    """DualPipe's exposed all-to-all and transfers are never more than 1F1B charges for the same
    bytes (1F1B blocks on them), and never less than what outlasts the compute that could hide
    them: overlap hides communication, it cannot make it shorter."""
    one = training_perf(case.spec, case.work, case.device)
    dual = training_perf(case.spec, _with(case, "dualpipe").work, case.device)
    kinds = ("expert_all_to_all", "pipeline_p2p")
    plain = sum(one.comm_detail_s.get(k, 0.0) for k in kinds)
    hidden = sum(dual.comm_detail_s.get(k, 0.0) for k in kinds)
    assert hidden <= plain * (1 + 1e-12)
    # The floor: what outlasts all of the step's compute and memory time shows (1F1B blocks on
    # every byte: ``plain`` is all of it).
    busy = one.breakdown_s["compute"] + one.breakdown_s["memory"]
    assert hidden >= (plain - busy) * (1 - 1e-9)


@settings(FLOORS, max_examples=300)
@given(st.one_of(cases(), moe_cases()))
def test_dualpipe_holds_at_least_1f1b_memory(case: Case) -> None:
    """Two stages' parameters per GPU and pp + 1 micro-batches in flight: never less memory than
    1F1B; the optimizer states exactly double (DeepSeek-V3 report, Table 2)."""
    _pipelined(case)
    one = training_memory(case.spec, case.work)
    dual = training_memory(case.spec, _with(case, "dualpipe").work)
    assert dual.total_bytes >= one.total_bytes
    assert dual.breakdown["optimizer"] == pytest.approx(2 * one.breakdown["optimizer"])
    assert dual.breakdown["activations"] >= one.breakdown["activations"] * (1 - 1e-12)
    zb = training_memory(case.spec, _with(case, "zb-h1").work)
    assert zb.total_bytes == pytest.approx(one.total_bytes, rel=1e-12)


@settings(FLOORS, max_examples=400)
@given(st.one_of(cases(), moe_cases()), st.sampled_from(PP_SCHEDULES))
def test_vector_planner_equals_scalar_with_the_schedule_drawn(case: Case, schedule: str) -> None:
    """The vectorized planner and the scalar path agree on step, communication and memory for
    every schedule (the planner's base work carries the schedule, the layouts the stages)."""
    if schedule != "1f1b":
        _pipelined(case)
    case = _with(case, schedule)
    par = case.work.parallel
    lay = one_layout(case)
    base = replace(
        case.work,
        parallel=Parallelism(shard=par.shard, ep=par.ep, pp=par.pp, pp_schedule=schedule),
    )
    speed = vector.train_speed(case.spec, base, lay, case.device)
    scalar = training_perf(case.spec, case.work, case.device)
    assert speed["step_time_s"][0] == pytest.approx(scalar.step_time_s, rel=1e-9)
    assert speed["communication_s"][0] == pytest.approx(
        scalar.breakdown_s["communication"], rel=1e-9, abs=1e-12
    )
    memory = vector.train_memory(case.spec, base, lay)
    assert memory[0] == pytest.approx(training_memory(case.spec, case.work).total_bytes, rel=1e-9)


@settings(FLOORS, max_examples=200)
@given(st.one_of(cases(), moe_cases()))
def test_weight_gradients_never_outlast_the_forward(case: Case) -> None:
    """T_W <= T_F (W repeats the forward's linear GEMMs, never the attention core): what keeps
    ZB-H1's bubble >= 0 and DualPipe's below ZB-H1's; the three shares sum to one."""
    _pipelined(case)
    f, b, w = pass_shares(case.spec, _with(case, "zb-h1").work)
    assert 0 <= w <= f and b > 0
    assert f + b + w == pytest.approx(1.0)


def test_lora_has_no_weight_gradient_to_defer() -> None:
    """LoRA freezes the base: no W pass to fill the drain, so ZB-H1 charges 1F1B's bubble."""
    spec = preset("llama-3.1-8b")
    work = TrainWork(task="lora", batch=1, seq=2048, grad_accum=16, parallel=Parallelism(pp=4))
    dev = device("h100-sxm-80gb", "ib-ndr", 8)
    one = training_perf(spec, work, dev).breakdown_s["bubble"]
    zb = replace(work, parallel=replace(work.parallel, pp_schedule="zb-h1"))
    assert training_perf(spec, zb, dev).breakdown_s["bubble"] == pytest.approx(one, rel=1e-3)


def test_zb_h1_cuts_a_dense_bubble_to_about_a_third() -> None:
    """Qi et al. 2024 §2.1: with T_F = T_B = T_W the ZB-H1 bubble is a third of 1F1B's; a dense
    transformer without recomputation is close to that split (attention adds to T_B only)."""
    spec = preset("llama-3.1-70b")
    work = TrainWork(
        task="pretrain", batch=1, seq=4096, grad_accum=32, parallel=Parallelism(tp=8, pp=8)
    )
    f, b, w = pass_shares(spec, replace(work, parallel=replace(work.parallel, pp_schedule="zb-h1")))
    assert f == pytest.approx(w, rel=0.15) and b >= f
    assert 0.25 < (f + b - w) < 0.45


@pytest.mark.parametrize(
    ("parallel", "message"),
    [
        ({"pp": 1, "pp_schedule": "zb-h1"}, "needs --pp > 1"),
        ({"pp": 1, "pp_schedule": "dualpipe"}, "needs --pp > 1"),
        ({"pp": 3, "pp_schedule": "dualpipe"}, "even --pp"),
        ({"pp": 4, "vpp": 2, "pp_schedule": "dualpipe"}, "--vpp 1"),
        ({"pp": 4, "vpp": 2, "pp_schedule": "zb-h1"}, "--vpp 1"),
        ({"pp": 4, "pp_schedule": "gpipe"}, "is not one of"),
    ],
)
def test_a_schedule_refuses_the_layouts_it_cannot_run(parallel: dict, message: str) -> None:
    """One sentence naming the option (the CLI's exit 2 and the web's 4xx come from it)."""
    with pytest.raises(ValueError, match=message):
        Parallelism(**parallel)
