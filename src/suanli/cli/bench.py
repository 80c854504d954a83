"""``suanli bench``: measure this machine's matmul, memory, host<->device and all-reduce rates,
grade them against the catalog, and save a calibration profile for ``suanli perf``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click

from suanli.cli.render import print_json, print_table
from suanli.cli.types import IntRange
from suanli.errors import MissingExtra
from suanli.i18n import N_, _, sentence
from suanli.units import fmt_bytes, fmt_rate

if TYPE_CHECKING:
    from suanli.answers.bench import BenchAnswer, BenchRequest

_GRADE_STYLE = {"pass": "green", "warn": "yellow", "fail": "bold red", "info": "cyan"}
#: The grades (English in the JSON), shown translated.
GRADE_WORDS = (N_("pass"), N_("warn"), N_("fail"), N_("info"))


#: Column headings that are units or formula names (the same in every language).
FLOPS, ALGBW, BUSBW = "FLOP/s", "algbw", "busbw"


def _torch_available() -> bool:
    from suanli.answers.bench import torch_available

    return torch_available()


def _pct(value: float | None) -> str:
    return "" if value is None else f"{value:.0f}%"


def _grade(g: Any) -> str:
    style = _GRADE_STYLE.get(g.grade, "")
    word = _(g.grade)
    return f"[{style}]{word}[/]" if style else word


def _esc(text: str) -> str:
    from rich.markup import escape

    return escape(text)


def _rows(result: Any) -> list[list[str]]:
    rows: list[list[str]] = []
    for m in result.matmul:
        shape = "x".join(str(s) for s in m.best_shape) if m.best_shape else ""
        rows.append(
            [
                _("matmul {dtype}").format(dtype=m.dtype),
                fmt_rate(m.best_flops_per_s) if m.best_flops_per_s else "—",
                _("best at {shape}").format(shape=shape) if shape else "",
                fmt_rate(m.grade.datasheet) if m.grade.datasheet else "",
                _pct(m.grade.percent_of_datasheet),
                _pct(m.grade.percent_of_ceiling),
                _grade(m.grade),
                _esc(sentence(m.grade.cause)),
            ]
        )

    def bandwidth_row(r: Any) -> list[str]:
        return [
            sentence(r.name),
            fmt_rate(r.bytes_per_s, "B/s") if r.bytes_per_s else "—",
            fmt_bytes(r.bytes) if r.bytes else "",
            fmt_rate(r.grade.datasheet, "B/s") if r.grade.datasheet else "",
            _pct(r.grade.percent_of_datasheet),
            _pct(r.grade.percent_of_ceiling),
            _grade(r.grade),
            _esc(sentence(r.grade.cause)),
        ]

    rows.append(bandwidth_row(result.memory))
    rows.extend(bandwidth_row(t) for t in result.host_transfer)
    ar = result.allreduce
    best = max(ar.sizes, key=lambda s: s.busbw_bytes_per_s, default=None)
    rows.append(
        [
            _("all-reduce busbw"),
            fmt_rate(ar.best_busbw_bytes_per_s, "B/s") if ar.best_busbw_bytes_per_s else "—",
            (
                _("{backend}, {ranks} ranks, at {size}").format(
                    backend=ar.backend, ranks=ar.processes, size=fmt_bytes(best.bytes)
                )
                if best
                else _("{backend}, {ranks} ranks").format(backend=ar.backend, ranks=ar.processes)
            ),
            fmt_rate(ar.grade.datasheet, "B/s") if ar.grade.datasheet else "",
            _pct(ar.grade.percent_of_datasheet),
            _pct(ar.grade.percent_of_ceiling),
            _grade(ar.grade),
            _esc(sentence(ar.grade.cause)),
        ]
    )
    return rows


def _print_tables(result: Any, saved: str | None) -> None:
    columns = [
        _("measurement"),
        _("result"),
        _("detail"),
        _("datasheet"),
        _("of datasheet"),
        _("of ceiling"),
        _("grade"),
        _("likely cause / note"),
    ]
    right = [columns[1], columns[3], columns[4], columns[5]]
    rows = _rows(result)
    caption: str | None = _(
        "of ceiling: of the datasheet x the achievable fraction real kernels reach "
        "(catalog/data/efficiency.toml); pass >= 90%, warn >= 75%, else fail."
    )
    if not any(row[3] for row in rows):  # nothing to compare with (a CPU): drop empty columns
        columns = columns[:3] + columns[6:]
        rows = [row[:3] + row[6:] for row in rows]
        caption = None
    title = (
        _("suanli bench: {device_name} ({device}, quick, {seconds} s)")
        if result.quick
        else _("suanli bench: {device_name} ({device}, full, {seconds} s)")
    )
    print_table(
        title.format(
            device_name=result.device_name,
            device=result.device,
            seconds=f"{result.seconds:.1f}",
        ),
        columns,
        rows,
        right_align=right,
        no_wrap=columns[:2],
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
    skipped = [f"{m.dtype} {sentence(s)}" for m in result.matmul for s in m.skipped]
    runs = _("runs")
    if shape_rows:
        median = _("median")
        print_table(
            _("matmul sweep (median per shape, M x N x K)"),
            [_("dtype"), _("shape"), FLOPS, median, runs],
            shape_rows,
            right_align=[FLOPS, median, runs],
            caption=(
                _esc(_("skipped: {shapes}").format(shapes=_("; ").join(skipped)))
                if skipped
                else None
            ),
        )
    ar = result.allreduce
    if ar.sizes:
        columns = [_("size"), _("time"), ALGBW, BUSBW, runs]
        print_table(
            _("all-reduce ({backend}, {ranks} ranks; busbw = algbw x 2(n-1)/n)").format(
                backend=ar.backend, ranks=ar.processes
            ),
            columns,
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
            right_align=columns,
        )
    for note in result.notes:
        click.echo(_("note: {note}").format(note=sentence(note)))
    if saved:
        click.echo(_("calibration saved to {path}").format(path=saved))
        if result.in_catalog:
            click.echo(
                _("use it: suanli perf MODEL --gpu {gpu} --calibration {path}").format(
                    gpu=result.gpu_id, path=saved
                )
            )
        else:
            click.echo(
                _(
                    "{gpu} is not a catalog GPU: suanli perf cannot use this profile "
                    "(kept for reference)"
                ).format(gpu=result.gpu_id)
            )


@click.command(
    "bench",
    help=N_(
        "Measure matmul FLOP/s, memory and host<->device bandwidth and all-reduce bus bandwidth, "
        "graded against the GPU catalog; save them as a calibration for `suanli perf`."
    ),
)
@click.option(
    "--quick", is_flag=True, help=N_("Small problems: seconds on a CPU, about a minute on a GPU.")
)
@click.option(
    "--device",
    type=click.Choice(["cpu", "cuda"]),
    default=None,
    help=N_("What to measure (default: cuda if available, else cpu)."),
)
@click.option(
    "--processes",
    type=IntRange(min=1),
    default=None,
    help=N_("All-reduce ranks (default: 2 on the CPU, every GPU on CUDA; 1 skips the all-reduce)."),
)
@click.option(
    "--sizes",
    default=None,
    help=N_("All-reduce message sizes, e.g. 1M,16M,256M (bytes; K/M/G are binary)."),
)
@click.option(
    "--save/--no-save",
    default=True,
    show_default=True,
    help=N_(
        "Save the calibration to calibration/<gpu_id>.toml in suanli's config directory "
        "(~/.config/suanli on Linux; SUANLI_CONFIG moves it)."
    ),
)
@click.option(
    "--output",
    type=click.Path(dir_okay=False),
    default=None,
    help=N_("Write the calibration TOML to FILE instead (written even with --no-save)."),
)
@click.option("--json", "as_json", is_flag=True, help=N_("One JSON document on stdout."))
def bench_cmd(
    quick: bool,
    device: str | None,
    processes: int | None,
    sizes: str | None,
    save: bool,
    output: str | None,
    as_json: bool,
) -> None:
    """``suanli bench``: its help is the ``help=`` above (translated with --lang zh)."""
    if not _torch_available():
        raise MissingExtra(N_("suanli bench needs PyTorch: pip install 'suanli[torch]'"))
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
