"""The live machine: ``suanli doctor``, ``top``, ``query`` and ``export``."""

from __future__ import annotations

import sys
import time
from datetime import datetime, timezone
from typing import Any

import click

from suanli.cli.render import print_json, print_table

_STATUS = {"ok": "ok", "warn": "WARN", "fail": "FAIL", "info": "info"}


def _na(value: Any, fmt: str = "{}") -> str:
    return "N/A" if value is None else fmt.format(value)


@click.group("doctor", invoke_without_command=True)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document.")
@click.pass_context
def doctor_cmd(ctx: click.Context, as_json: bool) -> None:
    """Environment verdicts with the exact fix: driver, PyTorch build, CUDA versions, devices.

    Exit code 1 when a problem is found, 0 when healthy (for CI scripts).
    'suanli doctor run train.py ARGS' diagnoses a training loop instead.
    """
    if ctx.invoked_subcommand is not None:
        return
    from suanli.live.env import diagnose, probe

    verdicts = diagnose(probe())
    failed = any(v.status == "fail" for v in verdicts)
    if as_json:
        print_json({"healthy": not failed, "verdicts": [v.__dict__ for v in verdicts]})
    else:
        rows = [[_STATUS[v.status], v.check, v.detail] for v in verdicts]
        print_table("suanli doctor", ["", "check", "seen"], rows)
        # Fixes in full, one per line, so a command can be copied whole.
        for v in verdicts:
            if v.fix and v.status in ("fail", "warn"):
                click.echo(f"fix {v.check}: {v.fix}")
        click.echo("healthy" if not failed else "problems found: apply the fixes above")
    sys.exit(1 if failed else 0)


@doctor_cmd.command(
    "run", context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False}
)
@click.option(
    "--steps",
    type=click.IntRange(min=3),
    default=30,
    show_default=True,
    help="Training steps to record (replayed steps included).",
)
@click.option(
    "--replay",
    type=click.IntRange(min=0),
    default=8,
    show_default=True,
    help="Final steps fed from cached batches: measures 'what if data were free'.",
)
@click.option("--warmup", type=click.IntRange(min=0), default=2, show_default=True)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document.")
@click.argument("script", type=click.Path(dir_okay=False))
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
def doctor_run_cmd(
    steps: int, replay: int, warmup: int, as_json: bool, script: str, args: tuple[str, ...]
) -> None:
    """Run an unmodified PyTorch training SCRIPT with instrumentation and print one verdict
    (input-, sync-, launch-, communication- or compute-bound) with ranked, quantified fixes."""
    import contextlib
    import os
    import runpy

    from suanli.live.callbacks import format_report

    if not os.path.isfile(script):
        raise ValueError(f"no such script {script!r}; give the path of a Python training script")
    try:
        from suanli.live.profiler import profile
    except ImportError:
        from suanli.cli.main import MissingExtra

        raise MissingExtra("suanli doctor run needs PyTorch: pip install 'suanli[torch]'") from None
    if replay >= steps - warmup:
        raise ValueError("--replay must leave steps to measure: lower it or raise --steps")
    saved_argv = sys.argv
    sys.argv = [script, *args]
    error = None
    try:
        with profile(max_steps=steps, replay_steps=replay) as rec, contextlib.suppress(SystemExit):
            runpy.run_path(script, run_name="__main__")
    except Exception as exc:  # the user's script failed: report what was recorded
        error = f"{type(exc).__name__}: {exc}"
        if "out of memory" in str(exc).lower() and rec.model is not None:
            _print_autopsy(rec, as_json)
    finally:
        sys.argv = saved_argv
    if len(rec.records) <= warmup:
        raise ValueError(
            f"only {len(rec.records)} optimizer steps were recorded"
            + (f" (the script failed: {error})" if error else "")
            + "; does the script call optimizer.step() in a loop?"
        )
    report = rec.report(warmup=warmup)
    if error:
        report.extras["script_error"] = error
    if as_json:
        print_json(report.as_dict())
    else:
        click.echo(format_report(report))
        if report.data_free_step_s:
            click.echo(
                f"  with data replayed from memory a step takes "
                f"{report.data_free_step_s * 1e3:.1f} ms"
            )
        if error:
            click.echo(f"  note: the script stopped with {error}")


def _samples() -> list[Any]:
    from suanli.live.devices import gpu_samples, providers

    provs = providers()
    samples = gpu_samples(provs)
    if not samples:  # no GPU: show the CPU so the commands still say something true
        samples = next(p for p in provs if p.name == "cpu").sample()
    return samples


