"""Parameter counting speed: suanli (from config.json) vs building the model on the meta device.

The peer method (accelerate's ``estimate-memory``, and most notebooks) instantiates the model with
``transformers`` on the meta device and sums ``p.numel()``. suanli derives the same number from
the config. Both are timed in this one run on the same configs; the ratio is what we record in
docs/models.md. Also times ``suanli model PRESET --json`` from a cold interpreter.

Run: python benchmarks/bench_params.py   (needs the [test] extra: torch, transformers)
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

from suanli.models.config import spec_from_config
from suanli.models.params import count_params

CONFIGS = Path(__file__).parent.parent / "tests" / "fixtures" / "configs"


def _median_s(fn, repeat: int) -> float:  # type: ignore[no-untyped-def]
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    import torch
    import transformers

    transformers.logging.set_verbosity_error()
    print(f"{'config':22} {'suanli ms':>10} {'meta build ms':>14} {'ratio':>8} {'equal':>6}")
    ratios = []
    for path in sorted(CONFIGS.glob("*.json")):
        cfg = json.loads(path.read_text())
        ours_s = _median_s(lambda cfg=cfg: count_params(spec_from_config(cfg)), 200)
        kwargs = {k: v for k, v in cfg.items() if k != "model_type"}
        conf = transformers.AutoConfig.for_model(cfg["model_type"], **kwargs)
        auto = (
            transformers.AutoModel
            if cfg["model_type"] == "bert"
            else (transformers.AutoModelForCausalLM)
        )
        result: dict[str, int] = {}

        def build(conf=conf, auto=auto, result=result) -> None:  # type: ignore[no-untyped-def]
            with torch.device("meta"):
                model = auto.from_config(conf)
            result["n"] = sum(p.numel() for p in model.parameters())

        peer_s = _median_s(build, 3)
        ours = count_params(spec_from_config(cfg)).total
        buffers = 14_848 if cfg["model_type"] == "deepseek_v3" else 0  # e_score_correction_bias
        ratio = peer_s / ours_s
        ratios.append(ratio)
        print(
            f"{path.stem:22} {ours_s * 1e3:10.3f} {peer_s * 1e3:14.1f} {ratio:8.0f}x "
            f"{ours == result['n'] + buffers!s:>6}"
        )
    print(f"median speed-up: {statistics.median(ratios):.0f}x")

    cold = []
    for _ in range(5):
        start = time.perf_counter()
        subprocess.run(
            [sys.executable, "-m", "suanli", "model", "llama-3.1-8b", "--json"],
            check=True,
            capture_output=True,
        )
        cold.append(time.perf_counter() - start)
    print(f"'suanli model llama-3.1-8b --json' cold start: median {statistics.median(cold):.3f} s")


if __name__ == "__main__":
    main()
