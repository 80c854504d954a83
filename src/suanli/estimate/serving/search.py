"""Capacity planning: the fewest GPUs of each type that serve the requests within the SLOs.

:func:`plan_replicas` searches replica counts and tensor-parallel degrees for one GPU by
simulation (:func:`suanli.estimate.serving.simulate.simulate`); :func:`plan_capacity` ranks the
catalog GPUs by cost. Part of :mod:`suanli.estimate.serving`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from suanli.estimate.perf import Device
from suanli.estimate.serving.arrivals import Requests
from suanli.estimate.serving.config import EngineConfig
from suanli.estimate.serving.simulate import ServingResult, saturated_requests_per_s, simulate
from suanli.estimate.serving.timing import TP_CHOICES, ReplicaCost, replica_cost
from suanli.i18n import N_, join, message_of
from suanli.models.spec import ModelSpec


@dataclass(frozen=True, kw_only=True)
class CapacityRow:
    """The cheapest replica layout of one GPU type that meets the SLOs at the rate."""

    gpu_id: str
    fits: bool
    reason: str = ""
    tp: int = 0
    replicas: int = 0
    weight_format: str = ""
    result: ServingResult | None = None
    simulations: int = 0

    @property
    def gpus(self) -> int:
        """GPUs of the whole deployment."""
        return self.tp * self.replicas

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready row."""
        doc: dict[str, Any] = {
            "gpu": self.gpu_id,
            "fits": self.fits,
            "reason": self.reason,
            "tp": self.tp or None,
            "replicas": self.replicas or None,
            "gpus": self.gpus or None,
            "weight_format": self.weight_format or None,
            "simulations": self.simulations,
        }
        if self.result is not None:
            res = self.result.as_dict()
            res.pop("queue_series", None)
            for key in ("replicas", "tp", "gpus"):
                res.pop(key, None)
            doc.update(res)
        return doc


def device_dtype(weight_format: str) -> str:
    """The device dtype a weight format computes in: ``fp8`` for FP8 formats, else ``bf16``
    (:attr:`suanli.catalog.formats.WeightFormat.gemm_dtype`)."""
    from suanli.catalog.formats import get_format

    return get_format(weight_format).gemm_dtype


