"""``suanli stencil``: size an FDTD / stencil simulation the way ``plan`` and ``fit`` size AI."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from suanli.cli.render import print_json, print_table
from suanli.cli.types import IntRange
from suanli.i18n import N_, _, sentence
from suanli.units import GiB

if TYPE_CHECKING:
    pass


@click.command(
    "stencil",
    help=N_(
        "Memory and time of a finite-difference time-domain (Yee) or stencil simulation.\n"
        "\n"
        "Stencils are bandwidth-bound; the same roofline and network model as the AI estimates. "
        "Example: suanli stencil --grid 1024 1024 1024 --steps 10000 --gpu a100 --gpus 4"
    ),
)
@click.option(
    "--grid",
    nargs=3,
    type=IntRange(min=1),
    default=(512, 512, 512),
    show_default=True,
    metavar="NX NY NZ",
    help=N_("Grid cells along x, y, z."),
)
@click.option(
    "--steps", type=IntRange(min=1), default=10_000, show_default=True, help=N_("Time steps.")
)
@click.option(
    "--dtype", type=click.Choice(["fp32", "fp64", "fp16"]), default="fp32", show_default=True
)
@click.option(
    "--fields",
    type=IntRange(min=1),
    default=6,
    show_default=True,
    help=N_("Field components (6 for 3-D Maxwell E and H)."),
)
@click.option(
    "--coefficients",
    type=IntRange(min=0),
    default=12,
    show_default=True,
    help=N_("Material coefficient arrays stored per cell."),
)
@click.option(
    "--gpu",
    "gpu_name",
    default=None,
    help=N_("One GPU; without it every catalog GPU is ranked by time."),
)
@click.option(
    "--gpus",
    type=IntRange(min=1),
    default=1,
    show_default=True,
    help=N_("GPUs in the domain decomposition (slabs along x)."),
)
@click.option("--overlap-halo", is_flag=True, help=N_("Overlap the halo exchange with compute."))
@click.option("--top", type=IntRange(min=1), default=10, show_default=True)
@click.option("--catalog", "catalog_file", type=click.Path(dir_okay=False), default=None)
@click.option("--json", "as_json", is_flag=True, help=N_("Print one JSON document."))
def stencil_cmd(
    grid: tuple[int, int, int],
    steps: int,
    dtype: str,
    fields: int,
    coefficients: int,
    gpu_name: str | None,
    gpus: int,
    overlap_halo: bool,
    top: int,
    catalog_file: str | None,
    as_json: bool,
) -> None:
    """``suanli stencil``: its help is the ``help=`` above (translated with --lang zh)."""
    from suanli.answers.stencil import StencilRequest, stencil

    answer = stencil(
        StencilRequest(
            grid=grid,
            steps=steps,
            dtype=dtype,
            fields=fields,
            coefficients=coefficients,
            gpu=gpu_name,
            gpus=gpus,
            overlap_halo=overlap_halo,
            catalog_file=catalog_file,
        )
    )
    if as_json:
        print_json(answer.to_json())
        return
    ok = answer.reports
    rows = [
        [
            r.gpu,
            f"{r.memory.per_gpu_bytes / GiB:,.1f}",
            _("yes") if r.memory.fits else _("no"),
            f"{r.time.step_s * 1e3:,.2f} ms",
            f"{r.time.total_s:,.0f} s",
            f"{r.throughput.mcells_per_s:,.0f}",
            _(r.bound),
            str(r.fit.gpus_needed or "-"),
        ]
        for r in ok[:top]
    ]
    gpu = _("gpu")
    print_table(
        _("FDTD {grid} {dtype}, {steps} steps on {gpus} GPU(s)").format(
            grid=f"{grid[0]}x{grid[1]}x{grid[2]}", dtype=dtype, steps=f"{steps:,}", gpus=gpus
        ),
        [
            gpu,
            _("GiB/GPU"),
            _("fits"),
            _("step"),
            _("total"),
            _("Mcells/s"),
            _("bound"),
            _("GPUs needed"),
        ],
        rows,
        no_wrap=[gpu],
    )
    if ok:
        for note in ok[0].assumptions:
            click.echo(_("assumption: {note}").format(note=sentence(note)))
