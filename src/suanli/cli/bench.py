"""``suanli bench``: measure this machine's matmul, memory, host<->device and all-reduce rates,
grade them against the catalog, and save a calibration profile for ``suanli perf``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click

from suanli.cli.render import print_json, print_table
from suanli.cli.types import IntRange
from suanli.errors import MissingExtra
from suanli.units import fmt_bytes, fmt_rate

if TYPE_CHECKING:
    from suanli.answers.bench import BenchAnswer, BenchRequest

_GRADE_STYLE = {"pass": "green", "warn": "yellow", "fail": "bold red", "info": "cyan"}


def _torch_available() -> bool:
    from suanli.answers.bench import torch_available

    return torch_available()


def _pct(value: float | None) -> str:
    return "" if value is None else f"{value:.0f}%"


def _grade(g: Any) -> str:
    style = _GRADE_STYLE.get(g.grade, "")
    return f"[{style}]{g.grade}[/]" if style else g.grade


def _esc(text: str) -> str:
    from rich.markup import escape

    return escape(text)


def _rows(result: Any) -> list[list[str]]:
    rows: list[list[str]] = []
    for m in result.matmul:
        shape = "x".join(str(s) for s in m.best_shape) if m.best_shape else ""
        rows.append(
            [
                f"matmul {m.dtype}",
                fmt_rate(m.best_flops_per_s) if m.best_flops_per_s else "—",
                f"best at {shape}" if shape else "",
                fmt_rate(m.grade.datasheet) if m.grade.datasheet else "",
                _pct(m.grade.percent_of_datasheet),
                _pct(m.grade.percent_of_ceiling),
                _grade(m.grade),
                _esc(m.grade.cause),
            ]
        )

    def bandwidth_row(r: Any) -> list[str]:
        return [
            r.name,
            fmt_rate(r.bytes_per_s, "B/s") if r.bytes_per_s else "—",
            fmt_bytes(r.bytes) if r.bytes else "",
            fmt_rate(r.grade.datasheet, "B/s") if r.grade.datasheet else "",
            _pct(r.grade.percent_of_datasheet),
            _pct(r.grade.percent_of_ceiling),
            _grade(r.grade),
            _esc(r.grade.cause),
        ]

    rows.append(bandwidth_row(result.memory))
    rows.extend(bandwidth_row(t) for t in result.host_transfer)
    ar = result.allreduce
    best = max(ar.sizes, key=lambda s: s.busbw_bytes_per_s, default=None)
    rows.append(
        [
            "all-reduce busbw",
            fmt_rate(ar.best_busbw_bytes_per_s, "B/s") if ar.best_busbw_bytes_per_s else "—",
            f"{ar.backend}, {ar.processes} ranks"
            + (f", at {fmt_bytes(best.bytes)}" if best else ""),
            fmt_rate(ar.grade.datasheet, "B/s") if ar.grade.datasheet else "",
            _pct(ar.grade.percent_of_datasheet),
            _pct(ar.grade.percent_of_ceiling),
            _grade(ar.grade),
            _esc(ar.grade.cause),
        ]
    )
    return rows


def _print_tables(result: Any, saved: str | None) -> None:
    mode = "quick" if result.quick else "full"
    columns = [
        "measurement",
        "result",
        "detail",
        "datasheet",
        "of datasheet",
        "of ceiling",
        "grade",
        "likely cause / note",
    ]
    rows = _rows(result)
    caption: str | None = (
        "of ceiling: of the datasheet x the achievable fraction real kernels reach "
        "(catalog/data/efficiency.toml); pass >= 90%, warn >= 75%, else fail."
    )
    if not any(row[3] for row in rows):  # nothing to compare with (a CPU): drop empty columns
        columns = columns[:3] + columns[6:]
        rows = [row[:3] + row[6:] for row in rows]
        caption = None
    print_table(
        f"suanli bench: {result.device_name} ({result.device}, {mode}, {result.seconds:.1f} s)",
        columns,
        rows,
        right_align=["result", "datasheet", "of datasheet", "of ceiling"],
        no_wrap=["measurement", "result"],
        caption=caption,
    )
    shape_rows = [
        [
            m.dtype,
            f"{s.m}x{s.n}x{s.k}",
            fmt_rate(s.flops_per_s),
            f"{s.median_s * 1e3:.3f} ms",
            str(s.iterations),
        ]
        for m in result.matmul
        for s in m.shapes
    ]
    skipped = [f"{m.dtype} {s}" for m in result.matmul for s in m.skipped]
    if shape_rows:
        print_table(
            "matmul sweep (median per shape, M x N x K)",
            ["dtype", "shape", "FLOP/s", "median", "runs"],
            shape_rows,
            right_align=["FLOP/s", "median", "runs"],
            caption=_esc("skipped: " + "; ".join(skipped)) if skipped else None,
        )
    ar = result.allreduce
    if ar.sizes:
        print_table(
            f"all-reduce ({ar.backend}, {ar.processes} ranks; busbw = algbw x 2(n-1)/n)",
            ["size", "time", "algbw", "busbw", "runs"],
            [
                [
                    fmt_bytes(s.bytes),
                    f"{s.time_s * 1e6:,.1f} us",
                    fmt_rate(s.algbw_bytes_per_s, "B/s"),
                    fmt_rate(s.busbw_bytes_per_s, "B/s"),
                    str(s.iterations),
                ]
                for s in ar.sizes
            ],
            right_align=["size", "time", "algbw", "busbw", "runs"],
        )
    for note in result.notes:
        click.echo(f"note: {note}")
    if saved:
        click.echo(f"calibration saved to {saved}")
        if result.in_catalog:
            click.echo(f"use it: suanli perf MODEL --gpu {result.gpu_id} --calibration {saved}")
        else:
            click.echo(
                f"{result.gpu_id} is not a catalog GPU: suanli perf cannot use this profile "
                "(kept for reference)"
            )


@click.command("bench")
@click.option(
    "--quick", is_flag=True, help="Small problems: seconds on a CPU, about a minute on a GPU."
)
@click.option(
    "--device",
    type=click.Choice(["cpu", "cuda"]),
    default=None,
    help="What to measure (default: cuda if available, else cpu).",
)
@click.option(
    "--processes",
    type=IntRange(min=1),
    default=None,
    help="All-reduce ranks (default: 2 on the CPU, every GPU on CUDA; 1 skips the all-reduce).",
)
@click.option(
    "--sizes",
    default=None,
    help="All-reduce message sizes, e.g. 1M,16M,256M (bytes; K/M/G are binary).",
)
@click.option(
    "--save/--no-save",
    default=True,
    show_default=True,
    help="Save the calibration to ~/.config/suanli/calibration/<gpu_id>.toml.",
)
@click.option(
    "--output",
    type=click.Path(dir_okay=False),
    default=None,
    help="Write the calibration TOML to FILE instead (written even with --no-save).",
)
@click.option("--json", "as_json", is_flag=True, help="One JSON document on stdout.")
def bench_cmd(
    quick: bool,
    device: str | None,
    processes: int | None,
    sizes: str | None,
    save: bool,
    output: str | None,
    as_json: bool,
) -> None:
    """Measure matmul FLOP/s, memory and host<->device bandwidth and all-reduce bus bandwidth,
    graded against the GPU catalog; save them as a calibration for `suanli perf`."""
    if not _torch_available():
        raise MissingExtra("suanli bench needs PyTorch: pip install 'suanli[torch]'")
    from suanli.answers.bench import BenchRequest

    req = BenchRequest(
        quick=quick, device=device, processes=processes, sizes=sizes, save=save, output=output
    )
    answer = _run_with_progress(req)
    if as_json:
        print_json(answer.to_json())
        return
    _print_tables(answer.result, answer.calibration_path)


def _run_with_progress(req: BenchRequest) -> BenchAnswer:
    """The bench answer with a rich progress bar on stderr (cleared when done)."""
    from rich.console import Console
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    from suanli.answers.bench import bench

    console = Console(stderr=True)
    with Progress(
        TextColumn("[progress.description]{task.description}"),
        BarColumn(),
        TextColumn("{task.completed}/{task.total}"),
        TimeElapsedColumn(),
        console=console,
        transient=True,
        disable=not console.is_terminal,
    ) as bar:
        task = bar.add_task("bench", total=None)

        def progress(description: str, done: int, total: int) -> None:
            bar.update(task, description=description, completed=done, total=total)

        return bench(req, progress=progress)
