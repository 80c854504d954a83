"""Print the memory accuracy tables of docs/accuracy.md.

1. CPU, exact: saved activations, gradients and AdamW states of real transformers models against
   the estimate (the same cases as tests/estimate/test_memory_vs_torch.py, a subset).
2. Published peaks: torchtune's README table and the ZeRO paper, with each row's settings.

Run: python benchmarks/accuracy_memory.py   (needs the [test] extra)
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).parent.parent
sys.path.insert(0, str(ROOT))

from tests.estimate import test_memory_published as pub  # noqa: E402
from tests.estimate import test_memory_vs_torch as cpu  # noqa: E402

from suanli.estimate.memory import activation_bytes, training_memory  # noqa: E402
from suanli.live.measure import saved_for_backward  # noqa: E402
from suanli.models.config import spec_from_config  # noqa: E402


def _pct(est: float, meas: float) -> str:
    return f"{100 * (est - meas) / meas:+.2f}%"


def cpu_table() -> None:
    print("| model | dtype | attention | batch x seq | measured saved bytes | estimate | error |")
    print("|---|---|---|---|---:|---:|---:|")
    for family in ["llama", "qwen2", "mixtral", "gpt2", "bert", "qwen3", "gemma2", "gpt_neox"]:
        for dtype in ("fp32", "bf16"):
            for attention in ("eager",) if family == "gemma2" else ("sdpa", "eager"):
                batch, seq = 2, 64
                cfg = cpu.CONFIGS[family]
                model = cpu._build(cfg, dtype, attention)
                measured, _ = saved_for_backward(model, cpu._forward(model, cfg, batch, seq))
                spec = spec_from_config(cfg, family)
                lines, _ = activation_bytes(spec, cpu._work(dtype, attention, batch, seq))
                est = sum(ln.bytes for ln in lines)
                print(
                    f"| {family} | {dtype} | {attention} | {batch} x {seq} | "
                    f"{measured.saved_bytes:,} | {est:,.0f} | {_pct(est, measured.saved_bytes)} |"
                )


def published_table() -> None:
    print("| run | settings | estimate GB | measured GB | error | source |")
    print("|---|---|---:|---:|---:|---|")
    spec = pub._spec("llama-2-7b")
    for workload, hardware, work in pub.TORCHTUNE:
        est = training_memory(spec, work).total_bytes / pub.GB
        meas = pub._measured(workload, hardware) / pub.GB
        settings = (
            f"{work.task}, batch {work.batch} x {work.seq}, {work.precision} "
            f"{work.dtype}, recompute {work.recompute}, dp {work.parallel.dp} "
            f"zero {work.parallel.zero}"
        )
        print(
            f"| Llama-2-7B {workload}, {hardware} | {settings} | {est:.1f} | {meas:.1f} | "
            f"{_pct(est, meas)} | torchtune README (0217d44c2) |"
        )


if __name__ == "__main__":
    import transformers

    transformers.logging.set_verbosity_error()
    cpu_table()
    print()
    published_table()
