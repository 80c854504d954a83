"""``suanli stencil``: size an FDTD / stencil simulation the way ``plan`` and ``fit`` size AI."""

from __future__ import annotations

from typing import Any

import click

from suanli.catalog import find_gpu, load_catalog
from suanli.cli.render import print_json, print_table
from suanli.estimate.stencil import StencilWork, stencil_report
from suanli.hardware import device_for
from suanli.units import GiB


@click.command("stencil")
@click.option(
    "--grid",
    nargs=3,
    type=click.IntRange(min=1),
    default=(512, 512, 512),
    show_default=True,
    metavar="NX NY NZ",
    help="Grid cells along x, y, z.",
)
@click.option(
    "--steps", type=click.IntRange(min=1), default=10_000, show_default=True, help="Time steps."
)
@click.option(
    "--dtype", type=click.Choice(["fp32", "fp64", "fp16"]), default="fp32", show_default=True
)
@click.option(
    "--fields",
    type=click.IntRange(min=1),
    default=6,
    show_default=True,
    help="Field components (6 for 3-D Maxwell E and H).",
)
@click.option(
    "--coefficients",
    type=click.IntRange(min=0),
    default=12,
    show_default=True,
    help="Material coefficient arrays stored per cell.",
)
@click.option(
    "--gpu",
    "gpu_name",
    default=None,
    help="One GPU; without it every catalog GPU is ranked by time.",
)
@click.option(
    "--gpus",
    type=click.IntRange(min=1),
    default=1,
    show_default=True,
    help="GPUs in the domain decomposition (slabs along x).",
)
@click.option("--overlap-halo", is_flag=True, help="Overlap the halo exchange with compute.")
@click.option("--top", type=click.IntRange(min=1), default=10, show_default=True)
@click.option("--catalog", "catalog_file", type=click.Path(dir_okay=False), default=None)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document.")
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
    """Memory and time of a finite-difference time-domain (Yee) or stencil simulation.

    Stencils are bandwidth-bound; the same roofline and network model as the AI estimates.
    Example: suanli stencil --grid 1024 1024 1024 --steps 10000 --gpu a100 --gpus 4
    """
    work = StencilWork(
        nx=grid[0],
        ny=grid[1],
        nz=grid[2],
        time_steps=steps,
        dtype=dtype,
        fields=fields,
        coefficient_arrays=coefficients,
        gpus=gpus,
        overlap_halo=overlap_halo,
    )
    catalog = load_catalog(catalog_file)
    gpus_list = [find_gpu(gpu_name, catalog)] if gpu_name else catalog
    reports: list[dict[str, Any]] = []
    for gpu in gpus_list:
        try:
            device = device_for(gpu, "fp32")
        except ValueError:
            continue
        try:
            reports.append(stencil_report(gpu, work, device))
        except ValueError as exc:
            if gpu_name:
                raise
            reports.append({"gpu": gpu.id, "error": str(exc)})
    ok = [r for r in reports if "error" not in r]
    ok.sort(key=lambda r: (not r["memory"]["fits"], r["time"]["total_s"]))
    if as_json:
        print_json(ok[0] if gpu_name and ok else {"rows": ok})
        return
    rows = [
        [
            r["gpu"],
            f"{r['memory']['per_gpu_bytes'] / GiB:,.1f}",
            "yes" if r["memory"]["fits"] else "no",
            f"{r['time']['step_s'] * 1e3:,.2f} ms",
            f"{r['time']['total_s']:,.0f} s",
            f"{r['throughput']['mcells_per_s']:,.0f}",
            r["bound"],
            str(r["fit"]["gpus_needed"] or "-"),
        ]
        for r in ok[:top]
    ]
    print_table(
        f"FDTD {grid[0]}x{grid[1]}x{grid[2]} {dtype}, {steps:,} steps on {gpus} GPU(s)",
        ["gpu", "GiB/GPU", "fits", "step", "total", "Mcells/s", "bound", "GPUs needed"],
        rows,
        no_wrap=["gpu"],
    )
    if ok:
        for note in ok[0]["assumptions"]:
            click.echo(f"assumption: {note}")
