"""Will it fit? Memory per GPU, by component, and the fit on each card asked about
(``suanli mem``, ``POST /api/memory``, :func:`suanli.memory`)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from suanli.answers.base import NOT_IN_JSON, OMIT_NONE, Answer, from_result
from suanli.answers.devices import resolve_gpu
from suanli.answers.model_source import load_model
from suanli.answers.recompute import is_auto, settle_work
from suanli.answers.request import (
    WorkRequest,
    build_work,
    framework_assumptions,
    with_file_format,
    with_images,
)
from suanli.catalog import GPU
from suanli.estimate.activations import Term
from suanli.estimate.fitting import Fit, fit_inference, fit_training
from suanli.estimate.inference_memory import inference_memory
from suanli.estimate.memory import training_memory
from suanli.estimate.workload import InferWork, TrainWork
from suanli.models.presets import DEFAULT_MODEL
from suanli.models.resolve import LoadedModel
from suanli.models.spec import ModelSpec


@dataclass(frozen=True, kw_only=True)
class MemoryLine:
    """One explained line of the breakdown."""

    key: str
    """The bucket it adds to (weights, gradients, optimizer, activations, kv_cache, ...)."""
    label: str
    bytes: int
    formula: str
    source: str


@dataclass(frozen=True, kw_only=True)
class CardFit:
    """How the workload sits on one GPU model."""

    gpu: str
    """Catalog id."""
    name: str
    """The GPU's marketing name."""
    gpu_memory_bytes: int
    memory_bytes: int
    """The same capacity (the page's name for it)."""
    usable_bytes: int
    fits: bool
    headroom_bytes: int
    max_batch: int
    """Largest micro-batch (training) or concurrent sequences (inference) that fits; 0: none."""
    max_seq: int
    """Longest sequence (training) or context (inference) at the batch given; 0: none."""
    best_format: str | None
    """Inference: the highest-precision weight format that fits."""
    notes: tuple[str, ...]


@dataclass(frozen=True, kw_only=True)
class ToFit:
    """What to change for a training job that does not fit on the card to fit: the remedies of
    ``suanli fit``'s chain, in its order, up to the first configuration that fits."""

    changes: tuple[str, ...]
    """One sentence per change, in the order they are taken."""
    fits: bool
    """False: even the whole chain on this many GPUs does not fit (more GPUs: suanli plan)."""
    memory_bytes: float
    """Memory per GPU after the changes."""
    tokens_per_s: float
    """Training throughput after the changes."""
    options: str
    """The options that fit, to paste into ``suanli mem`` or ``perf``."""


@dataclass(frozen=True)
class MemoryRequest:
    """The memory question: a model, a workload, and the cards to check the fit on."""

    model: str = DEFAULT_MODEL
    """A preset name, a config.json path or folder, or a hub id (org/name)."""
    work: WorkRequest = field(default_factory=WorkRequest)
    gpu: str | None = None
    """Check the fit on this GPU (the document's ``fit``)."""
    cards: tuple[str, ...] = ()
    """More GPUs: one entry each in ``fits`` (after ``gpu``)."""
    catalog_file: str | None = None
    """Extra or overriding GPU entries (TOML)."""


@dataclass(frozen=True, kw_only=True)
class MemoryAnswer(Answer):
    """Bytes per GPU for one workload, how each line is computed, and the fit on each card."""

    schema_name = "memory"

    model: str
    task: str
    total_bytes: int
    breakdown: dict[str, int]
    """Bytes per bucket: weights, gradients, optimizer, activations, kv_cache, overhead..."""
    cpu_bytes: int
    """Host memory the workload needs (offloaded optimizer states)."""
    lines: tuple[MemoryLine, ...]
    assumptions: tuple[str, ...]
    fit: CardFit | None = field(default=None, metadata=OMIT_NONE)
    """The fit on ``gpu``, when one was given."""
    fits: tuple[CardFit, ...] = ()
    """The fit on every card asked about (``gpu`` first)."""
    settled: tuple[str, ...] = ()
    """What the answer chose for options left to it (``--recompute auto``), also among the
    assumptions: views show it with the table."""
    to_fit: ToFit | None = field(default=None, metadata=OMIT_NONE)
    """Training that does not fit on ``gpu``: the changes that make it fit."""
    per_layer: tuple[Term, ...] = field(default=(), metadata=NOT_IN_JSON)
    """Activation terms of one layer (bytes per token), for --explain."""
    inference: bool = field(default=False, metadata=NOT_IN_JSON)


