"""The rendering-video scenario of ``suanli plan``: GPUs ranked by ray-tracing units, memory and
media engines (no speed estimate: nothing to band). Split from :mod:`suanli.answers.plan`, which
re-exports these names."""

from __future__ import annotations

from dataclasses import dataclass

from suanli.answers.base import Answer
from suanli.answers.plan_policy import software_stack
from suanli.catalog import GPU
from suanli.catalog.prices import Price, buy_price, usd_of
from suanli.i18n import N_, join


@dataclass(frozen=True, kw_only=True)
class RenderingRow:
    """One GPU for rendering and video: memory and media engines."""

    gpu: str
    fits: bool
    memory_bytes: int
    nvenc_engines: int | None
    nvdec_engines: int | None
    tdp_watts: float | None
    price_usd: float | None
    software_stack: str
    reason: str
    """What it lacks for rendering and video ('' when nothing), or why it is not ranked."""
    rt_cores: int | None = None
    """Ray-tracing units (NVIDIA RT cores, AMD Ray Accelerators, Intel RTUs)."""
    av1_encode: bool | None = None
    """A hardware AV1 encoder."""
    buy: Price | None = None
    """The purchase price with its kind and date, the one every view shows for the card
    (``price_usd`` is its USD figure)."""


@dataclass(frozen=True, kw_only=True)
class RenderingPlanAnswer(Answer):
    """The rendering-video scenario: GPUs by memory and media engines."""

    schema_name = "plan-rendering"

    scenario: str
    reasoning: str
    rows: tuple[RenderingRow, ...]


def rendering_rows(gpus: list[GPU]) -> tuple[RenderingRow, ...]:
    """GPUs for rendering and video. GPUs with ray-tracing units and a hardware encoder first
    (OptiX/HIP RT/Metal RT renderers and NVENC-class exports use them), then by memory (the
    scene must fit), ray-tracing units, encoders and AV1; CPUs are listed as not ranked."""

    def count(gpu: GPU, key: str) -> int:
        value = gpu.get(key)
        return int(value) if isinstance(value, (int, float)) else 0

    def lacks(gpu: GPU) -> str:
        missing = []
        if not count(gpu, "rt_cores"):
            missing.append(N_("no ray-tracing units: renderers fall back to shader cores"))
        if not count(gpu, "nvenc_engines"):
            missing.append(N_("no hardware video encoder"))
        elif gpu.get("av1_encode") is False:
            missing.append(N_("no AV1 encode"))
        return join(missing, N_("; "))

    is_cpu = {g.id: g.form_factor == "cpu" or g.software_stack == "cpu" for g in gpus}
    ranked = sorted(
        (g for g in gpus if not is_cpu[g.id]),
        key=lambda g: (
            not (count(g, "rt_cores") and count(g, "nvenc_engines")),
            -g.memory_bytes,
            -count(g, "rt_cores"),
            -count(g, "nvenc_engines"),
            not g.get("av1_encode"),
        ),
    )
    rows = [
        RenderingRow(
            gpu=gpu.id,
            fits=True,
            memory_bytes=gpu.memory_bytes,
            nvenc_engines=gpu.get("nvenc_engines"),
            nvdec_engines=gpu.get("nvdec_engines"),
            tdp_watts=gpu.get("tdp_watts"),
            price_usd=usd_of(buy_price(gpu)),
            software_stack=software_stack(gpu),
            reason=lacks(gpu),
            rt_cores=gpu.get("rt_cores"),
            av1_encode=gpu.get("av1_encode"),
            buy=buy_price(gpu),
        )
        for gpu in ranked
    ]
    rows += [
        RenderingRow(
            gpu=gpu.id,
            fits=False,
            memory_bytes=gpu.memory_bytes,
            nvenc_engines=None,
            nvdec_engines=None,
            tdp_watts=gpu.get("tdp_watts"),
            price_usd=usd_of(buy_price(gpu)),
            software_stack=software_stack(gpu),
            reason=N_("a CPU: not ranked for GPU rendering"),
            buy=buy_price(gpu),
        )
        for gpu in gpus
        if is_cpu[gpu.id]
    ]
    return tuple(rows)
