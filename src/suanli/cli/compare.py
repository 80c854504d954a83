"""``suanli compare MODEL --devices local-cpu,"RTX 4090","H100 SXM"``: the same work on several
devices side by side, with the ratio and the one-line reason."""

from __future__ import annotations

from typing import Any

import click

from suanli.cli.devices import resolve_gpu
from suanli.cli.options import work_from_options, workload_options
from suanli.cli.render import print_json, print_table
from suanli.estimate.perf import Device, inference_perf, training_perf
from suanli.estimate.workload import InferWork
from suanli.hardware import device_for
from suanli.models.resolve import load_model


def _split(text: str) -> list[str]:
    names = [n.strip().strip('"') for n in text.split(",") if n.strip()]
    if len(names) < 2:
        raise ValueError(
            "--devices needs at least two names separated by commas, e.g. local-cpu,rtx4090"
        )
    return names


def _reason(bound: str, device: Device, other: Device) -> str:
    """Why one device beats the other, in one line."""
    if bound == "memory":
        return (
            f"bandwidth-bound: {device.bandwidth / 1e9:,.0f} GB/s vs "
            f"{other.bandwidth / 1e9:,.0f} GB/s achievable"
        )
    return (
        f"compute-bound: {device.matmul_flops / 1e12:,.1f} vs "
        f"{other.matmul_flops / 1e12:,.1f} TFLOP/s achievable"
    )


@click.command("compare")
@click.argument("model")
@workload_options
@click.option(
    "--devices",
    required=True,
    help="Comma-separated devices: local-cpu (this machine, measured) and catalog "
    'names, e.g. local-cpu,"RTX 4090","H100 SXM".',
)
@click.option("--prompt", type=click.IntRange(min=1), default=512, show_default=True)
@click.option(
    "--output", "output_tokens", type=click.IntRange(min=1), default=128, show_default=True
)
@click.option("--catalog", "catalog_file", type=click.Path(dir_okay=False), default=None)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document.")
def compare_cmd(
    model: str,
    devices: str,
    prompt: int,
    output_tokens: int,
    catalog_file: str | None,
    as_json: bool,
    **opts: Any,
) -> None:
    """Why did my request go from 10 s to 300 ms? The same roofline — FLOP/s and memory
    bandwidth — for a CPU and GPUs, side by side, in plain words."""
    if opts["task"] == "infer":
        opts["context"] = prompt + output_tokens
    work = work_from_options(opts)
    spec = load_model(model).spec
    rows: list[dict[str, Any]] = []
    built: list[Device] = []
    for name in _split(devices):
        gpu, calibration = resolve_gpu(name, catalog_file)
        dtype = "bf16" if isinstance(work, InferWork) else work.dtype
        device = device_for(gpu, dtype, calibration=calibration, auto_calibration=False)
        built.append(device)
        if isinstance(work, InferWork):
            r = inference_perf(spec, work, device, prompt, output_tokens)
            rows.append(
                {
                    "device": gpu.id,
                    "name": gpu.name,
                    "ttft_s": r.ttft_s,
                    "tpot_s": r.tpot_s,
                    "tokens_per_s": r.tokens_per_s,
                    "bound": r.bound,
                    "request_s": r.ttft_s + output_tokens * r.tpot_s,
                }
            )
        else:
            t = training_perf(spec, work, device)
            rows.append(
                {
                    "device": gpu.id,
                    "name": gpu.name,
                    "step_time_s": t.step_time_s,
                    "tokens_per_s": t.tokens_per_s,
                    "bound": t.bound,
                }
            )
    slowest = min(range(len(rows)), key=lambda i: rows[i]["tokens_per_s"])
    for i, row in enumerate(rows):
        row["speedup_vs_slowest"] = row["tokens_per_s"] / rows[slowest]["tokens_per_s"]
        row["reason"] = "" if i == slowest else _reason(row["bound"], built[i], built[slowest])
        row["achievable_tflops"] = built[i].matmul_flops / 1e12
        row["achievable_bandwidth_gbs"] = built[i].bandwidth / 1e9
    if as_json:
        print_json({"model": model, "task": opts["task"], "rows": rows})
        return
    if isinstance(work, InferWork):
        table = [
            [
                r["device"],
                f"{r['ttft_s'] * 1e3:,.1f} ms",
                f"{r['tpot_s'] * 1e3:,.2f} ms",
                f"{r['request_s']:,.2f} s",
                f"{r['tokens_per_s']:,.1f}",
                f"{r['speedup_vs_slowest']:,.0f}x",
            ]
            for r in rows
        ]
        print_table(
            f"{model}: {prompt} prompt + {output_tokens} output tokens, batch {work.batch}",
            ["device", "TTFT", "per token", "request", "tokens/s", "speed"],
            table,
        )
    else:
        table = [
            [
                r["device"],
                f"{r['step_time_s']:,.3f} s",
                f"{r['tokens_per_s']:,.0f}",
                f"{r['speedup_vs_slowest']:,.0f}x",
            ]
            for r in rows
        ]
        print_table(f"{model} {opts['task']} step", ["device", "step", "tokens/s", "speed"], table)
    for r in rows:
        if r["reason"]:
            click.echo(
                f"{r['device']} is {r['speedup_vs_slowest']:,.0f}x faster than "
                f"{rows[slowest]['device']}: {r['reason']}"
            )
