"""Print the framework memory table of docs/memory.md ("Frameworks"): each published peak of
tests/fixtures/framework-memory.csv against ``--framework``'s estimate, plus Unsloth's longest
contexts and vLLM's KV capacity (the cases of tests/estimate/test_framework_memory_published.py).

Run: python benchmarks/accuracy_frameworks.py
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).parent.parent
sys.path.insert(0, str(ROOT))

from tests.estimate import test_framework_memory_published as pub  # noqa: E402

from suanli.answers.request import WorkRequest, build_work  # noqa: E402
from suanli.estimate.fitting import fit_inference, fit_training  # noqa: E402
from suanli.estimate.memory import training_memory  # noqa: E402
from suanli.estimate.workload import TrainWork  # noqa: E402
from suanli.models.resolve import load_model  # noqa: E402

GiB = 2**30


def main() -> None:
    """Print the tables."""
    print("| row | framework | metric | published | suanli | error |")
    print("|---|---|---|---:|---:|---:|")
    for row_id, request in pub.WORK.items():
        row = pub.ROWS[row_id]
        work = build_work(request)
        assert isinstance(work, TrainWork)
        est = pub._measure(training_memory(pub._spec(row["model"]), work), row["metric"]) / GiB
        meas = float(row["measured_gib"])
        print(
            f"| {row_id} | {row['framework']} | {row['metric']} | {meas:.2f} GiB | {est:.2f} | "
            f"{100 * (est - meas) / meas:+.1f}% |"
        )
    spec = load_model("llama-3.1-8b").spec
    work = build_work(
        WorkRequest(
            task="qlora",
            batch=1,
            framework="unsloth",
            lora_rank=32,
            lora_targets="q,k,v,o,gate,up,down",
        )
    )
    assert isinstance(work, TrainWork)
    print()
    print("| Unsloth card | published longest context | suanli | error |")
    print("|---|---:|---:|---:|")
    for card, published in pub.UNSLOTH_MAX_SEQ:
        got = fit_training(spec, work, "card", card * GiB).max_seq
        error = 100 * (got - published) / published
        print(f"| {card} GiB | {published:,} | {got:,} | {error:+.1f}% |")
    infer = build_work(
        WorkRequest(task="infer", framework="vllm", gpu_memory_utilization=0.9, context=4096)
    )
    fit = fit_inference(load_model("llama-3-8b").spec, infer, "h100", int(79.22 * GiB))
    published = 53.29 * GiB / (2 * 8 * 128 * 32 * 2)
    tokens = fit.max_batch * 4096
    print()
    print(
        f"vLLM KV capacity (Llama-3-8B, 79.22 GiB, 0.90): published {published:,.0f} tokens, "
        f"suanli {tokens:,} ({100 * (tokens - published) / published:+.1f}%)"
    )


if __name__ == "__main__":
    main()
