"""The live machine: ``suanli doctor``, ``top``, ``query`` and ``export``."""

from __future__ import annotations

import sys
import time
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

import click

from suanli.cli.render import print_json, print_table, write_json_file
from suanli.cli.scaling import scaling_cmd
from suanli.cli.types import FloatRange, IntRange
from suanli.errors import MissingExtra
from suanli.i18n import N_, _, message_of, sentence
from suanli.printable import printable

if TYPE_CHECKING:
    from suanli.answers.doctor_run import OomAutopsy
    from suanli.answers.live import LiveAnswer
    from suanli.live.diagnosis import Report

#: A verdict's status as ``suanli doctor`` shows it (translated when shown).
_STATUS = {"ok": N_("ok"), "warn": N_("WARN"), "fail": N_("FAIL"), "info": N_("info")}


#: ``doctor run``'s verdicts (translated when shown).
_VERDICT = {
    "input-bound": N_("input-bound"),
    "communication-bound": N_("communication-bound"),
    "sync-bound": N_("sync-bound"),
    "launch-bound": N_("launch-bound"),
    "compute-bound": N_("compute-bound"),
}
#: The phases of a training step whose shares ``doctor run`` shows.
_PHASE = {
    "data": N_("data"),
    "h2d": N_("h2d"),
    "forward": N_("forward"),
    "backward": N_("backward"),
    "optimizer": N_("optimizer"),
    "communication": N_("communication"),
    "other": N_("other"),
}
#: How each process of ``doctor run`` ended.
_ENDED = {
    "finished": N_("finished"),
    "returned": N_("returned"),
    "exit": N_("exit"),
    "raise": N_("raise"),
    "interrupted": N_("interrupted"),
    "killed": N_("killed"),
}
#: The process labels ``doctor run`` writes (shown through sentence()).
_PROCESS_LABELS = (N_("script"), N_("rank {rank}"), N_("fork of {pid}"))
#: The parts of the memory ``doctor run``'s OOM autopsy measured.
_MEASURED = {
    "weights": N_("weights"),
    "gradients": N_("gradients"),
    "optimizer": N_("optimizer"),
    "activations": N_("activations"),
    "activations_and_temporaries": N_("activations_and_temporaries"),
}


def _word(words: dict[str, str], key: str) -> str:
    """``key`` in the current language when it is one of ``words``, else as it is."""
    return _(words[key]) if key in words else key


def _na(value: Any, fmt: str = "{}") -> str:
    return "N/A" if value is None else fmt.format(value)


@click.group(
    "doctor",
    invoke_without_command=True,
    help=N_(
        "Environment verdicts with the exact fix: driver, PyTorch build, CUDA versions, "
        "devices.\n\nExit code 1 when a problem is found, 0 when healthy (for CI scripts). "
        "'suanli doctor run train.py ARGS' diagnoses a training loop instead."
    ),
)
@click.option("--json", "as_json", is_flag=True, help=N_("Print one JSON document."))
@click.option(
    "--all-ranks",
    is_flag=True,
    help=N_(
        "Run under torchrun or srun, one process per rank: gather every rank's driver, CUDA, "
        "NCCL, PyTorch, GPU and network facts and report where they disagree (rank 0 prints)."
    ),
)
@click.pass_context
def doctor_cmd(ctx: click.Context, as_json: bool, all_ranks: bool) -> None:
    """``suanli doctor``: its help is the ``help=`` above (translated with --lang zh)."""
    if ctx.invoked_subcommand is not None:
        return
    if all_ranks:
        _doctor_all_ranks(as_json)
    from suanli.answers.doctor import doctor

    answer = doctor()
    if as_json:
        print_json(answer.to_json())
    else:
        rows = [
            [_(_STATUS[v.status]), sentence(v.check), sentence(v.detail)] for v in answer.verdicts
        ]
        print_table(_("suanli doctor"), ["", _("check"), _("seen")], rows)
        # Fixes in full, one per line, so a command can be copied whole.
        for v in answer.verdicts:
            if v.fix and v.status in ("fail", "warn"):
                click.echo(
                    _("fix {check}: {fix}").format(check=sentence(v.check), fix=sentence(v.fix))
                )
        click.echo(_("healthy") if answer.healthy else _("problems found: apply the fixes above"))
    sys.exit(0 if answer.healthy else 1)


