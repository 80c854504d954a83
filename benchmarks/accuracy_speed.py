"""Print the speed accuracy table of docs/accuracy.md (the rows of tests/estimate/
test_perf_published.py plus the rows that are documented misses).

Run: python benchmarks/accuracy_speed.py
"""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent.parent))

from tests.estimate import test_perf_published as pub

from suanli.estimate.perf import training_perf
from suanli.estimate.workload import Parallelism
from suanli.models.resolve import load_model


def _pct(est: float, meas: float) -> str:
    return f"{100 * (est - meas) / meas:+.1f}%"


def main() -> None:
    print("| run | layout | predicted | published | error |")
    print("|---|---|---:|---:|---:|")
    for name, spec, tp, pp, batch in pub.MEGATRON:
        mfu = training_perf(spec, pub._megatron_work(tp, pp, batch), pub.A100).mfu(312e12)
        meas = pub._row(name, "MFU") / 100
        print(
            f"| {name}, A100 (Korthikanti 2022) | TP{tp} PP{pp}, batch {batch}, selective "
            f"+ SP | MFU {mfu:.1%} | {meas:.1%} | {_pct(mfu, meas)} |"
        )
    r = training_perf(pub.GPT_1T, pub.GPT_1T_WORK, pub.A100)
    got = r.hardware_flops_per_step / r.step_time_s / 3072 / 1e12
    print(
        f"| GPT 1T, 3072 A100 (Narayanan 2021) | TP8 PP64 DP6, batch 3072, full recompute | "
        f"{got:.0f} TFLOP/s/GPU | 163 | {_pct(got, 163.4)} |"
    )
    llama7, llama70 = pub.LLAMA7, load_model("llama-2-70b").spec
    lora_fsdp2 = replace(pub.LORA_QV_WORK, parallel=Parallelism(dp=2, zero=3))
    paged = replace(pub.FULL_FSDP4_WORK, offload_optimizer=True, parallel=Parallelism())
    lora_70b = replace(pub.LORA_QV_WORK, seq=4096, lora_rank=16, lora_targets=("q", "k", "v"))
    rows = [
        (
            "Llama2-7B QLoRA (compile), 1x RTX 4090",
            llama7,
            pub.RTX4090,
            "QLoRA",
            "1",
            pub.QLORA_COMPILED_WORK,
        ),
        ("Llama2-7B LoRA, 1x RTX 4090", llama7, pub.RTX4090, "LoRA", "1", pub.LORA_QV_WORK),
        ("Llama2-7B LoRA FSDP, 2x RTX 4090", llama7, pub.RTX4090, "LoRA", "2", lora_fsdp2),
        (
            "Llama2-7B full FSDP, 4x RTX 4090",
            llama7,
            pub.RTX4090,
            "Full FT",
            "4",
            pub.FULL_FSDP4_WORK,
        ),
        (
            "Llama2-7B full PagedAdamW, 1x RTX 4090",
            llama7,
            pub.RTX4090,
            "Full FT (PagedAdamW)",
            "1",
            paged,
        ),
        (
            "Llama2-70B LoRA FSDP, 8x A100",
            llama70,
            pub.A100,
            "LoRA",
            "8",
            replace(lora_70b, parallel=Parallelism(dp=8, zero=3)),
        ),
        (
            "Llama2-70B full PagedAdamW FSDP, 8x A100",
            llama70,
            pub.A100,
            "Full FT (PagedAdamW)",
            "8",
            replace(paged, seq=4096, parallel=Parallelism(dp=8, zero=3)),
        ),
    ]
    for label, spec, device, workload, gpus, work in rows:
        model = "Llama2-70B" if spec is llama70 else "Llama2-7B"
        meas = pub._row(model, "training speed", workload, gpus)
        got = training_perf(spec, work, device).tokens_per_s
        print(
            f"| {label} (torchtune) | batch 4 x {work.seq}, {work.kernels} kernels | "
            f"{got:,.0f} tokens/s | {meas:,.0f} | {_pct(got, meas)} |"
        )


if __name__ == "__main__":
    main()
