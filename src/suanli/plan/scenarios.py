"""Scenarios: documented weightings of what matters, with their reasoning (docs/plan.md).

A scenario only sets defaults (task, objective, which GPUs are candidates, what the table shows);
every one of them can still be overridden on the command line. Software-stack maturity is shown
as its own column with the catalog's note, never folded into a score.
"""

from __future__ import annotations

from dataclasses import dataclass

from suanli.i18n import N_


@dataclass(frozen=True, kw_only=True)
class Scenario:
    """Defaults and the reasoning behind them."""

    id: str
    task: str
    objective: str
    form_factors: tuple[str, ...]
    """Candidate form factors (empty: all)."""
    max_gpus: int
    reasoning: str


SCENARIOS: dict[str, Scenario] = {
    s.id: s
    for s in (
        Scenario(
            id="pretraining",
            task="pretrain",
            objective="time",
            form_factors=("sxm", "oam"),
            max_gpus=1024,
            reasoning=N_(
                "Memory capacity and the interconnect come first: a pretraining run is sharded "
                "over "
                "many GPUs, so NVLink/InfiniBand bandwidth and HBM size decide the layout and the "
                "MFU; ranked by time to train."
            ),
        ),
        Scenario(
            id="production-inference",
            task="infer",
            objective="cost-per-token",
            form_factors=(),
            max_gpus=64,
            reasoning=N_(
                "Bandwidth per token and latency: decode reads every weight per step, so HBM "
                "bandwidth, quantized weights and power decide cost per token; ranked by dollars "
                "per million tokens at the requested rate."
            ),
        ),
        Scenario(
            id="personal-finetune",
            task="qlora",
            objective="cost",
            form_factors=("consumer", "workstation", "pcie"),
            max_gpus=2,
            reasoning=N_(
                "Memory capacity must cover the need on one or two cards; consumer and workstation "
                "cards are candidates and price matters most; ranked by the cost of the run."
            ),
        ),
        Scenario(
            id="rendering-video",
            task="infer",
            objective="time",
            form_factors=(),
            max_gpus=1,
            reasoning=N_(
                "Not an AI workload: GPUs with ray-tracing units and a hardware encoder first, "
                "then "
                "memory (the scene must fit), ray-tracing units, encode/decode engines and AV1; "
                "CPUs are not ranked. The stack column matters (CUDA/OptiX vs ROCm/HIP vs Metal)."
            ),
        ),
    )
}