# ``doctor scaling`` (1 and N processes, 1 and N nodes) lives in its own module.
doctor_cmd.add_command(scaling_cmd)


def _doctor_all_ranks(as_json: bool) -> None:
    """``suanli doctor --all-ranks``: rank 0 prints and carries the exit code; the other ranks
    exit 0 silently, because torchrun kills the remaining ranks when one fails, which could stop
    rank 0 before it printed."""
    from suanli.answers.doctor import doctor_ranks
    from suanli.live.ranks import rank_ranges

    answer = doctor_ranks()
    code = 0 if answer.healthy else 1
    if answer.rank != 0:
        sys.exit(0)
    if as_json:
        print_json(answer.to_json())
        sys.exit(code)
    hosts: dict[str, list[int]] = {}
    for r in answer.ranks:
        hosts.setdefault(r.hostname, []).append(r.rank)
    rows = []
    for d in answer.disagreements:
        for i, group in enumerate(d.values):
            status = ("fail" if d.critical else "warn") if i == 0 else None
            rows.append(
                [
                    _(_STATUS[status]) if status else "",
                    sentence(d.label) if i == 0 else "",
                    _na(group.value),
                    rank_ranges(group.ranks),
                ]
            )
    title = _("suanli doctor --all-ranks: {world} ranks on {hosts} host(s), {backend}").format(
        world=answer.world_size, hosts=len(hosts), backend=answer.backend
    )
    if rows:
        print_table(title, ["", _("fact"), _("value"), _("ranks")], rows)
    else:
        click.echo(title)
    for host, ranks in hosts.items():
        click.echo(_("{host}: ranks {ranks}").format(host=host, ranks=rank_ranges(ranks)))
    if not answer.disagreements:
        click.echo(_("all ranks agree"))
    elif answer.healthy:
        click.echo(_("the ranks differ only where nodes may differ on purpose (warnings)"))
    else:
        click.echo(_("critical facts disagree: make those ranks' software the same"))
    sys.exit(code)


