"""What do I change so that it fits? The OOM remedy chain, walked in the practitioners' order
until the job fits (``suanli fit``, :func:`suanli.fit`)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace

from suanli.answers.base import Answer, from_result
from suanli.answers.model_source import load_model
from suanli.answers.request import WorkRequest, build_work
from suanli.catalog import GPU, find_gpu, load_catalog
from suanli.catalog.frameworks import Framework
from suanli.estimate.workload import TrainWork
from suanli.i18n import N_
from suanli.models.presets import DEFAULT_MODEL
from suanli.models.resolve import LoadedModel
from suanli.models.spec import ModelSpec
from suanli.plan.fit import FitPlan, Step


@dataclass(frozen=True)
class FitRequest:
    """The fitting question: a training job that may not fit on ``gpus`` x ``gpu``."""

    model: str = DEFAULT_MODEL
    work: WorkRequest = field(default_factory=WorkRequest)
    """The job; ``work.gpus`` is how many GPUs the chain may use (default 1)."""
    gpu: str = "rtx-4090"
    catalog_file: str | None = None


#: One remedy and its effect: the chain's own result type, held as it is (not copied).
FitStep = Step


@dataclass(frozen=True, kw_only=True)
class FitAnswer(Answer):
    """The remedy chain from the job as given to the first change that fits."""

    schema_name = "fit"

    model: str
    gpu: str
    gpus: int
    start_bytes: float
    gpu_memory_bytes: int
    fits: bool
    steps: tuple[FitStep, ...]
    final_options: str
    """The options that fit, to paste into ``suanli mem``."""
    framework: str = "hf"
    framework_settings: tuple[str, ...] = ()
    """The framework's own settings for that configuration (its config keys or flags)."""


def fit(req: FitRequest, *, loader: Callable[[str], LoadedModel] = load_model) -> FitAnswer:
    """Walk the OOM remedy chain until ``req.model`` fits (training only).

    Raises ``ValueError`` with one sentence on bad input, or for an inference task.
    """
    from suanli.catalog.frameworks import get_framework

    gpus = req.work.gpus or 1
    if req.work.task == "infer":
        raise ValueError(
            N_(
                "suanli fit walks the training chain; for inference use "
                "'suanli mem MODEL --task infer --gpu G' (it reports the best format)"
            )
        )
    spec = loader(req.model).spec
    gpu = find_gpu(req.gpu, load_catalog(req.catalog_file))
    # The chain decides how to use the GPUs, and with --recompute auto how much to recompute:
    # it starts without (build_work's auto) and takes recomputation as its second step.
    work = build_work(replace(req.work, gpus=None))
    assert isinstance(work, TrainWork)
    fw = get_framework(req.work.framework)
    chain = remedy_chain(spec, work, gpu, gpus, fw)
    # The chain's own fields (start_bytes, gpu_memory_bytes, fits, steps, final_options).
    return from_result(
        FitAnswer,
        chain,
        model=req.model,
        gpu=gpu.id,
        gpus=gpus,
        framework=fw.id,
        framework_settings=framework_settings(fw, chain.final),
    )


def remedy_chain(spec: ModelSpec, work: TrainWork, gpu: GPU, gpus: int, fw: Framework) -> FitPlan:
    """The OOM remedy chain of ``work`` on ``gpus`` x ``gpu``, walked with the techniques the
    framework ``fw`` implements (``suanli frameworks NAME`` lists them), until it fits."""
    from suanli.estimate.device import device_for
    from suanli.plan.fit import ALL_TECHNIQUES, fit_chain

    allowed = frozenset(fw.techniques) & ALL_TECHNIQUES
    return fit_chain(spec, work, gpu, device_for(gpu, work.dtype), gpus, allowed)


def framework_settings(fw: Framework, work: TrainWork) -> tuple[str, ...]:
    """The framework's own settings (config keys, flags) for the techniques ``work`` uses."""
    par = work.parallel
    layout = {"tp": par.tp, "pp": par.pp, "zero": par.zero, "sp": par.sp, "dp": par.dp}
    plain = {"tp": 1, "pp": 1, "zero": 0, "sp": False, "dp": 1, "grad_accum": 1}
    out = []
    for c in fw.config:
        value = layout[c.option] if c.option in layout else getattr(work, c.option, None)
        if c.value == "*":
            wanted = value is not None and value != plain.get(
                c.option, getattr(TrainWork, c.option, None)
            )
        else:
            wanted = value == c.value
        if wanted:
            out.append(c.key.replace("{value}", str(value)))
    return tuple(out)
