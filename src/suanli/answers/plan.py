"""Which GPU, how many, how laid out, how long and how much? Every candidate GPU with its best
layout, ranked, each saying why it won or lost (``suanli plan``, ``POST /api/plan``,
:func:`suanli.plan`)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, fields, replace
from typing import Any

from suanli.answers.bands import with_row_bands
from suanli.answers.base import FLATTEN_OPTIONAL, NOT_IN_JSON, OMIT_NONE, Answer
from suanli.answers.model_source import load_model
from suanli.answers.plan_policy import (
    candidate_gpus,
    plan_groups,
    software_stack,
    stack_demotions,
)
from suanli.answers.plan_rendering import RenderingPlanAnswer as RenderingPlanAnswer
from suanli.answers.plan_rendering import RenderingRow as RenderingRow
from suanli.answers.plan_rendering import rendering_rows
from suanli.answers.request import WorkRequest, build_work
from suanli.answers.serving_load import OUTPUT_TOKENS, PROMPT_TOKENS, request_shape
from suanli.answers.validity import training_lack
from suanli.catalog import GPU, load_catalog
from suanli.catalog.prices import Price, rents_by_id, usd_of
from suanli.estimate.workload import InferWork, TrainWork
from suanli.i18n import N_
from suanli.models.presets import DEFAULT_MODEL
from suanli.models.resolve import LoadedModel
from suanli.models.spec import ModelSpec
from suanli.plan.scenarios import SCENARIOS

OBJECTIVES = ("time", "cost", "cost-per-token")
#: The GPU count searched when neither the request nor a scenario gives one.
DEFAULT_MAX_GPUS = 8


@dataclass(frozen=True)
class PlanRequest:
    """The planning question: a model and the shape of its work; the layout is searched."""

    model: str = DEFAULT_MODEL
    work: WorkRequest = field(default_factory=WorkRequest)
    """The work's shape (seq, dtype, optimizer, ...); its layout fields are ignored."""
    task: str | None = None
    """Default: the scenario's, else lora (``work.task`` is not used)."""
    quant: str | None = None
    """Inference: fix the weight format (default: search the formats)."""
    scenario: str | None = None
    gpus: tuple[str, ...] = ()
    """Only these GPUs (names or ids)."""
    vendors: tuple[str, ...] = ()
    form_factors: tuple[str, ...] = ()
    min_memory_gib: float | None = None
    max_gpus: int | None = None
    """Largest GPU count to consider (default: the scenario's, else 8)."""
    max_gpus_cap: int | None = None
    """A front-end's ceiling on max_gpus for training (the web page's); the answer says when it
    applied."""
    max_gpus_cap_infer: int | None = None
    """The same ceiling for inference (default: ``max_gpus_cap``)."""
    exact_gpus: int | None = None
    global_batch: int | None = None
    tokens: float = 1e8
    """Training tokens, for time and cost."""
    rps: float | None = None
    """Inference: requests per second to serve."""
    prompt: int = PROMPT_TOKENS
    """Inference: prompt tokens per request."""
    output: int = OUTPUT_TOKENS
    """Inference: output tokens per request."""
    max_tpot_ms: float | None = None
    objective: str | None = None
    """time, cost or cost-per-token (default: the scenario's; cost-per-token for inference)."""
    budget: float | None = None
    """USD limit."""
    rent: float | None = None
    """Rent per GPU-hour in USD for every candidate GPU, shown as ``given`` (default: each
    GPU's, the one every view shows: :func:`suanli.catalog.prices.rent_price`)."""
    stack_ok: bool = False
    """Rank every software stack by speed alone (by default, with a Hugging Face-family framework,
    GPUs whose stack is not CUDA are ranked after the CUDA ones: docs/plan.md)."""
    catalog_file: str | None = None


@dataclass(frozen=True, kw_only=True)
class TrainLayout:
    """The best training layout found on one GPU type."""

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
    time_s: float | None
    cost_usd: float | None
    usd_per_million_tokens: float | None
    options: str
    """The layout as options to paste into ``suanli perf``."""