def plan_replicas(
    spec: ModelSpec,
    device: Device,
    memory_bytes: float,
    requests: Requests,
    *,
    slo_ttft_s: float | None,
    slo_tpot_s: float | None,
    config: EngineConfig | None = None,
    weight_format: str = "bf16",
    kv_dtype: str = "bf16",
    max_gpus: int = 64,
    gpus_per_node: int = 8,
    usd_per_gpu_hour: float | None = None,
    dispatch: str = "round-robin",
) -> tuple[int, int, ServingResult | None, int, str]:
    """The fewest GPUs (replicas x TP, TP within a node) meeting the SLOs on ``requests``.

    Per TP degree: a lower bound from one replica's saturated throughput, then exponential and
    binary search on the replica count, each candidate checked by simulation. Returns
    ``(tp, replicas, result, simulations, reason)``; ``result`` is ``None`` when nothing within
    ``max_gpus`` meets the SLOs, with the reason.
    """
    config = config or EngineConfig()
    if slo_ttft_s is not None and not slo_ttft_s > 0:
        raise ValueError(
            N_("--{option} must be > 0 seconds, got {value}").format(
                option="slo-ttft", value=slo_ttft_s
            )
        )
    if slo_tpot_s is not None and not slo_tpot_s > 0:
        raise ValueError(
            N_("--{option} must be > 0 seconds, got {value}").format(
                option="slo-tpot", value=slo_tpot_s
            )
        )
    ref = int(requests.prompt.mean() + requests.output.mean() / 2)
    longest = int((requests.prompt + requests.output).max())
    best: tuple[int, int, ServingResult] | None = None
    sims = 0
    reasons: list[str] = []
    for tp in TP_CHOICES:
        if tp > max_gpus or tp > gpus_per_node or spec.attention.num_heads % tp:
            continue
        if best is not None and tp >= best[0] * best[1]:
            break
        cost = replica_cost(
            spec,
            device,
            tp=tp,
            weight_format=weight_format,
            kv_dtype=kv_dtype,
            memory_bytes=memory_bytes,
            config=config,
            reference_context=ref,
        )
        if cost.kv_blocks * cost.block_size < longest:
            reasons.append(N_("tp{tp}: does not fit").format(tp=tp))
            continue
        # Unloaded latency bounds: one request alone.
        p, o = int(requests.prompt.mean()), int(requests.output.mean())
        alone_ttft = cost.iteration_s(p, 1, p * (p + 1) / 2, p, config.step_overhead_s)
        alone_tpot = cost.iteration_s(1, 1, p + o / 2, p + o / 2, config.step_overhead_s)
        if slo_tpot_s is not None and alone_tpot > slo_tpot_s:
            reasons.append(N_("tp{tp}: TPOT alone {ms:.1f} ms").format(tp=tp, ms=alone_tpot * 1e3))
            continue
        if slo_ttft_s is not None and alone_ttft > slo_ttft_s:
            reasons.append(N_("tp{tp}: TTFT alone {ms:.0f} ms").format(tp=tp, ms=alone_ttft * 1e3))
            continue
        limit = max_gpus // tp
        if best is not None:
            limit = min(limit, (best[0] * best[1] - 1) // tp)
        if limit < 1:
            continue
        # Saturated throughput of one replica bounds the replicas from below.
        saturated = saturated_requests_per_s(cost, requests, config)
        sims += 1
        span = float(requests.arrival_s[-1] - requests.arrival_s[0])
        rate = (len(requests) - 1) / span if span > 0 else math.inf
        lo = max(1, math.ceil(0.8 * rate / saturated)) if math.isfinite(rate) else 1
        if lo > limit:
            reasons.append(N_("tp{tp}: needs over {gpus} GPUs").format(tp=tp, gpus=limit * tp))
            continue

        def run(r: int, cost: ReplicaCost = cost) -> ServingResult:
            return simulate(
                cost,
                requests,
                config,
                replicas=r,
                dispatch=dispatch,
                usd_per_gpu_hour=usd_per_gpu_hour,
            )

        found: tuple[int, ServingResult] | None = None
        failed = lo - 1
        r = lo
        while r <= limit:
            res = run(r)
            sims += 1
            if res.meets(slo_ttft_s, slo_tpot_s):
                found = (r, res)
                break
            failed = r
            r = min(limit, r * 2) if r < limit else limit + 1
        if found is None:
            reasons.append(
                N_("tp{tp}: SLOs not met with {gpus} GPUs").format(tp=tp, gpus=limit * tp)
            )
            continue
        hi = found[0]
        while hi - failed > 1:
            mid = (hi + failed) // 2
            res = run(mid)
            sims += 1
            if res.meets(slo_ttft_s, slo_tpot_s):
                hi, found = mid, (mid, res)
            else:
                failed = mid
        if best is None or tp * found[0] < best[0] * best[1]:
            best = (tp, found[0], found[1])
    if best is None:
        return 0, 0, None, sims, join(reasons, N_("; ")) or N_("no tensor-parallel degree applies")
    return best[0], best[1], best[2], sims, ""


def plan_capacity(
    spec: ModelSpec,
    gpus: Sequence[Any],
    requests: Requests,
    *,
    slo_ttft_s: float | None,
    slo_tpot_s: float | None,
    config: EngineConfig | None = None,
    weight_format: str = "bf16",
    kv_dtype: str = "bf16",
    max_gpus: int = 64,
    price: float | None = None,
    progress: Callable[[str, int, int], None] | None = None,
) -> list[CapacityRow]:
    """Per catalog GPU, the cheapest deployment meeting the SLOs; ranked by cost per hour.

    ``price`` is the user's rent per GPU-hour for every GPU; without it each GPU's is the one
    every view shows (:func:`suanli.catalog.prices.rent_price`). GPUs without a price (and no
    ``price`` given) rank after the priced ones, by GPU count;
    those that cannot meet the SLOs come last with the reason.
    """
    from suanli.catalog.network import default_gpus_per_node
    from suanli.catalog.prices import rent_price
    from suanli.estimate.device import device_for

    rows: list[CapacityRow] = []
    dtype = device_dtype(weight_format)
    for i, gpu in enumerate(gpus):
        if progress is not None:
            progress(gpu.id, i, len(gpus))
        try:
            device = device_for(gpu, dtype)
        except ValueError as exc:
            rows.append(CapacityRow(gpu_id=gpu.id, fits=False, reason=message_of(exc)))
            continue
        rent = rent_price(gpu, override_usd_per_hour=price)
        usd = rent.usd if rent is not None else None
        tp, reps, result, sims, reason = plan_replicas(
            spec,
            device,
            gpu.memory_bytes,
            requests,
            slo_ttft_s=slo_ttft_s,
            slo_tpot_s=slo_tpot_s,
            config=config,
            weight_format=weight_format,
            kv_dtype=kv_dtype,
            max_gpus=max_gpus,
            gpus_per_node=default_gpus_per_node(gpu),
            usd_per_gpu_hour=float(usd) if usd is not None else None,
        )
        if result is None:
            rows.append(CapacityRow(gpu_id=gpu.id, fits=False, reason=reason, simulations=sims))
        else:
            rows.append(
                CapacityRow(
                    gpu_id=gpu.id,
                    fits=True,
                    reason="",
                    tp=tp,
                    replicas=reps,
                    weight_format=weight_format,
                    result=result,
                    simulations=sims,
                )
            )
    if progress is not None:
        progress("done", len(gpus), len(gpus))

    def key(row: CapacityRow) -> tuple[int, float, float]:
        if not row.fits or row.result is None:
            return (2, 0.0, 0.0)
        cost = row.result.usd_per_hour
        if cost is None:
            return (1, float(row.gpus), row.result.ttft_s["p95"])
        return (0, cost, float(row.gpus))

    rows.sort(key=key)
    return rows
