"""``--task generate-image`` for ``suanli perf`` and ``suanli mem``: the options of a
text-to-image job and the tables of its answer."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import click

from suanli.cli.render import print_json, print_line, print_table
from suanli.cli.types import IntRange
from suanli.i18n import N_, _, sentence

if TYPE_CHECKING:
    from suanli.answers.image import ImagePerfAnswer

_IMAGE_OPTIONS: list[Callable[[Any], Any]] = [
    click.option(
        "--size",
        "image_size",
        default=None,
        metavar="WxH",
        help=N_(
            "--task generate-image: image size in pixels, e.g. 1024x1024 or 768x1344 "
            "(default: the pipeline's, 512 for SD 1.5, 1024 for the others)."
        ),
    ),
    click.option(
        "--steps",
        "denoise_steps",
        type=IntRange(min=1, max=10000),
        default=None,
        help=N_(
            "--task generate-image: denoising steps (default: the pipeline's, e.g. 50 for "
            "SD 1.5/SDXL, 28 for SD3 and FLUX.1-dev, 4 for FLUX.1-schnell)."
        ),
    ),
    click.option(
        "--guidance/--no-guidance",
        default=None,
        help=N_(
            "--task generate-image: classifier-free guidance, a second denoiser pass per step "
            "(default: on for SD 1.5, SDXL and SD3; off for the guidance-distilled Flux models)."
        ),
    ),
    click.option(
        "--cpu-offload",
        type=click.Choice(("none", "model", "sequential")),
        default="none",
        show_default=True,
        help=N_(
            "--task generate-image: diffusers' enable_model_cpu_offload (model) or "
            "enable_sequential_cpu_offload (sequential): less memory, weights cross PCIe."
        ),
    ),
    click.option(
        "--max-sequence-length",
        type=IntRange(min=1, max=4096),
        default=None,
        help=N_("--task generate-image: T5 prompt tokens (SD3 256, FLUX.1-dev 512 by default)."),
    ),
]


def image_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """Add the text-to-image options to a command."""
    for option in reversed(_IMAGE_OPTIONS):
        command = option(command)
    return command


def run_image_task(
    model: str,
    gpu: str | None,
    opts: dict[str, Any],
    *,
    catalog_file: str | None,
    ignore_fit: bool,
    as_json: bool,
    explain: bool,
    memory_only: bool,
) -> None:
    """``--task generate-image`` of ``perf`` (``memory_only``: of ``mem``): answer and print."""
    from suanli.cli.options import given_options

    answer = image_answer(
        model,
        gpu,
        opts,
        catalog_file=catalog_file,
        ignore_fit=ignore_fit,
        dtype_given="dtype" in (given_options(opts) or ()),
    )
    render_image(answer, as_json=as_json, explain=explain, memory_only=memory_only)


def image_answer(
    model: str,
    gpu: str | None,
    opts: dict[str, Any],
    *,
    catalog_file: str | None,
    ignore_fit: bool,
    dtype_given: bool,
) -> ImagePerfAnswer:
    """The answer for ``--task generate-image`` from a command's options."""
    from suanli.answers.image import ImageRequest, generate_image
    from suanli.answers.request import image_pixels

    if gpu is None:
        raise ValueError(
            N_("--task generate-image needs --gpu: the fit and the seconds are per card")
        )
    width, height = image_pixels(opts.get("image_size"), "--size")
    return generate_image(
        ImageRequest(
            model=model,
            gpu=gpu,
            width=width or None,
            height=height or None,
            steps=opts.get("denoise_steps"),
            batch=opts.get("batch") or 1,
            dtype=opts.get("dtype") if dtype_given else None,
            guidance=opts.get("guidance"),
            max_sequence_length=opts.get("max_sequence_length"),
            offload=opts.get("cpu_offload") or "none",
            catalog_file=catalog_file,
            ignore_fit=ignore_fit,
        )
    )


#: The unit column's heading (a unit: the same in every language).
GIB = "GiB"


def _gib(n: float) -> str:
    return f"{n / 2**30:,.2f}"


def _seconds(s: float) -> str:
    return f"{s:,.2f} s" if s >= 1 else f"{s * 1e3:,.1f} ms"


def render_image(doc: ImagePerfAnswer, *, as_json: bool, explain: bool, memory_only: bool) -> None:
    """Print the answer: JSON, or the tables (``memory_only`` for ``suanli mem``)."""
    if as_json:
        print_json(doc.to_json())
        return
    title = _("{title}: {width}x{height}, {steps} steps, batch {batch}").format(
        title=doc.title, width=doc.width, height=doc.height, steps=doc.steps, batch=doc.batch
    )
    if not memory_only:
        step = _seconds(doc.denoise_step_s)
        rows = [
            [_("GPU, dtype"), f"{doc.gpu}, {doc.dtype}"],
            [_("seconds per image"), _seconds(doc.seconds_per_image)],
            [_("images per second"), f"{doc.images_per_s:,.3f}"],
            [
                _("one denoising step"),
                _("{seconds} (2 x batch: guidance)").format(seconds=step) if doc.guidance else step,
            ],
            [_("text encoders"), _seconds(doc.encode_s)],
            [_("VAE decode"), _seconds(doc.decode_s)],
        ]
        if doc.transfer_s:
            rows.append([_("weight transfers (offload)"), _seconds(doc.transfer_s)])
        rows.append([_("TFLOPs per image"), f"{doc.flops_per_image / 1e12:,.1f}"])
        print_table(title, ["", ""], rows)
    if doc.offload != "none":
        verdict = (
            _("fits in {gib} GiB (offload {offload})")
            if doc.fits
            else _("does NOT fit in {gib} GiB (offload {offload})")
        )
    else:
        verdict = _("fits in {gib} GiB") if doc.fits else _("does NOT fit in {gib} GiB")
    mem_rows = [[_(k), _gib(v)] for k, v in doc.memory_breakdown.items()]
    if memory_only:
        mem_rows.insert(0, [_("GPU, dtype"), f"{doc.gpu}, {doc.dtype}"])
    mem_rows.append([_("total"), _gib(doc.memory_bytes)])
    mem_rows.append(
        [_("verdict"), verdict.format(gib=_gib(doc.gpu_memory_bytes), offload=doc.offload)]
    )
    print_table(
        _("memory, GiB") if not memory_only else _("{title}: memory, GiB").format(title=title),
        ["", ""],
        mem_rows,
    )
    print_table(
        _("components"),
        [
            _("component"),
            _("class"),
            _("params"),
            GIB,
            _("GFLOPs/call"),
            _("calls"),
            _("per call"),
        ],
        [
            [
                c.name,
                c.cls,
                f"{c.params / 1e6:,.0f}M",
                _gib(c.weight_bytes),
                f"{c.flops_per_call / 1e9:,.0f}",
                str(c.calls),
                _seconds(c.seconds_per_call),
            ]
            for c in doc.components
        ],
    )
    if explain:
        print_table(
            _("time terms (per pipeline call)"),
            [_("term"), _("seconds"), _("source"), _("formula")],
            [
                [sentence(t.term), f"{t.seconds:,.3f}", sentence(t.source), sentence(t.formula)]
                for t in doc.terms
            ],
        )
        for key, text in doc.explain.items():
            click.echo(f"{key}: {sentence(text)}")
        for note in doc.assumptions:
            click.echo(_("assumption: {note}").format(note=sentence(note)))
    for warning in doc.warnings:
        print_line(
            _("cannot run as given: {warning}").format(warning=sentence(warning)),
            fg="red",
            err=True,
        )