def _render_top(samples: list[Any]) -> None:
    from suanli.live.monitor import flags

    rows = []
    for s in samples:
        if s.lost:
            rows.append([str(s.index), s.name, "LOST", "", "", "", "", ""])
            continue
        mem = (
            f"{s.memory_used_bytes / 2**30:,.1f}/{s.memory_total_bytes / 2**30:,.1f} GiB"
            if s.memory_total_bytes
            else "N/A"
        )
        power = (
            f"{s.power_w:.0f}/{s.power_limit_w:.0f} W"
            if s.power_w is not None and s.power_limit_w
            else _na(s.power_w, "{:.0f} W")
        )
        clocks = (
            f"{s.sm_clock_mhz:.0f}/{s.sm_clock_max_mhz:.0f}"
            if s.sm_clock_mhz and s.sm_clock_max_mhz
            else _na(s.sm_clock_mhz, "{:.0f}")
        )
        pcie = (
            f"Gen{s.pcie_gen}x{s.pcie_width}/Gen{s.pcie_gen_max}x{s.pcie_width_max}"
            if s.pcie_gen
            else "N/A"
        )
        media = f"{_na(s.encoder_pct, '{:.0f}')}/{_na(s.decoder_pct, '{:.0f}')}"
        rows.append(
            [
                str(s.index),
                s.name,
                _na(s.utilization_pct, "{:.0f}%"),
                mem,
                power,
                _na(s.temperature_c, "{:.0f}C"),
                clocks,
                pcie + " " + media,
            ]
        )
    print_table(
        "devices",
        ["#", "name", "util", "memory", "power", "temp", "SM MHz", "PCIe, enc/dec %"],
        rows,
    )
    procs = [
        [
            str(s.index),
            str(p.pid),
            p.user,
            p.name,
            _na(p.memory_bytes and p.memory_bytes / 2**30, "{:.1f}"),
            p.path,
        ]
        for s in samples
        for p in s.processes
    ]
    if procs:
        print_table("processes", ["gpu", "pid", "user", "name", "GiB", "path"], procs)
    for s in samples:
        for f in flags(s):
            click.echo(f"! gpu {f.index} {f.kind}: {f.message}")


@click.command("top")
@click.option(
    "--interval",
    type=click.FloatRange(min=0.1),
    default=2.0,
    show_default=True,
    help="Seconds between refreshes.",
)
@click.option(
    "--count",
    type=click.IntRange(min=1),
    default=None,
    help="Refreshes before exiting (default: until Ctrl-C).",
)
@click.option("--once", is_flag=True, help="One reading, then exit.")
@click.option("--json", "as_json", is_flag=True, help="One JSON reading (implies --once).")
def top_cmd(interval: float, count: int | None, once: bool, as_json: bool) -> None:
    """Live view of each GPU: utilisation, memory, power, temperature, clocks, PCIe, processes,
    with flags for idle-but-full memory, throttling, down-trained links and unknown processes."""
    from suanli.live.monitor import flags

    if as_json:
        samples = _samples()
        print_json(
            [
                {
                    **s.__dict__,
                    "processes": [p.__dict__ for p in s.processes],
                    "flags": [f.__dict__ for f in flags(s)],
                }
                for s in samples
            ]
        )
        return
    n = 1 if once else count
    i = 0
    try:
        while n is None or i < n:
            if i:
                time.sleep(interval)
                click.clear()
            _render_top(_samples())
            i += 1
    except KeyboardInterrupt:
        pass


@click.command("query")
@click.option(
    "--fields",
    default=None,
    help="Comma-separated nvidia-smi --query-gpu names (default: index, name, "
    "memory.total, memory.used, utilization.gpu, power.draw, temperature.gpu).",
)
@click.option("--interval", type=click.FloatRange(min=0.05), default=1.0, show_default=True)
@click.option("--count", type=click.IntRange(min=1), default=1, show_default=True)
@click.option(
    "--format", "fmt", type=click.Choice(["csv", "json"]), default="csv", show_default=True
)
@click.option("--timestamp/--no-timestamp", default=False, help="Prefix each row with the time.")
def query_cmd(fields: str | None, interval: float, count: int, fmt: str, timestamp: bool) -> None:
    """Sample fields for scripts and logs (nvidia-smi --query-gpu compatible names)."""
    from suanli.live.monitor import DEFAULT_QUERY, format_rows, parse_fields

    names = parse_fields(fields) if fields else list(DEFAULT_QUERY)
    for i in range(count):
        if i:
            time.sleep(interval)
        stamp = datetime.now(timezone.utc).isoformat(timespec="seconds") if timestamp else None
        sys.stdout.write(format_rows(_samples(), names, fmt, header=i == 0, timestamp=stamp))
        sys.stdout.flush()