@dataclass(frozen=True, kw_only=True)
class TrainPlanRow:
    """One GPU type: its best layout, or why none fits."""

    gpu: str
    evaluated: int
    """Layouts tried."""
    fitting: int
    """Layouts that fit in memory."""
    fits: bool
    layout: TrainLayout | None = field(default=None, metadata=FLATTEN_OPTIONAL)
    reason: str = ""
    """Why it lost ('' for the winner and rows without a comparison)."""
    software_stack: str = ""
    group: str | None = field(default=None, metadata=OMIT_NONE)
    """``buy-or-rent`` (consumer and workstation cards, ranked first for a personal fine-tune,
    each group compared within itself) or ``datacenter``; absent when the plan is not grouped."""
    rent: Price | None = None
    """The rent per GPU-hour the cost stands on, with its provider, kind and date: the one
    every view shows for the card, or the request's (``given``); null when none is known."""
    band: dict[str, list[float]] | None = None
    """The layout's figures' likely range, as perf's ``band`` for this layout (the 80%
    prediction interval of measured / estimated speed in its regime's published runs); None
    where the regime has too few or no layout fits."""
    band_basis: dict[str, Any] | None = None
    """The band's cell, rows, sources and coverage (as perf's)."""
    unvalidated: str | None = None
    """Why a fitting layout has no band (its regime is unvalidated); null otherwise."""

    @property
    def runnable(self) -> bool:
        """A layout that fits and was not ruled out: one the plan can recommend or emit."""
        return self.fits and not self.reason and self.layout is not None


@dataclass(frozen=True, kw_only=True)
class ServeLayout:
    """The best serving layout found on one GPU type."""

    gpus: int
    tp: int
    replicas: int
    weight_format: str
    kv_dtype: str
    batch: int
    memory_bytes: float
    ttft_s: float
    tpot_s: float
    tokens_per_s: float
    requests_per_s: float
    usd_per_hour: float | None
    usd_per_million_tokens: float | None
    options: str


@dataclass(frozen=True, kw_only=True)
class ServePlanRow:
    """One GPU type for serving: its best layout, or why none fits."""

    gpu: str
    evaluated: int
    software_stack: str
    fits: bool
    reason: str
    layout: ServeLayout | None = field(default=None, metadata=FLATTEN_OPTIONAL)
    rent: Price | None = None
    """The rent per GPU-hour the cost stands on (as :attr:`TrainPlanRow.rent`)."""
    band: dict[str, list[float]] | None = None
    """As :attr:`TrainPlanRow.band` (tokens/s, TTFT, TPOT, cost per token)."""
    band_basis: dict[str, Any] | None = None
    """As :attr:`TrainPlanRow.band_basis`."""
    unvalidated: str | None = None
    """As :attr:`TrainPlanRow.unvalidated`."""

    @property
    def runnable(self) -> bool:
        """A layout that fits and was not ruled out: one the plan can recommend or emit."""
        return self.fits and not self.reason and self.layout is not None


@dataclass(frozen=True, kw_only=True)
class PlanAnswer(Answer):
    """Candidate GPUs, best first, each with its best layout and why the others lost."""

    schema_name = "plan"

    model: str
    task: str
    objective: str
    max_gpus: int
    scenario: str | None
    reasoning: str
    """The scenario's reasoning ('' without one)."""
    tokens: float | None
    """Training tokens (None for inference)."""
    rows: tuple[TrainPlanRow, ...] | tuple[ServePlanRow, ...]
    capped: str | None = field(default=None, metadata=OMIT_NONE)
    """Set when a front-end's cap lowered max_gpus."""
    exact_gpus: int | None = field(default=None, metadata=OMIT_NONE)
    """Set when the search was held to exactly this many GPUs (``--gpus``)."""
    assumptions: tuple[str, ...] = ()
    """Inference: the requests it plans for (the shape perf, compare and capacity take)."""
    ranked_after_cuda: dict[str, str] | None = field(default=None, metadata=OMIT_NONE)
    """GPU id -> why it ranks after the CUDA cards (a Hugging Face-family framework on another
    software stack; ``stack_ok`` lifts it); absent when none is."""
    seq: int = field(default=2048, metadata=NOT_IN_JSON)
    context: int = field(default=0, metadata=NOT_IN_JSON)
    """Inference: tokens per sequence the KV cache holds (0 for training)."""
    inference: bool = field(default=False, metadata=NOT_IN_JSON)
    best_command: str | None = field(default=None, metadata=NOT_IN_JSON)
    """``suanli perf`` options for the winner."""
    cheapest: ServePlanRow | TrainPlanRow | None = field(default=None, metadata=NOT_IN_JSON)
    """The fitting row with the lowest cost per token."""


