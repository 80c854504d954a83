"""The project's accuracy table on real hardware: ``suanli verify`` over a matrix of presets.

On a CUDA device (one H200 in the project's checks) it runs, within about 8 minutes, real steps of
Qwen2.5-0.5B, Llama-3.2-1B, Llama-3.1-8B and a small MoE: a full fine-tune step (AdamW, bf16),
and inference at two batch sizes and contexts, and writes one table of estimate, measured and
error (peak allocated memory, step time; KV cache, TTFT/TPOT for inference). With ``--cpu`` (or
no GPU) it runs a reduced matrix of shrunken configs of the same families so CI knows the script
works before GPU time is spent.

It also times the host's dispatch (benchmarks/host_dispatch.py): a tiny ``add`` and ``view``
submitted back to back and ``generate()`` of a tiny Qwen 2 per layer and token, against what
``--dispatch python`` charges per layer.

Run: python benchmarks/validate_gpu.py [--cpu] [--out DIR]   (results: DIR/validate.md, .json)
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path
from typing import Any

from suanli.estimate.workload import InferWork, TrainWork
from suanli.live.verify import Comparison, verify_inference, verify_training
from suanli.models.config import spec_from_config
from suanli.models.presets import presets

GPU_MATRIX = [
    ("qwen2.5-0.5b", "full", {"batch": 8, "seq": 1024}),
    ("llama-3.2-1b", "full", {"batch": 4, "seq": 2048}),
    ("llama-3.1-8b", "full", {"batch": 1, "seq": 1024}),
    ("qwen1.5-moe-a2.7b", "infer", {"batch": 4, "prompt": 512, "output": 32}),
    ("llama-3.1-8b", "infer", {"batch": 1, "prompt": 512, "output": 64}),
    ("llama-3.1-8b", "infer", {"batch": 16, "prompt": 2048, "output": 32}),
    ("qwen2.5-0.5b", "infer", {"batch": 32, "prompt": 1024, "output": 64}),
]


def _shrunk(cfg: dict[str, Any]) -> dict[str, Any]:
    """A small config of the same family for the CPU run."""
    small = dict(cfg)
    small.update(
        {
            "hidden_size": 128,
            "intermediate_size": 256,
            "num_hidden_layers": 2,
            "num_attention_heads": 4,
            "num_key_value_heads": 2,
            "vocab_size": 512,
        }
    )
    small.pop("head_dim", None)
    for key in ("moe_intermediate_size", "shared_expert_intermediate_size"):
        if key in small:
            small[key] = 64
    if "num_experts" in small:
        small["num_experts"] = 4
        small["num_experts_per_tok"] = 2
    return small


def _row(
    model: str, task: str, settings: dict[str, Any], result: Comparison, seconds: float
) -> dict[str, Any]:
    return {
        "model": model,
        "task": task,
        "settings": settings,
        "device": result.device,
        "estimate": result.estimate,
        "measured": result.measured,
        "error": result.error,
        "seconds": seconds,
    }


def run(cpu: bool) -> list[dict[str, Any]]:
    """Every row of the matrix (shrunk on the CPU)."""
    table = presets()
    rows = []
    for model, task, settings in GPU_MATRIX:
        cfg = table[model].config()
        if cpu:
            cfg = _shrunk(cfg)
            settings = {
                k: (min(v, 64) if k in ("seq", "prompt") else min(v, 2))
                for k, v in settings.items()
            }
        spec = spec_from_config(cfg, model)
        start = time.perf_counter()
        if task == "full":
            work = TrainWork(
                task="full",
                batch=settings["batch"],
                seq=settings["seq"],
                dtype="fp32" if cpu else "bf16",
                precision="pure",
            )
            result = verify_training(spec, cfg, work, steps=3)
        else:
            work_i = InferWork(
                batch=settings["batch"], context=settings["prompt"] + settings["output"]
            )
            result = verify_inference(spec, cfg, work_i, settings["prompt"], settings["output"])
        rows.append(_row(model, task, settings, result, time.perf_counter() - start))
        print(
            f"{model} {task} {settings}: "
            + ", ".join(f"{k} {v:+.1%}" for k, v in result.error.items()),
            flush=True,
        )
    return rows


def markdown(rows: list[dict[str, Any]]) -> str:
    """The accuracy table."""
    out = [
        "| model | task | settings | component | estimate | measured | error |",
        "|---|---|---|---|---:|---:|---:|",
    ]
    for row in rows:
        for key, measured in row["measured"].items():
            est = row["estimate"].get(key)
            err = row["error"].get(key)
            unit = 1e-3 if key.endswith("_s") else 2**30
            suffix = " ms" if key.endswith("_s") else " GiB"
            out.append(
                f"| {row['model']} | {row['task']} | {row['settings']} | {key} | "
                + (f"{est / unit:,.3f}{suffix}" if est is not None else "-")
                + " | "
                + f"{measured / unit:,.3f}{suffix} | "
                + (f"{err:+.1%}" if err is not None else "-")
                + " |"
            )
    return "\n".join(out)


def _host_dispatch() -> Any:
    """benchmarks/host_dispatch.py, beside this script: on a GPU host it times generate() of a
    tiny model, the host's time per layer that ``--dispatch python`` charges (docs/speed.md)."""
    import importlib.util

    path = Path(__file__).with_name("host_dispatch.py")
    spec = importlib.util.spec_from_file_location("host_dispatch", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--cpu", action="store_true", help="reduced CPU mode")
    parser.add_argument("--out", default=os.environ.get("OUT", "."))
    args = parser.parse_args()
    import torch

    cpu = args.cpu or not torch.cuda.is_available()
    rows = run(cpu)
    host = _host_dispatch().measure_host("cpu" if cpu else "cuda", repeats=3 if cpu else 7)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    device = "cpu" if cpu else torch.cuda.get_device_name(0)
    header = f"Validation on {device}, {time.strftime('%Y-%m-%d')}\n\n"
    table = markdown(rows) + "\n\n" + _host_dispatch().host_markdown(host)
    (out / "validate.md").write_text(header + table + "\n")
    doc = {"device": device, "rows": rows, "host_dispatch": host}
    (out / "validate.json").write_text(json.dumps(doc, indent=1))
    print(header + table)


if __name__ == "__main__":
    main()