@click.command("export")
@click.option("--port", type=click.IntRange(1, 65535), default=9400, show_default=True)
@click.option(
    "--host",
    default="127.0.0.1",
    show_default=True,
    help="Address to bind (0.0.0.0 exposes it to the network).",
)
@click.option("--max-requests", type=click.IntRange(min=1), default=None, hidden=True)
def export_cmd(port: int, host: str, max_requests: int | None) -> None:
    """A Prometheus exporter on http://HOST:PORT/metrics; a failed read becomes
    suanli_scrape_error 1, and the server keeps serving."""
    from suanli.live.exporter import serve

    click.echo(f"serving metrics on http://{host}:{port}/metrics (Ctrl-C to stop)", err=True)
    try:
        serve(host, port, max_requests=max_requests)
    except OSError as exc:
        raise ValueError(
            f"cannot listen on {host}:{port} ({exc.strerror}); pick another --port"
        ) from None
    except KeyboardInterrupt:
        pass


def _print_autopsy(rec: Any, as_json: bool) -> None:
    """The OOM autopsy of a recorded run (CUDA peak against the device's memory)."""
    from suanli.live.autopsy import autopsy, format_autopsy

    try:
        import torch

        if not torch.cuda.is_available():
            return
        shape = rec.last_input_shape or (rec.batch_size or 1, 1)
        doc = autopsy(
            rec.model,
            rec.optimizer,
            batch=int(shape[0]),
            seq=int(shape[1]) if len(shape) > 1 else 1,
            limit_bytes=torch.cuda.get_device_properties(0).total_memory,
            peak_bytes=torch.cuda.max_memory_allocated(),
        )
        click.echo(json_dumps(doc) if as_json else format_autopsy(doc), err=True)
    except Exception as exc:  # the autopsy must not hide the original error
        click.echo(f"(autopsy failed: {exc})", err=True)


def json_dumps(doc: Any) -> str:
    """Compact JSON for stderr."""
    import json

    return json.dumps(doc, default=str)


@doctor_cmd.command("scaling")
@click.option(
    "--procs",
    type=click.IntRange(min=2, max=64),
    default=2,
    show_default=True,
    help="Ranks in the multi-process run (gloo on the CPU, NCCL on GPUs).",
)
@click.option("--hidden", type=click.IntRange(min=8), default=1024, show_default=True)
@click.option("--layers", type=click.IntRange(min=1), default=4, show_default=True)
@click.option("--batch", type=click.IntRange(min=1), default=16, show_default=True)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document.")
def doctor_scaling_cmd(procs: int, hidden: int, layers: int, batch: int, as_json: bool) -> None:
    """The same DDP training step on 1 and N processes: speed-up, efficiency, communication
    share and its cause, next to what the speed model predicts from the measured all-reduce."""
    try:
        from suanli.live.scaling import measure_scaling
    except ImportError:
        from suanli.cli.main import MissingExtra

        raise MissingExtra(
            "suanli doctor scaling needs PyTorch: pip install 'suanli[torch]'"
        ) from None
    doc = measure_scaling(procs, hidden, layers, batch).as_dict()
    if as_json:
        print_json(doc)
        return
    rows = [
        ["step, 1 process", f"{doc['step_1_s'] * 1e3:.1f} ms"],
        [f"step, {procs} processes", f"{doc['step_n_s'] * 1e3:.1f} ms"],
        [
            "predicted (speed model)",
            f"{doc['predicted_step_n_s'] * 1e3:.1f} ms ({doc['prediction_error']:+.0%})",
        ],
        ["bare all-reduce of the gradients", f"{doc['allreduce_s'] * 1e3:.1f} ms"],
        ["speed-up", f"{doc['speedup']:.2f}x ({doc['efficiency']:.0%} efficiency)"],
        ["communication share", f"{doc['communication_share']:.0%}"],
    ]
    print_table(
        f"scaling over {procs} {doc['backend']} processes ({doc['params']:,} params)",
        ["", ""],
        rows,
    )
    click.echo(f"cause: {doc['cause']}")
