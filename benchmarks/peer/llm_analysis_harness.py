"""Time the peer estimator llm-analysis 0.2.2 on the shared grid and record its answers.

Run from the repository root with the peer's own venv (see README.md beside this file):

    /work/peer-venv/bin/python benchmarks/peer/llm_analysis_harness.py --configs 200 \
        --out results.json

Entirely offline: model configs are built as ``ModelConfig`` objects (never looked up on the
Hugging Face hub), GPU configs come from the peer's bundled json files, and the hub is forced
offline before the peer is imported. The peer's logging is silenced. Each estimate (building
``LLMAnalysis`` and calling ``training()`` or ``inference()``) is timed with
``time.perf_counter``; a configuration's time is the median of ``--repeat`` calls.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import statistics
import sys
import time
import warnings
from pathlib import Path
from typing import Any

# Before the peer (and transformers, which it imports) loads: no hub access, no chatter.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")
warnings.filterwarnings("ignore")

sys.path.insert(0, str(Path(__file__).resolve().parent))
from grid import grid  # noqa: E402
from llm_analysis import analysis as la  # noqa: E402
from llm_analysis import config as lc  # noqa: E402
from llm_analysis.logger import logger as peer_logger  # noqa: E402

PEER = "llm-analysis 0.2.2"
RECOMPUTE = {
    "none": la.ActivationRecomputation.NONE,
    "selective": la.ActivationRecomputation.SELECTIVE,
    "full": la.ActivationRecomputation.FULL,
}


def silence_peer() -> None:
    peer_logger.setLevel(logging.CRITICAL + 1)
    peer_logger.disabled = True
    logging.getLogger("transformers").setLevel(logging.ERROR)


def model_config(name: str, spec: dict[str, int], ffn_mode: str) -> lc.ModelConfig:
    """A peer ModelConfig for a Llama-style (SwiGLU, RMSNorm, untied) model.

    The peer's MLP has two matrices (2*h*ffn params). ``swiglu-equiv`` passes
    ffn = 1.5 * intermediate so that its parameter count, weight/gradient/optimizer memory and
    MLP activation memory match a three-matrix SwiGLU MLP; ``raw`` passes the intermediate size
    as is (under-counts MLP parameters by a third). ``expansion_ratio`` is given explicitly
    because the peer asserts ffn % hidden == 0 otherwise.
    """
    ffn = spec["ffn"] * 3 // 2 if ffn_mode == "swiglu-equiv" else spec["ffn"]
    return lc.ModelConfig(
        name=name,
        num_layers=spec["layers"],
        n_head=spec["heads"],
        hidden_dim=spec["hidden"],
        vocab_size=spec["vocab"],
        max_seq_len=spec["max_seq"],
        num_key_value_heads=spec["kv_heads"],
        ffn_embed_dim=ffn,
        expansion_ratio=ffn / spec["hidden"],
        model_type="llama",
    )


def estimate(
    cfg: dict[str, Any],
    mcfg: lc.ModelConfig,
    gcfg: lc.GPUConfig,
    flops_eff: float | None,
    hbm_eff: float | None,
) -> dict[str, Any]:
    """One peer estimate: construct LLMAnalysis, then training() or inference()."""
    parallel = lc.ParallelismConfig(tp_size=cfg["tp"], pp_size=cfg["pp"], dp_size=cfg["dp"])
    analysis = la.LLMAnalysis(
        mcfg,
        gcfg,
        lc.DtypeConfig(),  # w16a16e16: 16-bit weights, activations and embeddings
        parallel,
        flops_efficiency=flops_eff,
        hbm_memory_efficiency=hbm_eff,
    )
    if cfg["task"] == "train":
        return analysis.training(
            batch_size_per_gpu=cfg["batch"],
            gradient_accumulation_steps=cfg["grad_accum"],
            seq_len=cfg["seq"],
            activation_recomputation=RECOMPUTE[cfg["recompute"]],
            ds_zero=la.DSZeRO(cfg["zero"]),
            flash_attn=True,
        )
    return analysis.inference(
        batch_size_per_gpu=cfg["batch"],
        seq_len=cfg["seq"],
        num_tokens_to_generate=cfg["gen_tokens"],
        use_kv_cache=True,
        ds_zero=la.DSZeRO(cfg["zero"]),
    )


def outputs(cfg: dict[str, Any], s: dict[str, Any], gcfg: lc.GPUConfig) -> dict[str, Any]:
    peak = gcfg.peak_fp16_TFLOPS
    mp = cfg["tp"] * cfg["pp"]
    if cfg["task"] == "train":
        latency = s["latency_per_iter"]
        hw_tflops = s["num_flops_total_per_micro_batch"] * cfg["grad_accum"] / latency / mp / 1e12
        tokens = cfg["batch"] * cfg["seq"] * cfg["grad_accum"]
        model_tflops = 6 * s["num_params_total"] * tokens / latency / mp / 1e12
        return {
            "latency_s": latency,
            "memory_per_gpu_bytes": s["(weight+op_state+grad+act)_memory_per_gpu"],
            "achieved_tflops": s["achieved_flops"],
            "mfu": hw_tflops / peak,
            "mfu_6nd": model_tflops / peak,
            "weight_bytes": s["weight_memory_per_gpu"],
            "gradient_bytes": s["gradient_memory_per_gpu"],
            "optimizer_bytes": s["optimizer_state_memory_per_gpu"],
            "activation_bytes": s["activation_memory_per_gpu"],
            "max_batch_per_gpu": s["max_batch_size_per_gpu"],
            "latency_fwd_s": s["latency_fwd"],
            "num_params": s["num_params_total"],
            "flops_per_micro_batch": s["num_flops_total_per_micro_batch"],
        }
    prefill, decode = s["prefill_latency"], s["decode_latency"]
    kv, w = s["kv_cache_memory_per_gpu"], s["weight_memory_per_gpu"]
    act_p, act_d = s["prefill_activation_memory_per_gpu"], s["decode_activation_memory_per_gpu"]
    prefill_tflops = s["prefill_num_flops_fwd_total"] / prefill / mp / 1e12
    decode_tflops = s["decode_num_flops_fwd_total"] / decode / mp / 1e12
    return {
        "latency_s": s["total_latency"],
        "prefill_latency_s": prefill,
        "decode_latency_per_token_s": decode,
        # The peer checks prefill activations and (KV cache + decode activations) separately
        # against what weights leave; their max on top of the weights is its peak per GPU.
        "memory_per_gpu_bytes": w + max(act_p, kv + act_d),
        "achieved_tflops": None,  # the peer reports none for inference
        "mfu": None,
        "prefill_mfu_derived": prefill_tflops / peak,
        "decode_mfu_derived": decode_tflops / peak,
        "weight_bytes": w,
        "kv_cache_bytes": kv,
        "prefill_activation_bytes": act_p,
        "decode_activation_bytes": act_d,
        "decode_tokens_per_s": s["decode_tokens_per_sec"],
        "prefill_tokens_per_s": s["prefill_tokens_per_sec"],
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--configs", type=int, default=200, help="grid size N (default 200)")
    p.add_argument("--out", default="results.json", help="output JSON path")
    p.add_argument(
        "--configs-file",
        default=None,
        help="JSON list of configurations (same fields as grid()) instead of the grid",
    )
    p.add_argument("--repeat", type=int, default=5, help="timed calls per config (median kept)")
    p.add_argument(
        "--ffn-mode",
        choices=("swiglu-equiv", "raw"),
        default="swiglu-equiv",
        help="how the SwiGLU intermediate size is given to the peer (see README)",
    )
    p.add_argument(
        "--flops-efficiency", type=float, default=None, help="peer flops_efficiency (default 1.0)"
    )
    p.add_argument(
        "--hbm-efficiency", type=float, default=None, help="peer hbm_memory_efficiency (def. 1.0)"
    )
    args = p.parse_args(argv)
    silence_peer()

    if args.configs_file:
        with open(args.configs_file, encoding="utf-8") as fh:
            configs = json.load(fh)
    else:
        configs = grid(args.configs)
    mcfgs: dict[str, lc.ModelConfig] = {}
    gcfgs: dict[str, lc.GPUConfig] = {}
    rows: list[dict[str, Any]] = []
    times: list[float] = []
    times_ok: list[float] = []
    for cfg in configs:
        if cfg["model"] not in mcfgs:
            mcfgs[cfg["model"]] = model_config(cfg["model"], cfg["model_spec"], args.ffn_mode)
        if cfg["gpu"] not in gcfgs:
            gcfgs[cfg["gpu"]] = lc.get_gpu_config_by_name(cfg["gpu"])  # bundled json
        mcfg, gcfg = mcfgs[cfg["model"]], gcfgs[cfg["gpu"]]
        samples, summary, error = [], None, None
        for _ in range(max(1, args.repeat)):
            start = time.perf_counter()
            try:
                summary = estimate(cfg, mcfg, gcfg, args.flops_efficiency, args.hbm_efficiency)
                error = None
            except (AssertionError, ValueError, ZeroDivisionError) as exc:
                summary, error = None, f"{type(exc).__name__}: {exc}"
            samples.append(time.perf_counter() - start)
        sec = statistics.median(samples)
        times.append(sec)
        row = {k: v for k, v in cfg.items() if k != "model_spec"}
        row["seconds"] = sec
        if summary is None:
            # The peer refuses configs it judges out of memory (it asserts).
            row["fits"] = False
            row["error"] = error
            row["latency_s"] = None
            row["memory_per_gpu_bytes"] = None
            row["achieved_tflops"] = None
            row["mfu"] = None
        else:
            times_ok.append(sec)
            row.update(outputs(cfg, summary, gcfg))
            mem = row["memory_per_gpu_bytes"]
            row["fits"] = bool(mem <= gcfg.mem_per_GPU_in_GB * 1024**3)
            row["error"] = None
        rows.append(row)

    result = {
        "peer": PEER,
        "settings": {
            "ffn_mode": args.ffn_mode,
            "flops_efficiency": args.flops_efficiency or la.FLOPS_EFFICIENCY,
            "hbm_memory_efficiency": args.hbm_efficiency or la.HBM_MEMORY_EFFICIENCY,
            "dtype": "w16a16e16",
            "repeat": args.repeat,
            "python": sys.version.split()[0],
        },
        "configs": rows,
        "n_configs": len(rows),
        "n_ok": len(times_ok),
        "seconds_per_config_median": statistics.median(times) if times else None,
        "seconds_per_config_mean": statistics.fmean(times) if times else None,
        "seconds_per_config_median_ok": statistics.median(times_ok) if times_ok else None,
    }
    Path(args.out).write_text(json.dumps(result, indent=1))
    print(
        f"{PEER}: {len(rows)} configs ({len(times_ok)} estimated, "
        f"{len(rows) - len(times_ok)} refused), median {result['seconds_per_config_median']:.3e} s"
        f", mean {result['seconds_per_config_mean']:.3e} s per config -> {args.out}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
