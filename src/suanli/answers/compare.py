"""Why is one device so much faster? The same work on several devices side by side, with the
speed-up over the slowest and the one-line reason (``suanli compare``).

Every device is put on the same roofline: its achievable matmul FLOP/s and memory bandwidth
(``local-cpu`` is this machine, measured). The reason names the roof the work is under.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from suanli.answers.bands import band_fields
from suanli.answers.base import NOT_IN_JSON, OMIT_NONE, Answer
from suanli.answers.devices import resolve_gpu
from suanli.answers.model_source import load_model
from suanli.answers.recompute import is_auto, settle_work
from suanli.answers.request import WorkRequest, build_work
from suanli.answers.serving_load import OUTPUT_TOKENS, PROMPT_TOKENS
from suanli.answers.validity import check_job
from suanli.catalog.formats import get_format
from suanli.estimate.device import device_for
from suanli.estimate.inference import inference_perf
from suanli.estimate.perf import Device, training_perf
from suanli.estimate.workload import InferWork
from suanli.i18n import N_
from suanli.models.presets import DEFAULT_MODEL
from suanli.models.resolve import LoadedModel


@dataclass(frozen=True)
class CompareRequest:
    """The work and the devices to run it on."""

    model: str = DEFAULT_MODEL
    """A preset name, a config.json path or folder, or a hub id (org/name)."""
    work: WorkRequest = field(default_factory=WorkRequest)
    """For inference, ``context`` is set to ``prompt + output``."""
    devices: tuple[str, ...] = ()
    """At least two: ``local-cpu`` (this machine, measured) and catalog names."""
    prompt: int = PROMPT_TOKENS
    """Inference: prompt tokens."""
    output: int = OUTPUT_TOKENS
    """Inference: output tokens."""
    catalog_file: str | None = None
    """Extra or overriding GPU entries (TOML)."""


@dataclass(frozen=True, kw_only=True)
class CompareRow:
    """The work on one device. Inference rows have the ``ttft_s``, ``tpot_s`` and ``request_s``
    keys, training rows ``step_time_s``."""

    device: str
    """Catalog id (``local-cpu`` for this machine)."""
    name: str
    ttft_s: float | None = field(default=None, metadata=OMIT_NONE)
    """Inference: time to the first token."""
    tpot_s: float | None = field(default=None, metadata=OMIT_NONE)
    """Inference: time per output token."""
    step_time_s: float | None = field(default=None, metadata=OMIT_NONE)
    """Training: seconds per optimizer step."""
    tokens_per_s: float = 0.0
    bound: str = ""
    """What limits it: compute, memory, ..."""
    request_s: float | None = field(default=None, metadata=OMIT_NONE)
    """Inference: one request, ``ttft + output x tpot``."""
    speedup_vs_slowest: float = 1.0
    """Tokens per second over the slowest device's."""
    reason: str = ""
    """Why it beats the slowest device, in one line ("" for the slowest)."""
    achievable_tflops: float = 0.0
    """Achievable matmul rate, TFLOP/s (10^12 FLOP/s)."""
    achievable_bandwidth_gbs: float = 0.0
    """Achievable memory bandwidth, GB/s (10^9 bytes/s)."""
    fits: bool = True
    """The work fits in this device's memory."""
    supported: bool = True
    """The device has units for the work's precision."""
    warnings: tuple[str, ...] = ()
    """Why the work cannot run as given on this device (its speed is then hypothetical)."""
    band: dict[str, list[float]] | None = None
    """The row's figures' likely range, as perf's ``band`` on this device (the 80% prediction
    interval of measured / estimated speed in its regime's published runs); None where the
    regime has too few."""
    band_basis: dict[str, Any] | None = None
    """The band's cell, rows, sources and coverage (as perf's)."""
    unvalidated: str | None = None
    """Why the row has no band (its regime is unvalidated); null otherwise."""


@dataclass(frozen=True, kw_only=True)
class CompareAnswer(Answer):
    """The same work on each device, in the order given."""

    schema_name = "compare"

    model: str
    task: str
    rows: tuple[CompareRow, ...]
    slowest: int = field(default=0, metadata=NOT_IN_JSON)
    """Index of the slowest row (the one the others are compared with)."""
    inference: bool = field(default=False, metadata=NOT_IN_JSON)
    batch: int = field(default=1, metadata=NOT_IN_JSON)
    """Concurrent sequences (inference) or micro-batch (training)."""
    prompt: int = field(default=PROMPT_TOKENS, metadata=NOT_IN_JSON)
    output: int = field(default=OUTPUT_TOKENS, metadata=NOT_IN_JSON)


