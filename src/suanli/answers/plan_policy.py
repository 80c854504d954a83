"""Which GPUs a plan weighs and in what order before speed and cost: the candidates (named, or
the catalog filtered), the software stack each brings, the buy-or-rent cards a personal
fine-tune sees first, and the stacks a CUDA-first framework ranks after CUDA (docs/plan.md)."""

from __future__ import annotations

from suanli.catalog import GPU, find_gpu
from suanli.catalog.query import filter_gpus
from suanli.i18n import N_
from suanli.units import GiB


def candidate_gpus(
    catalog: list[GPU],
    names: tuple[str, ...],
    vendors: tuple[str, ...],
    forms: tuple[str, ...],
    min_memory_gib: float | None,
) -> list[GPU]:
    """The GPUs named, else the catalog filtered by vendor, form factor and memory."""
    if names:
        return [find_gpu(n, catalog) for n in names]
    return filter_gpus(
        catalog,
        vendors=vendors,
        form_factors=forms,
        min_memory_bytes=int(min_memory_gib * GiB) if min_memory_gib else None,
    )


def software_stack(gpu: GPU) -> str:
    """The catalog's software stack with its note."""
    note = str(gpu.get("software_note") or "")
    return gpu.software_stack + (f": {note}" if note else "")


#: Why each other stack ranks after CUDA for those frameworks (sources in docs/plan.md).
STACK_NOTES = {
    "rocm": N_("ROCm: FlashAttention-2 and bitsandbytes need their ROCm builds"),
    "synapseai": N_("Gaudi: the HF Trainer runs through optimum-habana"),
    "oneapi": N_("Intel XPU: HF kernels are CUDA-first"),
    "cann": N_("Ascend: needs torch_npu and its kernels"),
    "metal": N_("Apple MPS: no FlashAttention, slow bf16 training"),
    "cpu": N_("CPU: no GPU stack"),
    "dtk": N_("Hygon DCU: needs DTK builds of PyTorch and FlashAttention"),
    "neuware": N_("Cambricon MLU: needs torch_mlu and Cambricon's framework forks"),
    "xpu-kunlun": N_("Kunlunxin XPU: Paddle first; PyTorch through vendor builds"),
    "musa": N_("Moore Threads: needs torch_musa; CUDA code is ported with MUSIFY"),
    "maca": N_("MetaX: needs MXMACA builds of PyTorch and its kernels"),
    "corex": N_("Iluvatar CoreX: CUDA-compatible at an older CUDA level; vendor wheels"),
    "biren": N_("Biren: BIRENSUPA with a vendor PyTorch; a small ecosystem"),
    "enflame": N_("Enflame GCU: needs TopsRider and torch_gcu"),
}
#: Form factors a person buys or rents by the hour for a fine-tune of their own.
BUY_OR_RENT = ("consumer", "workstation")


def plan_groups(task: str, gpus: list[GPU], form_filter: tuple[str, ...]) -> dict[str, int]:
    """For a personal fine-tune (LoRA, QLoRA) over the whole catalog: consumer and workstation
    cards first (0), the others after (1); otherwise one group."""
    if task not in ("lora", "qlora") or form_filter:
        return {}
    forms = {g.form_factor for g in gpus}
    if not forms & set(BUY_OR_RENT) or forms <= set(BUY_OR_RENT):
        return {}
    return {g.id: 0 if g.form_factor in BUY_OR_RENT else 1 for g in gpus}


def stack_demotions(framework: str, gpus: list[GPU], stack_ok: bool) -> dict[str, str]:
    """GPUs ranked after CUDA ones for a CUDA-first framework, with why (``--stack-ok``: none)."""
    from suanli.catalog.frameworks import get_framework

    # The Hugging Face family (frameworks.toml's cuda_first): bitsandbytes, FlashAttention-2,
    # PEFT's and Unsloth's kernels are built for CUDA first (docs/plan.md).
    if stack_ok or not get_framework(framework).cuda_first:
        return {}
    return {
        g.id: STACK_NOTES.get(g.software_stack, g.software_stack)
        for g in gpus
        if g.software_stack != "cuda"
    }