@doctor_cmd.command(
    "run",
    context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False},
    help=N_(
        "Run an unmodified PyTorch training SCRIPT with instrumentation and print one verdict "
        "(input-, sync-, launch-, communication- or compute-bound) with ranked, quantified "
        "fixes.\n\nThe script runs in a child process: its exit status is passed on (a signal N "
        "as 128+N, --timeout as 124), and the report comes however it ends. Processes it forks "
        "are reported each; what it leaves running is stopped at the end."
    ),
)
@click.option(
    "--steps",
    type=IntRange(min=3),
    default=30,
    show_default=True,
    help=N_("Training steps to record (replayed steps included)."),
)
@click.option(
    "--replay",
    type=IntRange(min=0),
    default=8,
    show_default=True,
    help=N_("Final steps fed from cached batches: measures 'what if data were free'."),
)
@click.option("--warmup", type=IntRange(min=0), default=2, show_default=True)
@click.option(
    "--timeout",
    "timeout_s",
    type=FloatRange(min=0),
    default=1800,
    show_default=True,
    help=N_("Stop the script after SECONDS (0: no limit) and report the steps recorded by then."),
)
@click.option("--json", "as_json", is_flag=True, help=N_("Print one JSON document."))
@click.option(
    "-o",
    "--output",
    "output",
    type=click.Path(dir_okay=False, writable=True),
    default=None,
    help=N_("Also write the JSON answer to FILE (written whole, or not at all)."),
)
@click.argument("script", type=click.Path(dir_okay=False))
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
def doctor_run_cmd(
    steps: int,
    replay: int,
    warmup: int,
    timeout_s: float,
    as_json: bool,
    output: str | None,
    script: str,
    args: tuple[str, ...],
) -> None:
    """``suanli doctor run``: its help is the ``help=`` above (translated with --lang zh)."""
    from suanli.answers.doctor_run import DoctorRunRequest, ScriptEndedEarly, doctor_run

    def show_autopsy(outcome: OomAutopsy) -> None:
        _print_autopsy(outcome, as_json)

    if output:
        import os

        folder = os.path.dirname(os.path.abspath(output))
        if not os.path.isdir(folder) or not os.access(folder, os.W_OK):
            # Checked before the run: a report lost at the end of a long run costs the run.
            raise ValueError(
                _("cannot write {path}: its folder does not exist or is read-only").format(
                    path=repr(output)
                )
            )
    req = DoctorRunRequest(
        script=script,
        args=args,
        steps=steps,
        replay=replay,
        warmup=warmup,
        stdout_to_stderr=as_json,
        timeout_s=timeout_s or None,
    )
    try:
        answer = doctor_run(req, on_autopsy=show_autopsy)
    except ScriptEndedEarly as exc:
        # The report as far as it got (one sentence), then the script's own exit status.
        shown = sentence(message_of(exc))
        click.echo(printable(_("error: {message}").format(message=shown)), err=True)
        sys.exit(exc.exit_code)
    if output:
        write_json_file(output, answer.to_json())
    if as_json:
        print_json(answer.to_json())
    else:
        if answer.report is not None:
            click.echo(_format_report(answer.report))
        if answer.data_free_step_s:
            click.echo(
                _("  with data replayed from memory a step takes {ms} ms").format(
                    ms=f"{answer.data_free_step_s * 1e3:.1f}"
                )
            )
        for proc in answer.processes or ():
            click.echo(
                _(
                    "  {label} (pid {pid}): {verdict}, step {ms} ms over {steps} steps, {ended}"
                ).format(
                    label=sentence(proc.label),
                    pid=proc.pid,
                    verdict=_word(_VERDICT, proc.verdict),
                    ms=f"{proc.step_time_s * 1e3:.1f}",
                    steps=proc.steps,
                    ended=_word(_ENDED, proc.ended),
                )
            )
        if answer.script_error:
            click.echo(
                _("  note: the script ended: {error}").format(error=sentence(answer.script_error))
            )
    # The report is printed whatever way the script ended; its own exit status is passed on.
    if answer.script_exit_code:
        sys.exit(answer.script_exit_code)


def _format_report(report: Report) -> str:
    """A few plain lines: the verdict, the shares, the fixes (as
    :func:`suanli.live.callbacks.format_report` writes them, in the current language)."""
    shares = ", ".join(f"{_word(_PHASE, k)} {v:.0%}" for k, v in report.shares.items() if v >= 0.01)
    lines = [
        _("suanli doctor: {verdict} — {explanation}").format(
            verdict=_word(_VERDICT, report.verdict), explanation=sentence(report.explanation)
        ),
        _("  step {ms} ms over {steps} steps: {shares}").format(
            ms=f"{report.step_time_s * 1e3:.1f}", steps=report.steps, shares=shares
        ),
    ]
    for fix in report.fixes:
        lines.append(
            _("  fix ({speedup}x): {action}").format(
                speedup=f"{fix.expected_speedup:.1f}", action=sentence(fix.action)
            )
        )
    return "\n".join(lines)


def _reading(provs: list[Any]) -> LiveAnswer:
    """One reading of every device (the CPU when there is no GPU); MissingExtra when nothing
    could be read for want of psutil."""
    from suanli.answers.live import live_report

    answer = live_report(provs)
    if answer.missing_extra:
        raise MissingExtra(answer.missing_extra)
    return answer


