"""What a pipeline schedule costs (``--pp-schedule``): the fill-and-drain bubble, the stage
transfers and expert all-to-alls it leaves exposed, the micro-batches it keeps in flight and the
parameter copies it holds. Shared by the scalar path (:mod:`suanli.estimate.perf`,
:mod:`suanli.estimate.memory`) and the vectorized one (:mod:`suanli.estimate.vector`): every
function takes floats or numpy arrays (``minimum`` where a comparison is needed).

The schedules (docs/speed.md, "Pipeline schedules"):

- ``1f1b``: one forward, one backward per micro-batch (Narayanan et al. 2021, SC'21, §2.2); a
  bubble of ``(p-1)`` micro-batch times (``(p-1)/vpp`` interleaved).
- ``zb-h1``: the backward split into B (input gradient) and W (weight gradient), W deferred to
  fill the drain (Qi et al., "Zero Bubble Pipeline Parallelism", ICLR 2024, arXiv:2401.10241,
  §2.1): bubble ``(p-1)(T_F + T_B - T_W)`` against 1F1B's ``(p-1)(T_F + T_B + T_W)``, same peak
  activation memory as 1F1B.
- ``dualpipe``: micro-batches fed from both ends, each rank holding stage ``i`` and stage
  ``p-1-i`` (DeepSeek-AI, "DeepSeek-V3 Technical Report", arXiv:2412.19437, §3.2.1 and Table 2):
  bubble ``(p/2-1)(F&B + B - 3W)`` (``B`` the full backward there), 2x parameters, ``p+1``
  micro-batches of activations; a forward chunk's all-to-alls and transfers run under a paired
  backward chunk's compute and the reverse.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from suanli.estimate.comm import pipeline_p2p_s
from suanli.estimate.flops import step_flops
from suanli.estimate.workload import TrainWork
from suanli.i18n import N_
from suanli.models.spec import ModelSpec

SRC_1F1B = "Narayanan et al. 2021 (Megatron-LM, SC'21) §2.2"
SRC_ZB_H1 = "Qi et al. 2024, Zero Bubble Pipeline Parallelism (arXiv:2401.10241) §2.1"
SRC_DUALPIPE = "DeepSeek-V3 Technical Report (arXiv:2412.19437) §3.2.1, Table 2"


@lru_cache(maxsize=256)
def _shares(
    spec: ModelSpec, seq: int, recompute: str, every: int, causal: bool, frozen: float
) -> tuple[float, float, float]:
    fl = step_flops(
        spec,
        1,
        seq,
        recompute=recompute,
        recompute_every=every,
        causal=causal,
        frozen_fraction=frozen,
    )
    core = fl.forward_by_component["attention_core"]
    # The linear layers' weight gradients (2 FLOPs per weight per token, as their forward);
    # the attention core has no weights: its backward is all input gradient.
    weight = (fl.forward - core) * (1.0 - frozen)
    total = fl.hardware_flops
    forward = fl.forward / total
    w = weight / total
    return forward, 1.0 - forward - w, w


def pass_shares(spec: ModelSpec, work: TrainWork) -> tuple[float, float, float]:
    """Shares of one micro-batch's time in its forward (T_F), its input-gradient backward (T_B,
    recomputation included: it runs before B) and its weight-gradient backward (T_W), by their
    FLOPs (``suanli.estimate.flops``; the non-matmul ops taken in the same shares). T_W <= T_F
    always: W repeats the forward's linear GEMMs, never the attention core. 1F1B needs none of
    them (its bubble is whole micro-batches): ``(1, 0, 0)`` without counting."""
    if work.parallel.pp_schedule == "1f1b":
        return 1.0, 0.0, 0.0
    return _shares(
        spec,
        work.seq,
        work.recompute,
        work.recompute_every,
        work.attention != "eager",
        1.0 if work.is_lora else 0.0,
    )


def bubble_s(
    schedule: str,
    pp: Any,
    vpp: int,
    per_micro_s: Any,
    hop_s: Any,
    shares: tuple[float, float, float],
) -> Any:
    """Fill and drain per step (``pp`` > 1): idle compute time plus a forward and a backward
    transfer (``hop_s`` each) per fill step.

    1F1B: ``(p-1)(T_F+T_B+T_W)``, ``/vpp`` interleaved (Narayanan et al. 2021). ZB-H1:
    ``(p-1)(T_F+T_B-T_W)`` (Qi et al. 2024 §2.1). DualPipe: ``(p/2-1)(F&B + B - 3W)`` with
    ``F&B = T_F+T_B+T_W`` (a forward and a backward chunk overlapped: their compute adds, their
    communication hides) and ``B = T_B+T_W`` (DeepSeek-V3 report, Table 2), i.e.
    ``(p/2-1)(T_F + 2T_B - T_W)``, over ``p/2-1`` fill steps."""
    if schedule == "zb-h1":
        f, b, w = shares
        return (pp - 1) * (per_micro_s * (f + b - w) + 2 * hop_s)
    if schedule == "dualpipe":
        f, b, w = shares
        return (pp / 2 - 1) * (per_micro_s * (f + 2 * b - w) + 2 * hop_s)
    return (pp - 1) * (per_micro_s / vpp + 2 * hop_s)


def exposed_s(
    schedule: str,
    a2a_s: Any,
    hop_s: Any,
    per_micro_s: Any,
    vpp: int,
    shares: tuple[float, float, float],
    micro_batches: Any,
) -> tuple[Any, Any]:
    """Exposed (expert all-to-all, pipeline transfer) seconds per step with ``pp`` > 1:
    DualPipe's (:func:`dualpipe_exposed_s`), else the all-to-alls whole and 1F1B's transfers
    (:func:`suanli.estimate.comm.pipeline_p2p_s`; ZB-H1 sends as 1F1B does)."""
    if schedule == "dualpipe":
        return dualpipe_exposed_s(a2a_s, hop_s, per_micro_s, shares, micro_batches)
    return a2a_s * micro_batches, pipeline_p2p_s(hop_s, per_micro_s, vpp, micro_batches)


def dualpipe_exposed_s(
    a2a_s: Any,
    hop_s: Any,
    per_micro_s: Any,
    shares: tuple[float, float, float],
    micro_batches: Any,
) -> tuple[Any, Any]:
    """DualPipe's exposed (expert all-to-all, pipeline transfer) seconds per step.

    ``a2a_s``: one micro-batch's all-to-alls on this stage (dispatch and combine, forward and
    backward: half each way); ``hop_s``: one stage transfer (an activation out in forward, a
    gradient out in backward). Each forward chunk is paired with another micro-batch's backward
    chunk (DeepSeek-V3 report §3.2.1, Figure 4): the forward's communication runs under the
    backward's compute (T_B + T_W) and the backward's under the forward's (T_F); what outlasts
    them stays exposed, shared between the two kinds in proportion to their time."""
    f, b, w = shares
    one_way = a2a_s / 2 + hop_s
    fwd = one_way - per_micro_s * (b + w)
    bwd = one_way - per_micro_s * f
    exposed = fwd * (fwd > 0) + bwd * (bwd > 0)
    total = a2a_s + 2 * hop_s
    a2a_share = a2a_s / (total + (total <= 0))
    return exposed * a2a_share * micro_batches, exposed * (1 - a2a_share) * micro_batches


def in_flight(schedule: str, pp: Any, vpp: int, micro_batches: Any, minimum: Any = min) -> Any:
    """Micro-batches whose activations the first stage holds at once (``pp`` > 1): ``min(p, m)``
    in 1F1B and ZB-H1 (Qi et al. 2024 §2.1: ZB-H1 keeps 1F1B's peak), times
    ``1 + (p-1)/(p·vpp)`` interleaved (Korthikanti et al. 2022 §4.2.3); ``p + 1`` in DualPipe
    (DeepSeek-V3 report, Table 2)."""
    if schedule == "dualpipe":
        return minimum(pp + 1, micro_batches) * 1.0
    held = minimum(pp, micro_batches) * 1.0
    if vpp > 1:
        held = held * (1 + (pp - 1) / (pp * vpp))
    return held


def parameter_copies(schedule: str) -> int:
    """Copies of its stage's parameters (and their gradients and optimizer states) a rank holds:
    2 in DualPipe (stage ``i`` and stage ``p-1-i``, DeepSeek-V3 report Table 2), else 1."""
    return 2 if schedule == "dualpipe" else 1


def bubble_formula(schedule: str) -> tuple[str, str]:
    """The bubble's formula and its source (message ids), for ``--explain``."""
    if schedule == "zb-h1":
        return (
            N_(
                "(pp - 1) x (T_F + T_B - T_W): weight gradients fill the drain "
                "(T_F : T_B : T_W by FLOPs)"
            ),
            N_("ZB-H1 schedule (Qi et al. 2024, arXiv:2401.10241, §2.1)"),
        )
    if schedule == "dualpipe":
        return (
            N_(
                "(pp/2 - 1) x (F&B + B - 3W) = (pp/2 - 1) x (T_F + 2·T_B - T_W), "
                "micro-batches fed from both ends (T_F : T_B : T_W by FLOPs)"
            ),
            N_("DualPipe (DeepSeek-V3 Technical Report, arXiv:2412.19437, §3.2.1 and Table 2)"),
        )
    return N_("(pp - 1) / vpp x one micro-batch's time"), N_(
        "1F1B schedule (Narayanan et al. 2021)"
    )


#: ``--explain``'s formula of the communication DualPipe's chunk pairs hide.
DUALPIPE_HIDDEN = N_(
    "max(0, forward chunk's share - paired backward chunk's compute) + max(0, backward "
    "chunk's share - paired forward chunk's compute) per micro-batch (DualPipe)"
)