def reason(bound: str, device: Device, other: Device) -> str:
    """Why ``device`` beats ``other`` for work with this ``bound``, in one line."""
    if bound == "host":
        return N_(
            "host-bound: Python's dispatch of every op sets the pace on this card "
            "(--dispatch engine for a serving engine's)"
        )
    if bound == "memory":
        return N_("bandwidth-bound: {this:,.0f} GB/s vs {other:,.0f} GB/s achievable").format(
            this=device.bandwidth / 1e9, other=other.bandwidth / 1e9
        )
    return N_("compute-bound: {this:,.1f} vs {other:,.1f} TFLOP/s achievable").format(
        this=device.matmul_flops / 1e12, other=other.matmul_flops / 1e12
    )


def compare(
    req: CompareRequest, *, loader: Callable[[str], LoadedModel] = load_model
) -> CompareAnswer:
    """The work of ``req`` on every device of ``req.devices``, with the speed-up over the slowest.

    Raises ``ValueError`` with one sentence on bad input (fewer than two devices, an unknown
    device or model, inconsistent work) and :class:`suanli.errors.MissingExtra` when
    ``local-cpu`` cannot be measured.
    """
    work_req = req.work
    if work_req.task == "infer":
        work_req = replace(work_req, context=req.prompt + req.output)
    build_work(replace(work_req, recompute="none") if is_auto(work_req) else work_req)  # checks
    spec = loader(req.model).spec
    if len(req.devices) < 2:
        raise ValueError(
            N_("--devices needs at least two names separated by commas, e.g. local-cpu,rtx4090")
        )
    rows: list[CompareRow] = []
    built: list[Device] = []
    for name in req.devices:
        gpu, calibration = resolve_gpu(name, req.catalog_file)
        # --recompute auto settles per card, as perf on that card does.
        work = settle_work(work_req, spec, gpu.memory_bytes)[0]
        dtype = (
            get_format(work.weight_format).gemm_dtype if isinstance(work, InferWork) else work.dtype
        )
        device = device_for(gpu, dtype, calibration=calibration, auto_calibration=False)
        built.append(device)
        valid = check_job(req.model, spec, work, gpu)
        if isinstance(work, InferWork):
            r = inference_perf(spec, work, device, req.prompt, req.output)
            rows.append(
                CompareRow(
                    device=gpu.id,
                    name=gpu.name,
                    ttft_s=r.ttft_s,
                    tpot_s=r.tpot_s,
                    tokens_per_s=r.tokens_per_s,
                    bound=r.bound,
                    request_s=r.ttft_s + req.output * r.tpot_s,
                    fits=valid.fits,
                    supported=valid.supported,
                    warnings=valid.problems,
                    **band_fields(
                        gpu,
                        {"tokens_per_s": r.tokens_per_s, "ttft_s": r.ttft_s, "tpot_s": r.tpot_s},
                        gpus=work.tp,
                        framework=work_req.framework,
                        moe=spec.is_moe,
                        task=work_req.task,
                    ),
                )
            )
        else:
            t = training_perf(spec, work, device)
            rows.append(
                CompareRow(
                    device=gpu.id,
                    name=gpu.name,
                    step_time_s=t.step_time_s,
                    tokens_per_s=t.tokens_per_s,
                    bound=t.bound,
                    fits=valid.fits,
                    supported=valid.supported,
                    warnings=valid.problems,
                    **band_fields(
                        gpu,
                        {"tokens_per_s": t.tokens_per_s, "step_time_s": t.step_time_s},
                        gpus=work.parallel.gpus,
                        framework=work_req.framework,
                        moe=spec.is_moe,
                        task=work_req.task,
                    ),
                )
            )
    slowest = min(range(len(rows)), key=lambda i: rows[i].tokens_per_s)
    done = tuple(
        replace(
            row,
            speedup_vs_slowest=row.tokens_per_s / rows[slowest].tokens_per_s,
            reason="" if i == slowest else reason(row.bound, built[i], built[slowest]),
            achievable_tflops=built[i].matmul_flops / 1e12,
            achievable_bandwidth_gbs=built[i].bandwidth / 1e9,
        )
        for i, row in enumerate(rows)
    )
    return CompareAnswer(
        model=req.model,
        task=req.work.task,
        rows=done,
        slowest=slowest,
        inference=isinstance(work, InferWork),
        batch=work.batch,
        prompt=req.prompt,
        output=req.output,
    )