def _layout(cls: type, row: dict[str, Any]) -> Any:
    return cls(**{f.name: row[f.name] for f in fields(cls)}) if row["fits"] else None


def train_rows(
    spec: ModelSpec,
    work: TrainWork,
    gpus: list[GPU],
    max_gpus: int,
    exact: int | None,
    global_batch: int | None,
    tokens: float,
    objective: str,
    budget: float | None,
    groups: dict[str, int] | None = None,
    demoted: dict[str, str] | None = None,
    rents: dict[str, Price | None] | None = None,
) -> tuple[TrainPlanRow, ...]:
    """The best training layout per GPU, ranked (plan.search); ``rents``: each GPU's rent
    (default: :func:`suanli.catalog.prices.rents_by_id`)."""
    from suanli.plan.search import SearchSpace, rank, search_train

    groups = groups or {}
    label = {0: "buy-or-rent", 1: "datacenter"}
    rent = rents if rents is not None else rents_by_id(gpus)

    space = SearchSpace(max_gpus=max_gpus, global_batch=global_batch, exact_gpus=exact)
    # A card without units for the dtype or kernels for the attention is never ranked: say why.
    refused = {g.id: training_lack(g, work) for g in gpus}
    results = [
        search_train(spec, work, gpu, space, objective, usd_of(rent[gpu.id]))
        for gpu in gpus
        if not refused[gpu.id]
    ]
    by_id = {g.id: g for g in gpus}
    rows = [
        TrainPlanRow(
            gpu=row["gpu"],
            evaluated=row["evaluated"],
            fitting=row["fitting"],
            fits=row["fits"],
            layout=_layout(TrainLayout, row),
            reason=row["reason"],
            software_stack=software_stack(by_id[row["gpu"]]),
            group=label[groups[row["gpu"]]] if groups else None,
            rent=rent[row["gpu"]],
        )
        for row in rank(results, objective, tokens, budget, groups=groups, demoted=demoted)
    ]
    rows += [
        TrainPlanRow(
            gpu=gpu.id,
            evaluated=0,
            fitting=0,
            fits=False,
            reason=str(refused[gpu.id]),
            software_stack=software_stack(gpu),
            group=label[groups[gpu.id]] if groups else None,
            rent=rent[gpu.id],
        )
        for gpu in gpus
        if refused[gpu.id]
    ]
    return tuple(rows)


