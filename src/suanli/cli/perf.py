"""``suanli perf MODEL --task T --gpu G ...``: step time, throughput, MFU and the bound."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import click

from suanli.catalog.formats import get_format
from suanli.cli.devices import resolve_gpu
from suanli.cli.options import work_from_options, workload_options
from suanli.cli.render import print_json, print_table
from suanli.estimate.perf import Device, advice, inference_perf, scaling, training_perf
from suanli.estimate.workload import InferWork, TrainWork
from suanli.hardware import device_for, read_calibration
from suanli.models.resolve import load_model
from suanli.models.spec import ModelSpec

#: Data-centre power usage effectiveness used for energy when --pue is not given
#: (Uptime Institute 2024 global average 1.56; see catalog docs).
DEFAULT_PUE = 1.5


def _fmt_s(seconds: float) -> str:
    if seconds >= 86400:
        return f"{seconds / 86400:,.1f} days"
    if seconds >= 3600:
        return f"{seconds / 3600:,.1f} h"
    if seconds >= 1:
        return f"{seconds:,.2f} s"
    return f"{seconds * 1e3:,.2f} ms"


def train_report(
    spec: ModelSpec,
    work: TrainWork,
    device: Device,
    tokens: float | None,
    pue: float,
    usd_per_hour: float | None,
) -> dict[str, Any]:
    """The JSON document of ``suanli perf`` for training."""
    result = training_perf(spec, work, device)
    doc: dict[str, Any] = {
        "gpu": device.name,
        "gpus": work.parallel.gpus,
        "flops_per_step": result.flops_per_step,
        "step_time_s": result.step_time_s,
        "tokens_per_step": result.tokens_per_step,
        "tokens_per_s": result.tokens_per_s,
        "mfu": result.mfu(device.peak_flops),
        "hfu": result.hfu(device.peak_flops),
        "bound": result.bound,
        "breakdown_s": result.breakdown_s,
        "communication_s": result.comm_detail_s,
        "scaling": scaling(spec, work, device),
        "advice": advice(spec, work, device),
        "assumptions": list(result.assumptions),
    }
    if tokens:
        seconds = tokens / result.tokens_per_s
        gpu_hours = seconds / 3600 * work.parallel.gpus
        energy_kwh = gpu_hours * device.tdp_watts / 1000 * pue
        price = usd_per_hour if usd_per_hour is not None else device.usd_per_hour
        doc.update(
            {
                "tokens": tokens,
                "time_to_train_s": seconds,
                "gpu_hours": gpu_hours,
                "energy_kwh": energy_kwh,
                "cost_usd": gpu_hours * price if price else None,
            }
        )
    return doc


def infer_report(
    spec: ModelSpec, work: InferWork, device: Device, prompt: int, output: int
) -> dict[str, Any]:
    """The JSON document of ``suanli perf`` for inference, with a batch sweep."""
    result = inference_perf(spec, work, device, prompt, output)
    sweep = []
    for batch in (1, 2, 4, 8, 16, 32, 64, 128, 256):
        r = inference_perf(spec, replace(work, batch=batch), device, prompt, output)
        sweep.append(
            {"batch": batch, "tpot_s": r.tpot_s, "tokens_per_s": r.tokens_per_s, "bound": r.bound}
        )
    return {
        "gpu": device.name,
        "tp": work.tp,
        "prefill_flops": result.prefill_flops,
        "decode_flops_per_token": result.decode_flops_per_token,
        "ttft_s": result.ttft_s,
        "tpot_s": result.tpot_s,
        "tokens_per_s": result.tokens_per_s,
        "bound": result.bound,
        "compute_bound_batch": result.compute_bound_batch,
        "decode_bytes_per_step": result.decode_bytes_per_step,
        "breakdown_s": result.breakdown_s,
        "batch_sweep": sweep,
    }


@click.command("perf")
@click.argument("model")
@workload_options
@click.option("--gpu", "gpu_name", required=True, help="The GPU (catalog name).")
@click.option(
    "--gpus-per-node",
    type=click.IntRange(min=1),
    default=None,
    help="GPUs per node (default by form factor: 8 for SXM/PCIe servers).",
)
@click.option(
    "--inter-node",
    default=None,
    help="Link between nodes: ib-ndr, ib-hdr, roce-200g, eth-100g, ...",
)
@click.option(
    "--calibration",
    type=click.Path(dir_okay=False),
    default=None,
    help="Measured ceilings (TOML from suanli bench) replacing the defaults.",
)
@click.option(
    "--tokens",
    type=click.FloatRange(min=1),
    default=None,
    help="Training tokens: prints time to train, GPU-hours, energy and cost.",
)
@click.option(
    "--prompt",
    type=click.IntRange(min=1),
    default=1024,
    show_default=True,
    help="Inference: prompt tokens.",
)
@click.option(
    "--output",
    "output_tokens",
    type=click.IntRange(min=1),
    default=256,
    show_default=True,
    help="Inference: generated tokens.",
)
@click.option(
    "--pue",
    type=click.FloatRange(min=1),
    default=DEFAULT_PUE,
    show_default=True,
    help="Data-centre power usage effectiveness for energy.",
)
@click.option(
    "--price",
    type=click.FloatRange(min=0),
    default=None,
    help="USD per GPU-hour (default: the catalog's cloud snapshot).",
)
@click.option("--catalog", "catalog_file", type=click.Path(dir_okay=False), default=None)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document.")
def perf_cmd(
    model: str,
    gpu_name: str,
    gpus_per_node: int | None,
    inter_node: str | None,
    calibration: str | None,
    tokens: float | None,
    prompt: int,
    output_tokens: int,
    pue: float,
    price: float | None,
    catalog_file: str | None,
    as_json: bool,
    **opts: Any,
) -> None:
    """How fast, and bound by what: step time, tokens/s, MFU; TTFT and TPOT for inference.

    Examples: suanli perf llama-3.1-8b --task full --gpu h100 --gpus 8 --zero 1 --tokens 1e9;
    suanli perf llama-3.1-8b --task infer --gpu 4090 --quant awq-4bit-g128 --batch 8.
    """
    if opts["task"] == "infer":
        opts["context"] = prompt + output_tokens
    work = work_from_options(opts)
    spec = load_model(model).spec
    gpu, measured = resolve_gpu(gpu_name, catalog_file)
    cal = read_calibration(calibration) if calibration else measured
    # Weights stored in fp8 are multiplied in fp8; other formats dequantize to 16-bit.
    if isinstance(work, TrainWork):
        dtype = work.dtype
    else:
        dtype = "fp8" if get_format(work.weight_format).compute_dtype == "fp8" else "bf16"
    device = device_for(
        gpu, dtype, gpus_per_node=gpus_per_node, inter_node=inter_node, calibration=cal
    )
    if isinstance(work, InferWork):
        doc = infer_report(spec, work, device, prompt, output_tokens)
        if as_json:
            print_json(doc)
            return
        rows = [
            ["TTFT (prefill)", _fmt_s(doc["ttft_s"])],
            ["TPOT (per output token)", _fmt_s(doc["tpot_s"])],
            ["throughput", f"{doc['tokens_per_s']:,.0f} tokens/s"],
            ["decode is bound by", doc["bound"]],
            [
                "decode turns compute-bound at batch",
                str(doc["compute_bound_batch"]) if doc["compute_bound_batch"] else "never",
            ],
        ]
        print_table(
            f"{model} on {gpu.id} x{work.tp}: batch {work.batch}, {prompt}+{output_tokens} tokens",
            ["", ""],
            rows,
        )
        sweep = [
            [str(r["batch"]), _fmt_s(r["tpot_s"]), f"{r['tokens_per_s']:,.0f}", r["bound"]]
            for r in doc["batch_sweep"]
        ]
        print_table(
            "throughput against batch",
            ["batch", "TPOT", "tokens/s", "bound"],
            sweep,
            right_align=["batch", "TPOT", "tokens/s"],
        )
        return
    doc = train_report(spec, work, device, tokens, pue, price)
    if as_json:
        print_json(doc)
        return
    rows = [
        ["step time", _fmt_s(doc["step_time_s"])],
        ["throughput", f"{doc['tokens_per_s']:,.0f} tokens/s"],
        ["MFU", f"{doc['mfu']:.1%}"],
        ["bound", doc["bound"]],
        [
            "speed-up over 1 GPU",
            f"{doc['scaling']['speedup']:.2f}x on {doc['gpus']} GPUs "
            f"({doc['scaling']['efficiency']:.0%} efficiency)",
        ],
    ]
    for key, seconds in doc["breakdown_s"].items():
        rows.append([f"  {key}", _fmt_s(seconds)])
    if tokens:
        rows += [
            ["time to train", _fmt_s(doc["time_to_train_s"])],
            ["GPU-hours", f"{doc['gpu_hours']:,.0f}"],
            ["energy", f"{doc['energy_kwh']:,.0f} kWh (PUE {pue})"],
            ["cost", f"${doc['cost_usd']:,.0f}" if doc["cost_usd"] else "no price known"],
        ]
    print_table(f"{model} {work.task} on {doc['gpus']} x {gpu.id}", ["", ""], rows)
    for tip in doc["advice"]:
        click.echo(
            f"fix: {tip['issue']}: {tip['fix']} -> {tip['tokens_per_s_after']:,.0f} "
            f"tokens/s ({tip['speedup']:.2f}x)"
        )
    for note in doc["assumptions"]:
        click.echo(f"assumption: {note}")
