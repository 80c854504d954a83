"""Layout search: the fastest (or cheapest) layout that fits, per GPU, vectorized over candidates.

For training, every GPU count up to ``max_gpus`` (powers of two) is split into tensor x pipeline
x data parallel degrees, with ZeRO stages, recomputation modes and micro-batches; gradient
accumulation keeps the global batch. Memory and speed come from :mod:`suanli.estimate.vector`,
which computes exactly what the scalar estimators compute. ``brute_force_train`` runs the same
candidates through the scalar functions one by one; tests check both pick the same layout.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, fields, replace
from functools import lru_cache
from typing import Any

from suanli.catalog.gpu import GPU
from suanli.catalog.prices import rent_price
from suanli.estimate.device import device_for
from suanli.estimate.memory import training_memory
from suanli.estimate.perf import training_perf
from suanli.estimate.workload import Parallelism, TrainWork
from suanli.i18n import N_, join, message_of
from suanli.models.spec import ModelSpec

OBJECTIVES = ("time", "cost", "cost-per-token")
RECOMPUTE_CHOICES = ("none", "selective", "full")
MICRO_BATCHES = (1, 2, 4, 8, 16)


def rent_usd(gpu: GPU, given_usd_per_hour: float | None = None) -> float | None:
    """USD per GPU-hour of ``gpu``: the user's rent, else the one every view shows
    (:func:`suanli.catalog.prices.rent_price`), None when none is known."""
    price = rent_price(gpu, override_usd_per_hour=given_usd_per_hour)
    return price.usd if price is not None else None


@dataclass(frozen=True, kw_only=True)
class Candidate:
    """One layout of one GPU type, with its predicted memory, speed and price."""

    gpu_id: str
    gpus: int
    tp: int
    pp: int
    dp: int
    zero: int
    sp: bool
    recompute: str
    batch: int
    grad_accum: int
    memory_bytes: float
    tokens_per_s: float
    mfu: float
    usd_per_hour: float | None
    """Rent for all the GPUs, when a price is known."""

    def options(self) -> str:
        """The layout as ``suanli`` options a user can paste."""
        parts = [
            f"--gpu {self.gpu_id}",
            f"--gpus {self.gpus}",
            f"--tp {self.tp}",
            f"--pp {self.pp}",
            f"--zero {self.zero}",
            f"--recompute {self.recompute}",
            f"--batch {self.batch}",
            f"--grad-accum {self.grad_accum}",
        ]
        if self.sp:
            parts.append("--sp")
        return " ".join(parts)


@dataclass(frozen=True, kw_only=True)
class GpuResult:
    """The search outcome for one GPU type."""

    gpu_id: str
    best: Candidate | None
    evaluated: int
    fitting: int
    reason: str = ""
    """Why this GPU has no answer, or lost (filled by :func:`rank`)."""


@dataclass(frozen=True, kw_only=True)
class SearchSpace:
    """What the search may change."""

    max_gpus: int = 8
    global_batch: int | None = None
    """Sequences per optimizer step; ``None`` lets each layout pick its own (grad_accum 1)."""
    gpus_per_node: int | None = None
    micro_batches: tuple[int, ...] = MICRO_BATCHES
    recompute: tuple[str, ...] = RECOMPUTE_CHOICES
    exact_gpus: int | None = None
    """Only this many GPUs (``--gpus``), instead of every power of two up to ``max_gpus``."""
    extra: dict[str, Any] = field(default_factory=dict)


def _counts(space: SearchSpace) -> list[int]:
    if space.exact_gpus:
        return [space.exact_gpus]
    return [2**i for i in range(int(math.log2(space.max_gpus)) + 1)]


def layouts(spec: ModelSpec, gpu: GPU, space: SearchSpace) -> list[dict[str, int]]:
    """Candidate layouts (without recomputation, which is searched per call)."""
    from suanli.catalog.network import default_gpus_per_node

    node = space.gpus_per_node or default_gpus_per_node(gpu)
    rows = []
    for n in _counts(space):
        for tp in (1, 2, 4, 8):
            if tp > n or n % tp or tp > node or spec.attention.num_heads % tp:
                continue
            pp = 1
            while tp * pp <= n and pp <= spec.num_layers:
                if n % (tp * pp) == 0:
                    dp = n // (tp * pp)
                    for zero in (1, 2, 3) if dp > 1 else (0,):
                        for batch in space.micro_batches:
                            if space.global_batch is not None:
                                if space.global_batch % (batch * dp):
                                    continue
                                accum = space.global_batch // (batch * dp)
                            else:
                                accum = max(1, pp)  # enough micro-batches to fill the pipeline
                            rows.append(
                                {
                                    "tp": tp,
                                    "pp": pp,
                                    "dp": dp,
                                    "zero": zero,
                                    "batch": batch,
                                    "grad_accum": accum,
                                    "sp": int(tp > 1),
                                }
                            )
                pp *= 2
    return rows


@dataclass(frozen=True, kw_only=True)
class _MemoryQuestion:
    """What :func:`suanli.estimate.vector.train_memory` answers from: the model, the workload
    and the layouts (compared by their bytes; the arrays ride along unhashed)."""

    spec: ModelSpec
    work: TrainWork
    columns: bytes
    layouts: Any = field(compare=False, hash=False)


@lru_cache(maxsize=32)
def _train_memory(question: _MemoryQuestion) -> Any:
    """Per-GPU bytes of every layout, computed once per model, workload and layouts: they do
    not depend on the card, and a plan searches the same layouts on every card of the catalog
    (258 calls, 3 different, for ``suanli plan``). The array is shared: read it, never write."""
    from suanli.estimate import vector

    return vector.train_memory(question.spec, question.work, question.layouts)


def _layout_bytes(lay: Any) -> bytes:
    """Every column of ``lay`` (arrays of one length), its type and values, as one string."""
    arrays = (getattr(lay, f.name) for f in fields(lay))
    return b"|".join(a.dtype.str.encode() + a.tobytes() for a in arrays)


def search_train(
    spec: ModelSpec,
    base: TrainWork,
    gpu: GPU,
    space: SearchSpace,
    objective: str = "time",
    price_per_gpu_hour: float | None = None,
) -> GpuResult:
    """The best fitting layout of ``gpu`` for ``base`` (vectorized)."""
    import numpy as np

    from suanli.estimate import vector

    if objective not in OBJECTIVES:
        raise ValueError(
            N_("--objective {objective!r} is not one of {choices}").format(
                objective=objective, choices=", ".join(OBJECTIVES)
            )
        )
    try:
        device = device_for(gpu, base.dtype, gpus_per_node=space.gpus_per_node)
    except ValueError as exc:
        return GpuResult(gpu_id=gpu.id, best=None, evaluated=0, fitting=0, reason=message_of(exc))
    rows = layouts(spec, gpu, space)
    if not rows:
        return GpuResult(
            gpu_id=gpu.id,
            best=None,
            evaluated=0,
            fitting=0,
            reason=N_("no layout divides the GPU counts"),
        )
    lay = vector.Layouts.of(**{k: [r[k] for r in rows] for k in rows[0]})
    columns = _layout_bytes(lay)
    price = rent_usd(gpu, price_per_gpu_hour)
    per_count: dict[int, tuple[float, Candidate]] = {}
    fitting = 0
    for recompute in space.recompute:
        work = replace(base, recompute=recompute)
        memory = _train_memory(_MemoryQuestion(spec=spec, work=work, columns=columns, layouts=lay))
        ok = memory <= gpu.memory_bytes
        fitting += int(ok.sum())
        if not ok.any():
            continue  # no speed to time: about half the cards of a plan fit no layout
        speed = vector.train_speed(spec, work, lay, device)
        gpus = lay.tp * lay.pp * lay.dp
        tps = speed["tokens_per_s"]
        if objective == "time":
            key = tps
        elif not price:
            # No price: the cost per token of any price falls with the tokens per GPU.
            key = tps / gpus
        else:
            key = tps / (gpus * price)  # tokens per dollar
        key = np.where(ok, key, -np.inf)
        # Not np.unique: it imports numpy.ma (10 ms of every plan's start).
        for count in sorted(set(gpus[ok].tolist())):
            i = int(np.argmax(np.where(gpus == count, key, -np.inf)))
            if count in per_count and key[i] <= per_count[int(count)][0]:
                continue
            per_count[int(count)] = (
                float(key[i]),
                Candidate(
                    gpu_id=gpu.id,
                    gpus=int(gpus[i]),
                    tp=int(lay.tp[i]),
                    pp=int(lay.pp[i]),
                    dp=int(lay.dp[i]),
                    zero=int(lay.zero[i]),
                    sp=bool(lay.sp[i]),
                    recompute=recompute,
                    batch=int(lay.batch[i]),
                    grad_accum=int(lay.grad_accum[i]),
                    memory_bytes=float(memory[i]),
                    tokens_per_s=float(tps[i]),
                    mfu=float(speed["mfu"][i]),
                    usd_per_hour=float(price) * int(gpus[i]) if price else None,
                ),
            )
    best = choose(per_count, objective)
    evaluated = len(rows) * len(space.recompute)
    most_gpus = max(_counts(space))
    reason = (
        ""
        if best
        else (
            N_("does not fit in {gib:.0f} GiB on 1 GPU")
            if most_gpus == 1
            else N_("does not fit in {gib:.0f} GiB at up to {gpus} GPUs")
        ).format(gib=gpu.memory_bytes / 2**30, gpus=most_gpus)
    )
    return GpuResult(gpu_id=gpu.id, best=best, evaluated=evaluated, fitting=fitting, reason=reason)


def brute_force_train(
    spec: ModelSpec, base: TrainWork, gpu: GPU, space: SearchSpace, objective: str = "time"
) -> Candidate | None:
    """The same search, one scalar estimate at a time (slow; for tests on small spaces)."""
    device = device_for(gpu, base.dtype, gpus_per_node=space.gpus_per_node)
    price = rent_usd(gpu)
    per_count: dict[int, tuple[float, Candidate]] = {}
    for recompute in space.recompute:
        for r in layouts(spec, gpu, space):
            par = Parallelism(
                dp=r["dp"],
                tp=r["tp"],
                pp=r["pp"],
                zero=r["zero"],
                sp=bool(r["sp"]),
                ep=base.parallel.ep,
                etp=base.parallel.etp,
                vpp=base.parallel.vpp,
            )
            work = replace(
                base,
                recompute=recompute,
                parallel=par,
                batch=r["batch"],
                grad_accum=r["grad_accum"],
            )
            memory = training_memory(spec, work).total_bytes
            if memory > gpu.memory_bytes:
                continue
            perf = training_perf(spec, work, device)
            gpus = par.gpus
            if objective == "time":
                key = perf.tokens_per_s
            elif not price:
                key = perf.tokens_per_s / gpus
            else:
                key = perf.tokens_per_s / (gpus * price)
            if gpus not in per_count or key > per_count[gpus][0]:
                per_count[gpus] = (
                    key,
                    Candidate(
                        gpu_id=gpu.id,
                        gpus=gpus,
                        tp=par.tp,
                        pp=par.pp,
                        dp=par.dp,
                        zero=par.zero,
                        sp=par.sp,
                        recompute=recompute,
                        batch=r["batch"],
                        grad_accum=r["grad_accum"],
                        memory_bytes=memory,
                        tokens_per_s=perf.tokens_per_s,
                        mfu=perf.mfu(device.peak_flops),
                        usd_per_hour=price * gpus if price else None,
                    ),
                )
    return choose(per_count, objective)


#: For cost objectives, a layout on more GPUs must be this much cheaper per token than the
#: best on fewer to be chosen: a second card that only matches the first's cost per token
#: doubles what is bought or rented for no saving (two GeForce cards for a job one runs).
MORE_GPUS_MARGIN = 0.05


def choose(per_count: dict[int, tuple[float, Candidate]], objective: str) -> Candidate | None:
    """The best candidate of each GPU count -> the one to recommend. By time: the fastest. By
    cost: the fewest GPUs whose tokens per dollar (without a price: tokens per GPU) is within
    :data:`MORE_GPUS_MARGIN` of the best."""
    if not per_count:
        return None
    top = max(key for key, _ in per_count.values())
    if objective == "time":
        return max(per_count.values(), key=lambda kc: kc[0])[1]
    near = [count for count, (key, _) in per_count.items() if key >= top * (1 - MORE_GPUS_MARGIN)]
    return per_count[min(near)][1]


def rank(
    results: list[GpuResult],
    objective: str,
    tokens: float | None = None,
    budget_usd: float | None = None,
    *,
    groups: dict[str, int] | None = None,
    demoted: dict[str, str] | None = None,
) -> list[dict[str, Any]]:
    """Rows for the table and the JSON, best first, each saying why it won or lost.

    ``groups`` (GPU id -> 0, 1, ...) ranks lower groups first, each compared within itself
    (consumer and workstation cards before datacenter ones for a personal fine-tune);
    ``demoted`` (GPU id -> why) ranks those GPUs after the others of their group and says why
    (a software stack the workload's libraries do not support first)."""
    groups = groups or {}
    demoted = demoted or {}
    rows = []
    for res in results:
        row: dict[str, Any] = {
            "gpu": res.gpu_id,
            "evaluated": res.evaluated,
            "fitting": res.fitting,
        }
        if res.best is None:
            row.update({"fits": False, "reason": res.reason or N_("does not fit")})
            rows.append(row)
            continue
        c = res.best
        seconds = tokens / c.tokens_per_s if tokens else None
        cost = seconds / 3600 * c.usd_per_hour if (seconds and c.usd_per_hour) else None
        row.update(
            {
                "fits": True,
                "gpus": c.gpus,
                "tp": c.tp,
                "pp": c.pp,
                "dp": c.dp,
                "zero": c.zero,
                "sp": c.sp,
                "recompute": c.recompute,
                "batch": c.batch,
                "grad_accum": c.grad_accum,
                "memory_bytes": c.memory_bytes,
                "tokens_per_s": c.tokens_per_s,
                "mfu": c.mfu,
                "usd_per_hour": c.usd_per_hour,
                "time_s": seconds,
                "cost_usd": cost,
                "usd_per_million_tokens": (
                    c.usd_per_hour / 3600 / c.tokens_per_s * 1e6 if c.usd_per_hour else None
                ),
                "options": c.options(),
                "reason": "",
            }
        )
        if budget_usd is not None and cost is not None and cost > budget_usd:
            row["reason"] = N_("over the budget (${cost:,.0f} > ${budget:,.0f})").format(
                cost=cost, budget=budget_usd
            )
        rows.append(row)

    def key(row: dict[str, Any]) -> tuple[int, int, int, int, float]:
        tier, value = objective_key(row)
        if tier == 3:
            return (3, 0, 0, 0, 0.0)
        return (0, groups.get(row["gpu"], 0), tier, int(row["gpu"] in demoted), value)

    def objective_key(row: dict[str, Any]) -> tuple[int, float]:
        if not row["fits"]:
            return (3, 0.0)
        if row["reason"]:
            return (2, -row["tokens_per_s"])
        if objective == "time":
            return (0, -row["tokens_per_s"])
        per_token = row["usd_per_million_tokens"]
        if per_token is None:
            return (1, -row["tokens_per_s"])
        if objective == "cost" and row["cost_usd"] is not None:
            return (0, row["cost_usd"])
        return (0, per_token)

    rows.sort(key=key)
    for group in sorted({groups.get(r["gpu"], 0) for r in rows}):
        fitting = [
            r for r in rows if r["fits"] and not r["reason"] and groups.get(r["gpu"], 0) == group
        ]
        if not fitting:
            continue
        top = fitting[0]
        for row in fitting[1:]:
            if objective == "time":
                row["reason"] = N_("{ratio}x slower").format(
                    ratio=f"{top['tokens_per_s'] / row['tokens_per_s']:.1f}"
                )
            elif row["usd_per_million_tokens"] is None:
                row["reason"] = N_("no price known")
            elif top["usd_per_million_tokens"] is None:
                row["reason"] = N_("ranked by speed")
            else:
                ratio = row["usd_per_million_tokens"] / top["usd_per_million_tokens"]
                row["reason"] = N_("{ratio}x cost/token").format(ratio=f"{ratio:.1f}")
    for row in rows:
        note = demoted.get(row["gpu"])
        if note and row["fits"]:
            row["reason"] = join([row["reason"], note], N_("; ")) if row["reason"] else note
    return rows
