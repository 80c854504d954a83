"""OOM autopsy: what filled the memory, what the estimator expected, and the remedy chain.

Measured: parameters, gradients and optimizer state of the live model (exact, from the tensors),
activations and temporaries as the rest of the peak (CUDA's ``max_memory_allocated``) or, on the
CPU, the bytes autograd saved in the last forward. Expected: the memory estimator for the same
model (its transformers config) and settings. Remedies: ``suanli fit``'s chain against the limit.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from suanli.i18n import N_, message_of, sentence
from suanli.units import GiB


def measured_states(model: Any, optimizer: Any | None) -> dict[str, int]:
    """Parameter, gradient and optimizer-state bytes of a live model."""
    from suanli.live.measure import optimizer_state_bytes, tensor_bytes

    params = list(model.parameters())
    out = {
        "weights": tensor_bytes(params),
        "gradients": tensor_bytes([p.grad for p in params if p.grad is not None]),
        "optimizer": optimizer_state_bytes(optimizer) if optimizer is not None else 0,
    }
    return out


def autopsy(
    model: Any,
    optimizer: Any | None,
    *,
    batch: int,
    seq: int,
    limit_bytes: float,
    peak_bytes: float | None = None,
    activation_bytes: float | None = None,
    gpu_name: str = "h100",
) -> dict[str, Any]:
    """The breakdown, the estimator's view, and the remedy chain against ``limit_bytes``."""
    from suanli.catalog import bundled_gpus, find_gpu
    from suanli.estimate.device import device_for
    from suanli.estimate.memory import training_memory
    from suanli.estimate.workload import TrainWork
    from suanli.models.resolve import ModelSourceError, model_from_module
    from suanli.plan.fit import fit_chain

    measured: dict[str, float] = dict(measured_states(model, optimizer))
    states = sum(measured.values())
    if peak_bytes is not None:
        measured["activations_and_temporaries"] = max(peak_bytes - states, 0.0)
    elif activation_bytes is not None:
        measured["activations"] = activation_bytes
    doc: dict[str, Any] = {
        "limit_bytes": limit_bytes,
        "measured_bytes": measured,
        "measured_total_bytes": sum(measured.values()),
    }
    try:
        spec = model_from_module(model)
    except ModelSourceError as exc:
        doc["estimate"] = None
        doc["note"] = N_("no estimator comparison: {error}").format(error=message_of(exc))
        return doc
    dtype = "fp32"
    first = next(iter(model.parameters()), None)
    if first is not None and "bfloat16" in str(first.dtype):
        dtype = "bf16"
    elif first is not None and "float16" in str(first.dtype):
        dtype = "fp16"
    work = TrainWork(task="full", batch=batch, seq=seq, dtype=dtype, precision="pure")
    estimate = training_memory(spec, work)
    doc["estimate"] = {"total_bytes": estimate.total_bytes, "breakdown": estimate.breakdown}
    gpu = replace(find_gpu(gpu_name, bundled_gpus()), memory_bytes=int(limit_bytes))
    plan = fit_chain(spec, work, gpu, device_for(gpu, dtype))
    doc["remedies"] = [
        {
            "change": s.change,
            "memory_bytes": s.memory_bytes,
            "saved_bytes": s.saved_bytes,
            "fits": s.fits,
        }
        for s in plan.steps
    ]
    doc["fits_after_remedies"] = plan.fits
    doc["final_options"] = plan.final_options
    return doc


@dataclass(frozen=True)
class OomAutopsy:
    """What filled the memory when the script ran out of it: the autopsy document
    (:func:`autopsy`), or why it could not be made."""

    doc: dict[str, Any] | None = None
    error: str | None = None


def oom_autopsy(rec: Any) -> OomAutopsy | None:
    """The OOM autopsy of a recorded run (the CUDA peak against the device's memory); ``None``
    off CUDA. It never raises: a failure is reported in ``error``."""
    try:
        import torch

        if not torch.cuda.is_available():
            return None
        shape = rec.last_input_shape or (rec.batch_size or 1, 1)
        doc = autopsy(
            rec.model,
            rec.optimizer,
            batch=int(shape[0]),
            seq=int(shape[1]) if len(shape) > 1 else 1,
            limit_bytes=torch.cuda.get_device_properties(0).total_memory,
            peak_bytes=torch.cuda.max_memory_allocated(),
        )
    except Exception as exc:  # the autopsy must not hide the original error
        return OomAutopsy(error=message_of(exc))
    return OomAutopsy(doc=doc)


def format_autopsy(doc: dict[str, Any], translate: bool = True) -> str:
    """Plain lines for the terminal, in the current language (``translate=False``: English,
    for an error message that is translated where it is shown)."""

    def say(text: str) -> str:
        return sentence(text) if translate else text

    lines = [
        say(
            N_(
                "out of memory: {measured:.2f} GiB measured against a limit of {limit:.2f} GiB"
            ).format(measured=doc["measured_total_bytes"] / GiB, limit=doc["limit_bytes"] / GiB)
        )
    ]
    for key, value in doc["measured_bytes"].items():
        lines.append(
            "  " + say(N_("measured {key}: {size:.3f} GiB").format(key=key, size=value / GiB))
        )
    if doc.get("estimate"):
        lines.append(
            "  "
            + say(
                N_("the estimator expected {total:.2f} GiB for this model and batch").format(
                    total=doc["estimate"]["total_bytes"] / GiB
                )
            )
        )
        for step in doc["remedies"]:
            line = (
                N_("{change}: {memory:.2f} GiB (saves {saved:.2f}) fits")
                if step["fits"]
                else N_("{change}: {memory:.2f} GiB (saves {saved:.2f}) ")
            ).format(
                change=step["change"],
                memory=step["memory_bytes"] / GiB,
                saved=step["saved_bytes"] / GiB,
            )
            lines.append("  -> " + say(line))
    elif doc.get("note"):
        lines.append("  " + say(doc["note"]))
    return "\n".join(lines)
