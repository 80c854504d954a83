"""The files ``kernel_sweep.py`` writes: ``kernels-<gpu>.toml``, ``attention-<gpu>.toml`` and
``decode-<gpu>.toml`` in the formats of the catalog's data files, ``sweep.json`` (every raw
measurement) and ``sweep.md`` (a short summary), each replaced whole (written to a ``.tmp`` file
first)."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from kernel_sweep_fit import fit_all
from kernel_sweep_plan import SOURCE

from suanli.estimate.kernels import PROFILE_BLEND as BLEND
from suanli.estimate.kernels import TILE


def q(text: str) -> str:
    """A TOML basic string (JSON's escapes are TOML's)."""
    return json.dumps(text, ensure_ascii=False)


def num(x: float, digits: int = 4) -> str:
    return repr(float(f"{x:.{digits}g}"))


def kernels_toml(state: dict[str, Any], meta: dict[str, Any]) -> str:
    card, fits = meta["card"], state.get("fits", {})
    lines = [
        f"# GEMM kernel model of {card['device_name']} ({meta['device']}), {SOURCE}",
        f"# on {meta['date']} (torch {meta['torch']}, CUDA {meta['cuda']}); see docs/bench.md.",
        f"# Peak: {card['peak_from'] or 'not in the catalog'}; "
        f"bandwidth: {card['bandwidth_from'] or 'not in the catalog'}.",
        f"# GEMM times: median of the repeats, {meta['gemm_timing']}.",
    ]
    if not card["in_catalog"]:
        lines.append(
            f"# {card['gpu_id']!r} is not a catalog id: these rows cannot be merged as is."
        )
    if meta.get("truncated"):
        lines.append(f"# The run was cut short by its budget: {', '.join(meta['truncated'])}.")
    primary = next((d for d in ("bf16", "fp16") if d in fits), None)
    if primary is None:
        lines.append("# No GEMM was measured: no fit.")
        return "\n".join(lines) + "\n"
    fit = fits[primary]
    models = sorted({r["model"] for r in state["gemm"] if r["dtype"] == primary and not r["lora"]})
    source = f"{SOURCE} on {card['device_name']}, {primary}, torch {meta['torch']}"
    lines += [
        f"# Fitted on {fit['gemms']} {primary} GEMMs (4 per layer, TP {meta['tps']}, M "
        f"{meta['ms'][0]}-{meta['ms'][-1]}) against peak {fit['peak_flops']:.4g} FLOP/s "
        f"({fit['peak_from']}) and bandwidth {fit['bandwidth_bytes_per_s']:.4g} B/s "
        f"({fit['bandwidth_from']}).",
        "",
        "[[gemm]]",
        f"gpu_id = {q(card['gpu_id'])}",
        f"precision = {q(primary)}",
    ]
    if "small_op_s" in state:
        lines.append(
            f"small_op_s = {state['small_op_s']:.2g}  # median per-kernel time of the element-wise "
            f"ops at {state['small_op_tokens']} token(s) ({meta['small_op_timing']})"
        )
    lines += [
        f"compute_efficiency = {fit['compute_efficiency']}",
        f"memory_efficiency = {fit['memory_efficiency']}",
        f"launch_s = {fit['launch_s']:.2g}",
        f"tile = {TILE}",
        f"blend = {BLEND}",
        f"gemms = {fit['gemms']}",
        f"median_error = {fit['median_error']:.3f}",
        f"p90_error = {fit['p90_error']:.3f}",
        f"models = {q(', '.join(models))}",
        f"date = {q(meta['date'])}",
        f"source = {q(source)}",
        "",
    ]
    for dtype, other in fits.items():
        lora = (
            f", LoRA {other['lora_gemms']} GEMMs median |error| {other['lora_median_error']:.1%}"
            if "lora_gemms" in other
            else ""
        )
        lines.append(
            f"# {dtype}: compute_efficiency {other['compute_efficiency']}, memory_efficiency "
            f"{other['memory_efficiency']}, launch_s {other['launch_s']:.2g}; {other['gemms']} "
            f"GEMMs, median |error| {other['median_error']:.1%}, p90 {other['p90_error']:.1%}{lora}"
        )
    return "\n".join(lines) + "\n"


def attention_toml(state: dict[str, Any], meta: dict[str, Any]) -> str:
    card = meta["card"]
    lines = [
        f"# Attention kernels of {card['device_name']}, {SOURCE} on {meta['date']} (torch "
        f"{meta['torch']}): torch SDPA per backend, bf16, FlashAttention FLOP convention.",
    ]
    if not card["in_catalog"]:
        lines.append(
            f"# {card['gpu_id']!r} is not a catalog id: these rows cannot be merged as is."
        )
    for r in state["attention"]:
        vendored = " (the FlashAttention-2 kernels vendored in torch)"
        note = (
            f"torch {meta['torch']} scaled_dot_product_attention, {r['backend']} backend"
            f"{vendored if r['backend'] == 'flash' else ''}, "
            f"batch {r['batch']} x seq {r['seq_len']}, {r['heads']} heads; median of the repeats "
            f"({meta['clock']}; backward timed alone after an untimed forward)"
        )
        lines += [
            "",
            "[[attention]]",
            f"kernel = {q(r['kernel'])}",
            f"gpu_id = {q(card['gpu_id'])}",
            'dtype = "bf16"',
            f"pass = {q(r['pass'])}",
            f"causal = {'true' if r['causal'] else 'false'}",
            f"head_dim = {r['head_dim']}",
            f"seq_len = {r['seq_len']}",
            f"tflops = {num(r['tflops'])}",
            f"source = {q(f'{SOURCE} on ' + card['device_name'])}",
            f"date = {q(meta['date'])}",
            f"note = {q(note)}",
        ]
    return "\n".join(lines) + "\n"


def decode_toml(state: dict[str, Any], meta: dict[str, Any]) -> str:
    card = meta["card"]
    bw = card["bandwidth"]
    lines = [
        f"# Decode attention of {card['device_name']}, {SOURCE} on {meta['date']} (torch "
        f"{meta['torch']}): one query token per sequence, contiguous KV, {meta['clock']}"
        f"{', L2 flushed before each call' if meta['device'] == 'cuda' else ''}; "
        "bytes = the KV cache read, 2 * batch * context * kv_heads * head_dim * 2.",
    ]
    if not card["in_catalog"]:
        lines.append(
            f"# {card['gpu_id']!r} is not a catalog id: these rows cannot be merged as is."
        )
    if not bw:
        lines.append(
            "# No peak bandwidth (not in the catalog, no --peak-bw): no utilization, no rows."
        )
        for r in state["decode"]:
            lines.append(
                f"# batch {r['batch']} context {r['context']}: {r['bytes_per_s'] / 1e9:.3g} GB/s"
            )
        return "\n".join(lines) + "\n"
    lines.append(f"# Peak bandwidth {bw:.4g} B/s ({card['bandwidth_from']}).")
    for r in state["decode"]:
        util = r["bytes_per_s"] / bw
        if not 0 < util <= 1:
            lines.append(
                f"# batch {r['batch']} context {r['context']}: utilization {util:.3f} is outside "
                "(0, 1] (cache effects?); left out"
            )
            continue
        note = (
            f"torch {meta['torch']} scaled_dot_product_attention (default backend, enable_gqa), "
            f"q of shape (batch, heads, 1, head_dim), median of the repeats, "
            f"{r['seconds'] * 1e6:.1f} us"
        )
        lines += [
            "",
            "[[decode]]",
            'kernel = "torch-sdpa"',
            f"gpu_id = {q(card['gpu_id'])}",
            'dtype = "bf16"',
            f"batch = {r['batch']}",
            f"context = {r['context']}",
            f"num_q_heads = {r['num_q_heads']}",
            f"num_kv_heads = {r['num_kv_heads']}",
            f"head_dim = {r['head_dim']}",
            f"bandwidth_utilization = {num(util, 3)}",
            f"source = {q(f'{SOURCE} on ' + card['device_name'])}",
            f"date = {q(meta['date'])}",
            f"note = {q(note)}",
        ]
    return "\n".join(lines) + "\n"


def sweep_md(state: dict[str, Any], meta: dict[str, Any]) -> str:
    card = meta["card"]
    out = [
        f"# Kernel sweep: {card['device_name']} ({card['gpu_id']})",
        "",
        f"{meta['date']}, torch {meta['torch']}, CUDA {meta['cuda']}, device {meta['device']}, "
        f"{'quick' if meta['quick'] else 'full'}, {meta['elapsed_s']:.0f} s of a "
        f"{meta['budget_s']:.0f} s budget"
        + (f"; cut short: {', '.join(meta['truncated'])}" if meta.get("truncated") else ""),
        "",
        "## GEMM fit",
        "",
        "| dtype | GEMMs | e_c | e_m | launch | median err | p90 err | by kind | LoRA err |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for dtype, f in state.get("fits", {}).items():
        kinds = ", ".join(f"{k} {v:.0%}" for k, v in f["median_error_by_kind"].items())
        lora = f"{f['lora_median_error']:.1%}" if "lora_median_error" in f else "-"
        out.append(
            f"| {dtype} | {f['gemms']} | {f['compute_efficiency']} | {f['memory_efficiency']} | "
            f"{f['launch_s'] * 1e6:.1f} us | {f['median_error']:.1%} | {f['p90_error']:.1%} | "
            f"{kinds} | {lora} |"
        )
    best: dict[str, float] = {}
    for r in state["gemm"]:
        best[r["dtype"]] = max(best.get(r["dtype"], 0.0), r["tflops"])
    if best:
        out += ["", "Best GEMM rate: " + ", ".join(f"{d} {t:.4g} TFLOP/s" for d, t in best.items())]
    if state["small_ops"]:
        out += ["", "## Element-wise ops (us per kernel)", ""]
        tokens = sorted({r["tokens"] for r in state["small_ops"]})
        out += ["| op | " + " | ".join(f"{t} tok" for t in tokens) + " |"]
        out += ["|---" * (len(tokens) + 1) + "|"]
        for op in dict.fromkeys(r["op"] for r in state["small_ops"]):
            cells = {
                r["tokens"]: f"{r['seconds_per_kernel'] * 1e6:.2f}"
                for r in state["small_ops"]
                if r["op"] == op
            }
            out.append(f"| {op} | " + " | ".join(cells.get(t, "-") for t in tokens) + " |")
        if "small_op_s" in state:
            out += ["", f"small_op_s = {state['small_op_s'] * 1e6:.2f} us"]
    if state.get("bandwidth"):
        bw = state["bandwidth"]["bytes_per_s"]
        frac = f" ({bw / card['bandwidth']:.0%} of peak)" if card["bandwidth"] else ""
        out += ["", f"## Copy bandwidth: {bw / 1e9:.1f} GB/s{frac}"]
    if state["attention"]:
        out += ["", "## Attention (TFLOP/s)", "", "| kernel | pass | causal | seq | TFLOP/s |"]
        out += ["|---|---|---|---|---|"]
        for r in state["attention"]:
            out.append(
                f"| {r['kernel']} | {r['pass']} | {r['causal']} | {r['seq_len']} | "
                f"{r['tflops']:.4g} |"
            )
    if state["decode"]:
        out += ["", "## Decode attention", "", "| batch | context | us | GB/s | of peak |"]
        out += ["|---|---|---|---|---|"]
        for r in state["decode"]:
            frac = f"{r['bytes_per_s'] / card['bandwidth']:.0%}" if card["bandwidth"] else "-"
            out.append(
                f"| {r['batch']} | {r['context']} | {r['seconds'] * 1e6:.1f} | "
                f"{r['bytes_per_s'] / 1e9:.3g} | {frac} |"
            )
    if state["skipped"]:
        out += ["", "## Skipped", ""] + [
            f"- {s['group']} {s['what']}: {s['why']}" for s in state["skipped"][:40]
        ]
    return "\n".join(out) + "\n"


def write_all(out: Path, state: dict[str, Any], meta: dict[str, Any]) -> None:
    fitted = (len(state["gemm"]), len(state["small_ops"]), bool(state["bandwidth"]))
    if fitted != meta.get("fitted"):  # the fit takes a second or two on a full sweep
        fit_all(state, meta["card"])
        meta["fitted"] = fitted
    meta["elapsed_s"] = time.monotonic() - meta["t0"]
    label = meta["card"]["label"]
    public = {k: v for k, v in meta.items() if k != "t0"}
    files = {
        f"kernels-{label}.toml": kernels_toml(state, meta),
        f"attention-{label}.toml": attention_toml(state, meta),
        f"decode-{label}.toml": decode_toml(state, meta),
        "sweep.json": json.dumps({"meta": public, **state}, indent=1, default=str) + "\n",
        "sweep.md": sweep_md(state, meta),
    }
    for name, text in files.items():
        tmp = out / (name + ".tmp")
        tmp.write_text(text, encoding="utf-8")
        tmp.replace(out / name)
