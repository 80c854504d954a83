"""Is the estimate right on this device? Build the model with random weights, run real steps,
and compare each memory and time component with the estimate (``suanli verify``).

PyTorch and transformers are imported when the model is built, never when this module is
imported.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from suanli.answers.base import OMIT_NONE, Answer
from suanli.answers.model_source import load_model
from suanli.answers.request import WorkRequest, build_work
from suanli.errors import MissingExtra
from suanli.estimate.workload import TrainWork
from suanli.i18n import N_
from suanli.models.params import count_params
from suanli.models.resolve import LoadedModel

#: Above this many parameters a CPU run takes too long to be useful.
CPU_PARAM_LIMIT = 1.5e9


@dataclass(frozen=True)
class VerifyRequest:
    """The model, the workload to run on this device, and how long to run it."""

    model: str
    """A preset name, a config.json path or folder, or a hub id (org/name)."""
    work: WorkRequest = field(default_factory=lambda: WorkRequest(task="full"))
    """``full``, ``pretrain`` or ``infer`` (LoRA and QLoRA steps are not supported)."""
    prompt: int = 128
    """Inference: prompt tokens."""
    output_tokens: int = 16
    """Inference: generated tokens."""
    steps: int = 3
    """Training steps to run."""
    save: bool = True
    """Save the result beside the local calibration profile."""


@dataclass(frozen=True, kw_only=True)
class VerifyAnswer(Answer):
    """Estimate against measurement per component (bytes or seconds) and the relative error."""

    schema_name = "verify"

    model: str
    task: str
    device: str
    """``cpu`` or ``cuda``: where the steps ran."""
    estimate: dict[str, float]
    measured: dict[str, float]
    error: dict[str, float]
    """estimate / measured - 1 for every component measured."""
    notes: tuple[str, ...]
    saved_to: str | None = field(default=None, metadata=OMIT_NONE)
    """The JSON file the result was saved to (with ``save``)."""


def model_config(loaded: LoadedModel) -> dict[str, Any]:
    """The transformers config of a resolved model (a preset's, or the config.json read)."""
    if loaded.preset is not None:
        return dict(loaded.preset.config())
    location = Path(loaded.location)
    path = location / "config.json" if location.is_dir() else location
    return dict(json.loads(path.read_text()))


def verify(req: VerifyRequest) -> VerifyAnswer:
    """Run ``req.work`` for real on this device (CUDA if present, else the CPU) and compare.

    Raises ``ValueError`` for LoRA/QLoRA, a model too big for the CPU, or a workload that would
    not fit; :class:`MissingExtra` without PyTorch or transformers.
    """
    try:
        import torch  # noqa: F401
        import transformers  # noqa: F401
    except ImportError:
        raise MissingExtra(
            N_(
                "suanli verify needs PyTorch and transformers: pip install 'suanli[torch]' "
                "transformers"
            )
        ) from None
    from suanli.live.verify import pick_device, verify_inference, verify_training

    task = req.work.task
    if task in ("lora", "qlora"):
        raise ValueError(
            N_(
                "verify runs full training steps and inference; LoRA/QLoRA steps need "
                "peft and bitsandbytes, not supported yet: use --task full or infer"
            )
        )
    work_req = req.work
    if task == "infer":
        work_req = replace(work_req, context=req.prompt + req.output_tokens)
    work = build_work(work_req)
    loaded = load_model(req.model)
    cfg = model_config(loaded)
    params = count_params(loaded.spec).total
    if pick_device() == "cpu" and params > CPU_PARAM_LIMIT:
        raise ValueError(
            N_(
                "{model} has {billions:.1f}B parameters: too slow on the CPU; use a smaller "
                "preset or a GPU"
            ).format(model=req.model, billions=params / 1e9)
        )
    if isinstance(work, TrainWork):
        result = verify_training(loaded.spec, cfg, work, req.steps)
    else:
        result = verify_inference(loaded.spec, cfg, work, req.prompt, req.output_tokens)
    doc = {"model": req.model, "task": task, **result.as_dict()}
    saved: str | None = None
    if req.save:
        from suanli.paths import local_calibration_path

        path = local_calibration_path(f"verify-{result.device}").with_suffix(".json")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(doc, indent=1))
        saved = str(path)
    return VerifyAnswer(
        model=req.model,
        task=task,
        device=result.device,
        estimate=result.estimate,
        measured=result.measured,
        error=result.error,
        notes=tuple(result.notes),
        saved_to=saved,
    )