def serve_rows(
    spec: ModelSpec,
    work: InferWork,
    gpus: list[GPU],
    max_gpus: int,
    rps: float | None,
    output: int,
    objective: str,
    max_tpot_ms: float | None,
    fixed_format: bool,
    rents: dict[str, Price | None] | None = None,
) -> tuple[ServePlanRow, ...]:
    """The best serving layout per GPU (format, KV dtype, TP, batch, replicas), ranked;
    ``rents``: each GPU's rent (default: :func:`suanli.catalog.prices.rents_by_id`)."""
    from suanli.plan.serve_search import SERVE_FORMATS, search_serve

    formats = (work.weight_format,) if fixed_format else SERVE_FORMATS
    rent = rents if rents is not None else rents_by_id(gpus)
    rows: list[dict[str, Any]] = []
    for gpu in gpus:
        best, evaluated, reason = search_serve(
            spec,
            gpu,
            context=work.context,
            output=output,
            max_gpus=max_gpus,
            rps=rps,
            objective=objective,
            max_tpot_s=max_tpot_ms / 1e3 if max_tpot_ms else None,
            formats=formats,
            projections=work.projections,
            kernels=work.kernels,
            dispatch=work.dispatch,
            options=work,
            price_per_gpu_hour=usd_of(rent[gpu.id]),
        )
        row: dict[str, Any] = {"gpu": gpu.id, "evaluated": evaluated, "stack": software_stack(gpu)}
        if best is None:
            row.update({"fits": False, "reason": reason})
        else:
            per_m = (
                best.usd_per_hour / 3600 / best.tokens_per_s * 1e6 if best.usd_per_hour else None
            )
            row.update(
                fits=True,
                reason="",
                gpus=best.gpus,
                tp=best.tp,
                replicas=best.replicas,
                weight_format=best.weight_format,
                kv_dtype=best.kv_dtype,
                batch=best.batch,
                memory_bytes=best.memory_bytes,
                ttft_s=best.ttft_s,
                tpot_s=best.tpot_s,
                tokens_per_s=best.tokens_per_s,
                requests_per_s=best.requests_per_s,
                usd_per_hour=best.usd_per_hour,
                usd_per_million_tokens=per_m,
                options=best.options(),
            )
        rows.append(row)

    def key(row: dict[str, Any]) -> tuple[int, float]:
        if not row["fits"]:
            return (2, 0.0)
        if objective == "time":
            return (0, row["tpot_s"] * row["gpus"])
        value = row["usd_per_million_tokens"]
        return (0, value) if value is not None else (1, row["gpus"])

    rows.sort(key=key)
    fitting = [r for r in rows if r["fits"] and r.get("usd_per_million_tokens")]
    for row in fitting[1:]:
        ratio = row["usd_per_million_tokens"] / fitting[0]["usd_per_million_tokens"]
        row["reason"] = N_("{ratio}x cost/token").format(ratio=f"{ratio:.1f}")
    for row in rows:
        if row["fits"] and row.get("usd_per_million_tokens") is None:
            row["reason"] = N_("no price known")
    return tuple(
        ServePlanRow(
            gpu=row["gpu"],
            evaluated=row["evaluated"],
            software_stack=row["stack"],
            fits=row["fits"],
            reason=row["reason"],
            layout=_layout(ServeLayout, row),
            rent=rent[row["gpu"]],
        )
        for row in rows
    )


def _best(
    rows: tuple[TrainPlanRow, ...] | tuple[ServePlanRow, ...],
) -> tuple[TrainPlanRow | ServePlanRow | None, TrainPlanRow | ServePlanRow | None]:
    winners = [r for r in rows if r.runnable]
    if not winners:
        return None, None
    # The cheapest per token among every row that can run it (not only the winner), leaving out
    # rows over the budget.
    every: list[TrainPlanRow | ServePlanRow] = list(rows)
    priced = [
        (r.layout.usd_per_million_tokens, i)
        for i, r in enumerate(every)
        if r.fits
        and r.layout is not None
        and r.layout.usd_per_million_tokens
        and not r.reason.startswith("over the budget")
    ]
    cheapest = every[min(priced)[1]] if priced else None
    return winners[0], cheapest


