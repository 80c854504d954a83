"""``suanli verify``: build the model, run real steps on this device, compare with the estimate.

The model is built from its config with random weights (no download). Before running, the memory
estimator is asked; a configuration that would not fit is refused with the ``fit`` advice instead
of an out-of-memory crash. Measured: on CUDA the allocator's peak (allocated and reserved); on the
CPU the exact bytes of parameters, gradients, optimizer state and what autograd saves; step time
and tokens/s; for inference the KV cache after generation and TTFT/TPOT. torch and transformers
are imported inside the functions.
"""

from __future__ import annotations

import os
import statistics
import time
from dataclasses import dataclass, field
from typing import Any

from suanli.estimate.inference_memory import inference_memory
from suanli.estimate.memory import training_memory
from suanli.estimate.workload import InferWork, TrainWork
from suanli.i18n import N_
from suanli.models.spec import ModelSpec

DTYPES = {"fp32": "float32", "bf16": "bfloat16", "fp16": "float16"}


@dataclass(frozen=True)
class Comparison:
    """Estimate against measurement, per component and in total (bytes or seconds)."""

    estimate: dict[str, float]
    measured: dict[str, float]
    device: str
    notes: tuple[str, ...] = field(default_factory=tuple)

    @property
    def error(self) -> dict[str, float]:
        """Relative error (estimate / measured - 1) for every component measured."""
        return {
            k: self.estimate[k] / v - 1
            for k, v in self.measured.items()
            if k in self.estimate and v
        }

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready: ``estimate``, ``measured``, ``error`` per component."""
        return {
            "device": self.device,
            "estimate": self.estimate,
            "measured": self.measured,
            "error": self.error,
            "notes": list(self.notes),
        }


def build_model(cfg: dict[str, Any], dtype: str, device: str, attention: str = "sdpa") -> Any:
    """The transformers model of ``cfg`` with random weights on ``device``."""
    import torch
    import transformers

    kwargs = {k: v for k, v in cfg.items() if k != "model_type"}
    conf = transformers.AutoConfig.for_model(cfg["model_type"], **kwargs)
    conf._attn_implementation = attention
    torch.manual_seed(0)
    with torch.device(device):
        model = transformers.AutoModelForCausalLM.from_config(conf)  # type: ignore[no-untyped-call]
    return model.to(getattr(torch, DTYPES[dtype]))


def pick_device() -> str:
    """``cuda`` when PyTorch sees a GPU, else ``cpu``: where verify runs the model."""
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


def _available_bytes(device: str) -> float:
    import torch

    if device == "cuda":
        free, _ = torch.cuda.mem_get_info()
        return float(free)
    import psutil

    return float(psutil.virtual_memory().available)


def verify_training(
    spec: ModelSpec, cfg: dict[str, Any], work: TrainWork, steps: int = 3
) -> Comparison:
    """A real training step (AdamW, the work's dtype, pure precision) against the estimate."""
    import torch

    from suanli.live.measure import optimizer_state_bytes, saved_for_backward, tensor_bytes

    device = pick_device()
    estimate = training_memory(spec, work)
    tensors_estimate = estimate.total_bytes - estimate.breakdown["overhead"]
    if tensors_estimate > _available_bytes(device):
        raise ValueError(
            N_(
                "the estimate says {need:.1f} GiB but {device} has {free:.1f} GiB free; "
                "run 'suanli fit' for what to change"
            ).format(
                need=tensors_estimate / 2**30,
                device=device,
                free=_available_bytes(device) / 2**30,
            )
        )
    model = build_model(cfg, work.dtype, device, work.attention)
    model.train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    ids = torch.randint(0, spec.vocab_size, (work.batch, work.seq), device=device)
    times = []
    saved = None
    if device == "cuda":
        torch.cuda.reset_peak_memory_stats()
    try:
        for i in range(steps):
            if device == "cuda":
                torch.cuda.synchronize()
            start = time.perf_counter()
            if i == 0 and device == "cpu":
                saved, out = saved_for_backward(model, lambda: model(input_ids=ids, labels=ids))
            else:
                out = model(input_ids=ids, labels=ids)
            out.loss.backward()
            opt.step()
            opt.zero_grad(set_to_none=False)
            if device == "cuda":
                torch.cuda.synchronize()
            times.append(time.perf_counter() - start)
    except torch.OutOfMemoryError:
        # An out-of-memory the estimator did not foresee: report the autopsy, not a traceback.
        from suanli.live.autopsy import autopsy, format_autopsy

        doc = autopsy(
            model,
            opt,
            batch=work.batch,
            seq=work.seq,
            limit_bytes=torch.cuda.get_device_properties(0).total_memory,
            peak_bytes=torch.cuda.max_memory_allocated(),
        )
        raise ValueError(
            N_("out of memory during the step; {autopsy}").format(
                autopsy=format_autopsy(doc, translate=False).replace("\n", "; ")
            )
        ) from None
    params = list(model.parameters())
    measured: dict[str, float] = {
        "weights": float(tensor_bytes(params)),
        "gradients": float(tensor_bytes([p.grad for p in params if p.grad is not None])),
        "optimizer": float(optimizer_state_bytes(opt)),
        "step_time_s": statistics.median(times[1:] or times),
    }
    est = {k: float(v) for k, v in estimate.breakdown.items()}
    notes = [N_("pure precision: weights, gradients and AdamW states in the model's dtype")]
    if saved is not None:
        measured["activations"] = float(saved.saved_bytes)
        est["activations"] = estimate.breakdown["activations"]
    if device == "cuda":
        measured["peak_allocated"] = float(torch.cuda.max_memory_allocated())
        measured["peak_reserved"] = float(torch.cuda.max_memory_reserved())
        est["peak_allocated"] = tensors_estimate
        est["peak_reserved"] = estimate.total_bytes - _context_bytes(estimate)
        est.update(_speed_estimate(spec, work))
        nvml = _nvml_used_bytes()
        if nvml is not None:
            measured["nvml_used"] = nvml  # the driver's view: context and cache included
            est["nvml_used"] = estimate.total_bytes
    else:
        notes.append(
            N_(
                "CPU: step time has no estimate yet (no CPU device model); activations are "
                "the bytes autograd saved"
            )
        )
    return Comparison(est, measured, device, tuple(notes))


def _nvml_used_bytes() -> float | None:
    """Device memory in use as NVML sees it on torch's current GPU (found by UUID, or by its
    place in ``CUDA_VISIBLE_DEVICES``), or None without NVML. With memory info v2 the driver's
    reservation is not counted: it is not this process's."""
    import torch

    from suanli.live import nvml

    if nvml.library() is None:
        return None
    try:
        index = torch.cuda.current_device()
        uuid = str(getattr(torch.cuda.get_device_properties(index), "uuid", "") or "")
    except Exception:
        return None
    unit = nvml.device_for_cuda(index, uuid, os.environ.get("CUDA_VISIBLE_DEVICES"))
    if unit is None:
        return None
    _, mem = nvml.with_memory(unit)
    return float(mem.used_bytes) if mem is not None else None


def _context_bytes(estimate: Any) -> float:
    """The CUDA context line, which PyTorch's allocator does not see."""
    return float(sum(ln.bytes for ln in estimate.lines if ln.label.startswith("CUDA context")))


def _speed_estimate(spec: ModelSpec, work: TrainWork) -> dict[str, float]:
    import torch

    from suanli.catalog import bundled_gpus, find_gpu
    from suanli.catalog.loader import CatalogError
    from suanli.estimate.device import device_for
    from suanli.estimate.perf import training_perf

    try:
        gpu = find_gpu(torch.cuda.get_device_name(0), bundled_gpus())
    except CatalogError:
        return {}
    return {"step_time_s": training_perf(spec, work, device_for(gpu, work.dtype)).step_time_s}


def verify_inference(
    spec: ModelSpec, cfg: dict[str, Any], work: InferWork, prompt: int, output: int
) -> Comparison:
    """Prefill + decode with ``generate``: KV-cache bytes, TTFT and TPOT against the estimate."""
    import torch

    from suanli.estimate.inference_memory import kv_bytes_per_token
    from suanli.live.measure import kv_cache_bytes, tensor_bytes

    device = pick_device()
    model = build_model(cfg, "bf16", device).eval()
    ids = torch.randint(3, spec.vocab_size, (work.batch, prompt), device=device)
    with torch.no_grad():
        start = time.perf_counter()
        model(input_ids=ids)
        if device == "cuda":
            torch.cuda.synchronize()
        ttft = time.perf_counter() - start
        start = time.perf_counter()
        out = model.generate(
            ids,
            max_new_tokens=output,
            min_new_tokens=output,
            do_sample=False,
            return_dict_in_generate=True,
            pad_token_id=0,
        )
        if device == "cuda":
            torch.cuda.synchronize()
        total = time.perf_counter() - start
    held = prompt + output - 1
    measured = {
        "weights": float(tensor_bytes(list(model.parameters()))),
        "kv_cache": float(kv_cache_bytes(out.past_key_values)),
        "ttft_s": ttft,
        "tpot_s": max(total - ttft, 0.0) / max(output - 1, 1),
    }
    estimate = inference_memory(spec, InferWork(batch=work.batch, context=held, kv_dtype="bf16"))
    est = {
        "weights": estimate.breakdown["weights"],
        "kv_cache": kv_bytes_per_token(spec, 2, held) * work.batch * held,
    }
    return Comparison(est, measured, device, (N_("bf16 weights and KV cache"),))