def _render_top(answer: LiveAnswer) -> None:
    samples = [r.sample for r in answer.samples]
    rows = []
    for s in samples:
        if s.lost:
            rows.append([str(s.index), s.name, _("LOST"), "", "", "", "", ""])
            continue
        mem = (
            f"{s.memory_used_bytes / 2**30:,.1f}/{s.memory_total_bytes / 2**30:,.1f} GiB"
            if s.memory_total_bytes and s.memory_used_bytes is not None
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
        _("devices"),
        [
            "#",
            _("name"),
            _("util"),
            _("memory"),
            _("power"),
            _("temp"),
            _("SM MHz"),
            _("PCIe, enc/dec %"),
        ],
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
        print_table(
            _("processes"),
            [_("gpu"), _("pid"), _("user"), _("name"), _("GiB"), _("path")],
            procs,
        )
    for r in answer.samples:
        for f in r.flags:
            click.echo(
                _("! gpu {index} {kind}: {message}").format(
                    index=f.index, kind=f.kind, message=sentence(f.message)
                )
            )


@click.command(
    "top",
    help=N_(
        "Live view of each GPU: utilisation, memory, power, temperature, clocks, PCIe, "
        "processes, with flags for idle-but-full memory, throttling, down-trained links and "
        "unknown processes."
    ),
)
@click.option(
    "--interval",
    type=FloatRange(min=0.1),
    default=2.0,
    show_default=True,
    help=N_("Seconds between refreshes."),
)
@click.option(
    "--count",
    type=IntRange(min=1),
    default=None,
    help=N_("Refreshes before exiting (default: until Ctrl-C)."),
)
@click.option("--once", is_flag=True, help=N_("One reading, then exit."))
@click.option("--json", "as_json", is_flag=True, help=N_("One JSON reading (implies --once)."))
def top_cmd(interval: float, count: int | None, once: bool, as_json: bool) -> None:
    """``suanli top``: its help is the ``help=`` above (translated with --lang zh)."""
    from suanli.live.devices import providers

    provs = providers()
    if as_json:
        print_json(_reading(provs).top().to_json())
        return
    n = 1 if once else count
    i = 0
    try:
        while n is None or i < n:
            if i:
                time.sleep(interval)
                click.clear()
            _render_top(_reading(provs))
            i += 1
    except KeyboardInterrupt:
        pass


@click.command(
    "query",
    help=N_("Sample fields for scripts and logs (nvidia-smi --query-gpu compatible names)."),
)
@click.option(
    "--fields",
    default=None,
    help=N_(
        "Comma-separated nvidia-smi --query-gpu names (default: index, name, "
        "memory.total, memory.used, utilization.gpu, power.draw, temperature.gpu)."
    ),
)
@click.option("--interval", type=FloatRange(min=0.05), default=1.0, show_default=True)
@click.option("--count", type=IntRange(min=1), default=1, show_default=True)
@click.option(
    "--format", "fmt", type=click.Choice(["csv", "json"]), default="csv", show_default=True
)
@click.option(
    "--timestamp/--no-timestamp", default=False, help=N_("Prefix each row with the time.")
)
def query_cmd(fields: str | None, interval: float, count: int, fmt: str, timestamp: bool) -> None:
    """``suanli query``: its help is the ``help=`` above (translated with --lang zh)."""
    from suanli.live.devices import providers
    from suanli.live.monitor import DEFAULT_QUERY, format_rows, parse_fields

    names = parse_fields(fields) if fields else list(DEFAULT_QUERY)
    provs = providers()
    for i in range(count):
        if i:
            time.sleep(interval)
        stamp = datetime.now(timezone.utc).isoformat(timespec="seconds") if timestamp else None
        samples = [r.sample for r in _reading(provs).samples]
        sys.stdout.write(format_rows(samples, names, fmt, header=i == 0, timestamp=stamp))
        sys.stdout.flush()


@click.command(
    "export",
    help=N_(
        "A Prometheus exporter on http://HOST:PORT/metrics; a failed read becomes "
        "suanli_scrape_error 1, and the server keeps serving."
    ),
)
# 10422 = suanli.live.exporter.DEFAULT_PORT (kept literal: that module imports prometheus_client;
# a test keeps the two equal). 9400 was dcgm-exporter's.
@click.option(
    "--port",
    type=IntRange(1, 65535),
    default=10422,
    show_default=True,
    help=N_("Port to listen on (9400 is dcgm-exporter's, so suanli has its own)."),
)
@click.option(
    "--host",
    default="127.0.0.1",
    show_default=True,
    help=N_("Address to bind (0.0.0.0 exposes it to the network)."),
)
@click.option("--max-requests", type=IntRange(min=1), default=None, hidden=True)
def export_cmd(port: int, host: str, max_requests: int | None) -> None:
    """``suanli export``: its help is the ``help=`` above (translated with --lang zh)."""
    from suanli.cli.serve import is_loopback
    from suanli.live.exporter import serve

    if not is_loopback(host):
        click.echo(
            _(
                "warning: listening on {host}, not loopback: anyone who can reach this machine "
                "can read this GPU's metrics (there is no authentication)"
            ).format(host=host),
            err=True,
        )
    click.echo(
        _("serving metrics on http://{host}:{port}/metrics (Ctrl-C to stop)").format(
            host=host, port=port
        ),
        err=True,
    )
    try:
        serve(host, port, max_requests=max_requests)
    except OSError as exc:
        raise ValueError(
            _("cannot listen on {host}:{port} ({reason}); pick another --port").format(
                host=host, port=port, reason=exc.strerror
            )
        ) from None
    except KeyboardInterrupt:
        pass


def _print_autopsy(outcome: OomAutopsy, as_json: bool) -> None:
    """The OOM autopsy of a recorded run, on stderr."""
    if outcome.doc is not None:
        click.echo(json_dumps(outcome.doc) if as_json else _format_autopsy(outcome.doc), err=True)
    else:
        click.echo(
            _("(autopsy failed: {error})").format(error=sentence(outcome.error or "")), err=True
        )


def _format_autopsy(doc: dict[str, Any]) -> str:
    """Plain lines for the terminal (as :func:`suanli.live.autopsy.format_autopsy` writes them,
    in the current language)."""
    from suanli.units import GiB

    lines = [
        _("out of memory: {measured} GiB measured against a limit of {limit} GiB").format(
            measured=f"{doc['measured_total_bytes'] / GiB:.2f}",
            limit=f"{doc['limit_bytes'] / GiB:.2f}",
        )
    ]
    for key, value in doc["measured_bytes"].items():
        lines.append(
            _("  measured {part}: {size} GiB").format(
                part=_word(_MEASURED, key), size=f"{value / GiB:.3f}"
            )
        )
    if doc.get("estimate"):
        lines.append(
            _("  the estimator expected {size} GiB for this model and batch").format(
                size=f"{doc['estimate']['total_bytes'] / GiB:.2f}"
            )
        )
        for step in doc["remedies"]:
            values = {
                "change": sentence(step["change"]),
                "size": f"{step['memory_bytes'] / GiB:.2f}",
                "saved": f"{step['saved_bytes'] / GiB:.2f}",
            }
            if step["fits"]:
                lines.append(_("  -> {change}: {size} GiB (saves {saved}) fits").format(**values))
            else:
                lines.append(_("  -> {change}: {size} GiB (saves {saved}) ").format(**values))
    elif doc.get("note"):
        lines.append(f"  {sentence(doc['note'])}")
    return "\n".join(lines)


def json_dumps(doc: Any) -> str:
    """Compact JSON for stderr."""
    import json

    return json.dumps(doc, default=str)