def plan(
    req: PlanRequest, *, loader: Callable[[str], LoadedModel] = load_model
) -> PlanAnswer | RenderingPlanAnswer:
    """Rank the candidate GPUs for ``req.model``, each with its best layout.

    Raises ``ValueError`` with one sentence on bad input (no GPU matching the filters, ...).
    """
    chosen = SCENARIOS.get(req.scenario) if req.scenario else None
    if req.scenario and chosen is None:
        raise ValueError(
            N_("unknown scenario {scenario!r}; use one of {choices}").format(
                scenario=req.scenario, choices=", ".join(SCENARIOS)
            )
        )
    task = req.task or (chosen.task if chosen else "lora")
    objective = req.objective or (
        chosen.objective if chosen else ("cost-per-token" if task == "infer" else "time")
    )
    if objective not in OBJECTIVES:
        raise ValueError(
            N_("--objective {objective!r} is not one of {choices}").format(
                objective=objective, choices=", ".join(OBJECTIVES)
            )
        )
    wanted = req.max_gpus or (chosen.max_gpus if chosen else DEFAULT_MAX_GPUS)
    cap = (req.max_gpus_cap_infer or req.max_gpus_cap) if task == "infer" else req.max_gpus_cap
    max_gpus = min(wanted, cap) if cap else wanted
    forms = req.form_factors or (chosen.form_factors if chosen else ())
    gpus = candidate_gpus(
        load_catalog(req.catalog_file), req.gpus, req.vendors, forms, req.min_memory_gib
    )
    if not gpus:
        raise ValueError(
            N_("no GPU matches the filters; loosen --vendor/--form-factor/--min-memory")
        )
    if req.scenario == "rendering-video":
        return RenderingPlanAnswer(
            scenario=req.scenario,
            reasoning=chosen.reasoning if chosen else "",
            rows=rendering_rows(gpus),
        )
    spec = loader(req.model).spec
    shape = req.work.shape_only(task, req.quant or "bf16")
    if task == "infer" and not _given(req.work, "context"):
        # The serving question's requests, as perf, compare and capacity take them: the KV
        # cache holds each request's prompt and output (--context sets a longer reservation).
        shape = replace(shape, context=req.prompt + req.output)
    work = build_work(shape)
    demoted = (
        {}
        if isinstance(work, InferWork)
        else stack_demotions(req.work.framework, gpus, req.stack_ok)
    )
    rows: tuple[TrainPlanRow, ...] | tuple[ServePlanRow, ...]
    rents = rents_by_id(gpus, req.rent)
    if isinstance(work, InferWork):
        rows = serve_rows(
            spec,
            work,
            gpus,
            max_gpus,
            req.rps,
            req.output,
            objective,
            req.max_tpot_ms,
            req.quant is not None,
            rents=rents,
        )
    else:
        rows = train_rows(
            spec,
            work,
            gpus,
            max_gpus,
            req.exact_gpus,
            req.global_batch,
            req.tokens,
            objective,
            req.budget,
            groups=plan_groups(task, gpus, forms),
            demoted={g: N_("ranked after CUDA") for g in demoted},
            rents=rents,
        )
    rows = with_row_bands(rows, gpus, framework=req.work.framework, moe=spec.is_moe, task=task)
    best, cheapest = _best(rows)
    command = None
    if best is not None and best.layout is not None:
        command = (
            f"suanli perf {req.model} {best.layout.options} "
            f"--prompt {work.context - req.output} --output {req.output}"
            if isinstance(work, InferWork)
            else f"suanli perf {req.model} --task {task} --seq {work.seq} {best.layout.options}"
        )
    capped = None
    if wanted > max_gpus:
        capped = N_(
            "the web page searches up to {gpus} GPUs for {task}; run 'suanli plan' with "
            "--max-gpus {wanted} for the full search"
        ).format(gpus=max_gpus, task=task, wanted=wanted)
    return PlanAnswer(
        model=req.model,
        task=task,
        objective=objective,
        max_gpus=max_gpus,
        scenario=req.scenario,
        reasoning=chosen.reasoning if chosen else "",
        tokens=req.tokens if not isinstance(work, InferWork) else None,
        rows=rows,
        capped=capped,
        exact_gpus=req.exact_gpus,
        seq=work.seq if isinstance(work, TrainWork) else 0,
        context=work.context if isinstance(work, InferWork) else 0,
        inference=isinstance(work, InferWork),
        best_command=command,
        cheapest=cheapest,
        ranked_after_cuda={g: why for g, why in demoted.items() if _shown(rows, g)} or None,
        assumptions=(request_shape(work.context - req.output, req.output),)
        if isinstance(work, InferWork)
        else (),
    )


def _given(work: WorkRequest, name: str) -> bool:
    """Whether the user set the workload option ``name`` (not left at its default)."""
    if work.explicit is not None:
        return name in work.explicit
    return bool(getattr(work, name) != getattr(WorkRequest, name))


def _shown(rows: tuple[TrainPlanRow, ...] | tuple[ServePlanRow, ...], gpu: str) -> bool:
    """Whether ``gpu`` is a row that can run the job (the ones whose rank a note explains)."""
    return any(r.gpu == gpu and r.fits for r in rows)
