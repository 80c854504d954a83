"""fp16 dynamic loss scaling's cost per optimizer step (docs/speed.md, "fp16 loss scaling").

fp16 training multiplies the loss by a scale so that small gradients do not underflow, then,
before each optimizer step, checks every gradient for inf/NaN and divides the scale back out;
a step whose gradients overflowed is skipped and the scale halved. bf16, fp32 and fp8 (whose
gradients stay in bf16) have no such pass. Read from DeepSpeed, which GPT-NeoX trains with:

- the overflow check (``deepspeed/runtime/zero/stage_1_and_2.py``
  ``has_overflow_partitioned_grads_serial`` → ``_has_inf_or_nan``; ``runtime/fp16/
  loss_scaler.py`` at 18fd4c97): ``float(x.float().sum())`` on each gradient of this rank's
  partition: read the fp16 gradient, write its fp32 copy, read that copy to sum it;
- the unscale (``unscale_and_clip_grads``): ``grad.mul_(1 / combined_scale)`` over the fp32
  gradient partition, read and written once (in pure precision, over the dtype gradients);
- skipped steps: DynamicLossScaler doubles the scale after ``scale_window`` (default 1000)
  steps without overflow; the doubled scale overflows and, with ``hysteresis`` (default 2),
  the first overflow only spends the hysteresis and the second halves the scale, each skipping
  its step: about ``hysteresis`` skipped steps per ``scale_window`` in the steady state.
"""

from __future__ import annotations

from typing import Any

from suanli.estimate.workload import TrainWork

#: DeepSpeed's default ``fp16.loss_scale_window`` (LossScaleProfileDefaults.default_scale_window
#: = 1000, runtime/fp16/loss_scaler.py at 18fd4c97; GPT-NeoX configs/20B.yml sets the same).
SCALE_WINDOW = 1000
#: DeepSpeed's default ``fp16.hysteresis`` (delayed_shift = 2; GPT-NeoX configs/20B.yml: 2): the
#: overflows, each a skipped step, before the scale halves.
HYSTERESIS = 2
#: fp32 bytes the overflow check's copy writes and its sum reads again, per gradient element.
CHECK_FP32_BYTES = 4 + 4


def uses_loss_scaling(work: TrainWork) -> bool:
    """Whether the job's gradients are fp16 and so need dynamic loss scaling."""
    return work.dtype == "fp16"


def loss_scaling_bytes(work: TrainWork, params: Any) -> Any:
    """Memory traffic of one step's overflow check and unscale over the ``params`` gradient
    elements this GPU updates (its ZeRO partition): the check reads the ``b``-byte gradient and
    writes and reads its fp32 copy (``b + 8``); the unscale reads and writes the fp32 gradient
    (``8``; pure precision: the dtype gradient, ``2b``). Zero unless fp16."""
    if not uses_loss_scaling(work):
        return 0.0 * params
    b = work.tensor_bytes
    mixed = work.precision == "mixed" and not work.fp32_storage
    unscale = 8 if mixed else 2 * b
    return params * (b + CHECK_FP32_BYTES + unscale)


def skipped_step_fraction(work: TrainWork) -> float:
    """Share of extra steps run for steps skipped on overflow: ``hysteresis / scale_window``
    (0.2% at DeepSpeed's defaults); zero unless fp16."""
    return HYSTERESIS / SCALE_WINDOW if uses_loss_scaling(work) else 0.0


def loss_scaling_s(work: TrainWork, params: Any, bandwidth: float, busy_s: Any) -> Any:
    """Seconds per step that fp16 dynamic loss scaling adds on one GPU: the overflow check and
    unscale at ``bandwidth`` (:func:`loss_scaling_bytes`), and the skipped steps' share of the
    step's busy time ``busy_s`` (:func:`skipped_step_fraction`). Floats or numpy arrays."""
    return loss_scaling_bytes(work, params) / bandwidth + skipped_step_fraction(work) * busy_s
