"""Time per configuration: suanli's vectorized estimator against llm-analysis, in one run.

Both evaluate the same grid (benchmarks/peer/grid.py: Llama-2 7B and 70B on A100 and H100
SXM, training layouts over tp/pp/dp/ZeRO/batch/seq/recompute, inference over tp/batch/prompt).
suanli computes memory, step time and MFU (training) or TTFT/TPOT (inference) for all of them in
grouped numpy calls; llm-analysis (installed in its own venv, see benchmarks/peer/README.md)
is run by its harness in a subprocess and reports its median seconds per configuration.

Run: python benchmarks/bench_vs_llm_analysis.py [--configs 576] [--peer-python PATH]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE / "peer"))

from grid import MAX_CONFIGS, MODELS, grid  # noqa: E402

from suanli.catalog import bundled_gpus, find_gpu  # noqa: E402
from suanli.estimate import vector  # noqa: E402
from suanli.estimate.device import device_for  # noqa: E402
from suanli.estimate.workload import TrainWork  # noqa: E402
from suanli.models.resolve import load_model  # noqa: E402

RECOMPUTE = {"none": "none", "selective": "selective", "full": "full"}


def evaluate(configs: list[dict[str, Any]]) -> int:
    """Evaluate every configuration with the vectorized path; returns how many were evaluated."""
    gpus = bundled_gpus()
    specs = {name: load_model(name).spec for name in {c["model"] for c in configs}}
    devices = {g: device_for(find_gpu(g, gpus), "bf16") for g in {c["gpu"] for c in configs}}
    groups: dict[tuple[Any, ...], list[dict[str, Any]]] = defaultdict(list)
    for c in configs:
        key = (c["model"], c["gpu"], c["task"], c["seq"], c["recompute"])
        groups[key].append(c)
    done = 0
    for (model, gpu, task, seq, recompute), rows in groups.items():
        spec, device = specs[model], devices[gpu]
        if task == "train":
            base = TrainWork(
                task="full",
                seq=seq,
                recompute=RECOMPUTE[recompute],
                attention="flash",
                kernels="fused",
            )
            lay = vector.Layouts.of(
                tp=[r["tp"] for r in rows],
                pp=[r["pp"] for r in rows],
                dp=[r["dp"] for r in rows],
                zero=[r["zero"] for r in rows],
                batch=[r["batch"] for r in rows],
                grad_accum=[r["grad_accum"] for r in rows],
            )
            vector.train_memory(spec, base, lay)
            vector.train_speed(spec, base, lay, device)
        else:
            # Inference layouts: tensor parallel over tp x pp GPUs (suanli has no pipelined
            # inference model; the peer reports per-stage latency for pp > 1).
            vector.infer_speed(
                spec,
                "bf16",
                2,
                [r["batch"] for r in rows],
                [r["tp"] * r["pp"] for r in rows],
                seq,
                rows[0]["gen_tokens"],
                device,
            )
        done += len(rows)
    return done


def ours_seconds_per_config(configs: list[dict[str, Any]], repeat: int) -> float:
    evaluate(configs)  # warm caches and imports
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        n = evaluate(configs)
        times.append((time.perf_counter() - start) / n)
    return statistics.median(times)


def sweep(model: str = "llama-2-70b", gpu: str = "h100-sxm-80gb") -> list[dict[str, Any]]:
    """A planner's search on one model, GPU and workload shape: every layout of tp, pp, dp,
    ZeRO stage, micro-batch and gradient accumulation (seq 4096, selective recompute)."""
    out: list[dict[str, Any]] = []
    for tp in (1, 2, 4, 8):
        for pp in (1, 2, 4, 8):
            for dp in (1, 2, 4, 8, 16, 32, 64):
                for zero in (0, 1, 2, 3):
                    for batch in (1, 2, 4, 8):
                        for accum in (1, 4, 16):
                            out.append(
                                {
                                    "id": len(out),
                                    "model": model,
                                    "gpu": gpu,
                                    "task": "train",
                                    "tp": tp,
                                    "pp": pp,
                                    "dp": dp,
                                    "batch": batch,
                                    "seq": 4096,
                                    "zero": zero,
                                    "recompute": "selective",
                                    "grad_accum": accum,
                                    "gen_tokens": None,
                                    "dtype": "bf16",
                                    "model_spec": dict(MODELS[model]),
                                }
                            )
    return out


def peer_seconds_per_config(python: str, configs: list[dict[str, Any]]) -> float | None:
    """The peer's median seconds per configuration, from its harness in its own venv."""
    if not Path(python).exists():
        return None
    with tempfile.TemporaryDirectory() as tmp:
        cfg_file = Path(tmp) / "configs.json"
        cfg_file.write_text(json.dumps(configs))
        out = Path(tmp) / "peer.json"
        harness = str(HERE / "peer" / "llm_analysis_harness.py")
        subprocess.run(
            [python, harness, "--configs-file", str(cfg_file), "--out", str(out), "--repeat", "3"],
            check=True,
            capture_output=True,
        )
        doc = json.loads(out.read_text())
    return float(doc["seconds_per_config_median"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--configs", type=int, default=MAX_CONFIGS)
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument(
        "--peer-python", default=os.environ.get("PEER_PYTHON", "/work/peer-venv/bin/python")
    )
    args = parser.parse_args()
    print("1) planner search: Llama-2-70B on H100 SXM, seq 4096, every layout")
    layouts = sweep()
    ours = ours_seconds_per_config(layouts, args.repeat)
    print(f"   configurations: {len(layouts)} (suanli evaluates all of them in one call)")
    print(f"   suanli (vectorized): {ours * 1e6:.3f} us per configuration")
    peer = peer_seconds_per_config(args.peer_python, layouts[:: max(1, len(layouts) // 300)])
    if peer is None:
        print("   llm-analysis: not installed (see benchmarks/peer/README.md); no ratio")
    else:
        print(f"   llm-analysis 0.2.2: {peer * 1e6:.1f} us per configuration (300 sampled)")
        print(f"   suanli is {peer / ours:,.0f}x faster per configuration")
    print("2) mixed grid: 2 models x 2 GPUs, training and inference, many small groups")
    configs = grid(args.configs)
    ours = ours_seconds_per_config(configs, args.repeat)
    print(f"   configurations: {len(configs)}")
    print(f"   suanli (vectorized, per-group set-up included): {ours * 1e6:.2f} us per config")
    peer = peer_seconds_per_config(args.peer_python, configs)
    if peer is not None:
        print(f"   llm-analysis 0.2.2: {peer * 1e6:.1f} us per configuration")
        print(f"   suanli is {peer / ours:,.0f}x faster per configuration")


if __name__ == "__main__":
    main()