def card_fit(fit: Fit, name: str) -> CardFit:
    """The answer's view of an estimator :class:`Fit` (bytes rounded to whole bytes)."""
    return from_result(
        CardFit,
        fit,
        gpu=fit.gpu_id,
        name=name,
        memory_bytes=fit.gpu_memory_bytes,
        usable_bytes=round(fit.usable_bytes),
        headroom_bytes=round(fit.headroom_bytes),
        notes=tuple(fit.notes),
    )


def _to_fit(spec: ModelSpec, work: TrainWork, gpu: GPU, framework: str) -> ToFit:
    """The remedy chain of ``suanli fit`` for ``work`` on its GPUs of ``gpu``, summed up."""
    from suanli.answers.fit import remedy_chain
    from suanli.catalog.frameworks import get_framework

    chain = remedy_chain(spec, work, gpu, work.parallel.gpus, get_framework(framework))
    last = chain.steps[-1] if chain.steps else None
    return ToFit(
        changes=tuple(step.change for step in chain.steps),
        fits=chain.fits,
        memory_bytes=last.memory_bytes if last else chain.start_bytes,
        tokens_per_s=last.tokens_per_s if last else 0.0,
        options=chain.final_options,
    )


def memory(
    req: MemoryRequest, *, loader: Callable[[str], LoadedModel] = load_model
) -> MemoryAnswer:
    """Memory per GPU for ``req.model`` under ``req.work``, and the fit on each card.

    ``loader`` turns the model string into a model (the web page passes its own, which refuses
    paths). Raises ``ValueError`` with one sentence on bad input.
    """
    loaded = loader(req.model)
    spec = loaded.spec
    names = ([req.gpu] if req.gpu else []) + [c for c in req.cards if c != req.gpu]
    cards: list[GPU] = []
    for name in names:
        gpu = resolve_gpu(name, req.catalog_file)[0]
        if gpu.id not in [c.id for c in cards]:
            cards.append(gpu)
    # --recompute auto settles on the first card asked about (the others are checked with it).
    request = with_images(with_file_format(req.work, loaded.weight_format), spec)
    work, settled = settle_work(request, spec, cards[0].memory_bytes if cards else None)
    if isinstance(work, InferWork):
        result = inference_memory(spec, work)
        fits = [fit_inference(spec, work, g.id, g.memory_bytes, gpu=g) for g in cards]
    else:
        result = training_memory(spec, work)
        fits = [fit_training(spec, work, g.id, g.memory_bytes) for g in cards]
    card_fits = tuple(card_fit(f, g.name) for f, g in zip(fits, cards, strict=True))
    to_fit = None
    if isinstance(work, TrainWork) and req.gpu and not card_fits[0].fits:
        # The chain starts where suanli fit starts: the job without recomputation when auto
        # left it to suanli (recomputation is the chain's own second step).
        start = build_work(request) if is_auto(request) else work
        assert isinstance(start, TrainWork)
        to_fit = _to_fit(spec, start, cards[0], req.work.framework)
    return MemoryAnswer(
        model=req.model,
        task=req.work.task,
        total_bytes=round(result.total_bytes),
        breakdown={k: round(v) for k, v in result.breakdown.items()},
        cpu_bytes=round(result.cpu_bytes),
        lines=tuple(from_result(MemoryLine, ln, bytes=round(ln.bytes)) for ln in result.lines),
        assumptions=framework_assumptions(req.work) + settled + tuple(result.assumptions),
        fit=card_fits[0] if req.gpu and card_fits else None,
        fits=card_fits,
        settled=settled,
        to_fit=to_fit,
        per_layer=result.per_layer,
        inference=isinstance(work, InferWork),
    )
