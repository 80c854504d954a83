"""Activation recomputation as people run it: ``--recompute auto`` (the default) settles on the
lightest setting that fits the card, the one every view (mem, perf, fit, card, compare, plan,
the page, the Python API) uses for the same question.

Why the lightest that fits: recomputation buys memory with a second forward pass (about a third
more work for full checkpointing, Chen et al. 2016; a few percent for selective, Korthikanti et
al. 2022), so a practitioner whose job fits turns it off and one whose job does not fit turns
it on: LLaMA-Factory, Unsloth, torchtune's LoRA recipes and PEFT's
``prepare_model_for_kbit_training`` switch gradient checkpointing on by default for
fine-tuning on small cards, and ``plan``'s search picks the fastest layout that fits, which is
the same rule. Without a card there is nothing to fit: no recomputation, said so.
"""

from __future__ import annotations

from dataclasses import replace

from suanli.answers.option_kinds import RECOMPUTE_AUTO
from suanli.answers.request import WorkRequest, apply_framework, build_work
from suanli.estimate.memory import training_memory
from suanli.estimate.workload import InferWork, TrainWork
from suanli.i18n import N_
from suanli.models.spec import ModelSpec
from suanli.units import GiB

#: The request value that asks for the lightest recomputation that fits.
AUTO = RECOMPUTE_AUTO
#: Tried in this order: each saves more memory than the one before and costs more time.
LADDER = ("none", "selective", "full")


def is_auto(req: WorkRequest) -> bool:
    """Whether ``req`` leaves recomputation to :func:`settle_work` (training, and neither the
    user nor the framework's defaults chose one)."""
    return req.task not in ("infer", "generate-image") and apply_framework(req).recompute == AUTO


def settle_work(
    req: WorkRequest, spec: ModelSpec, memory_bytes: int | None
) -> tuple[TrainWork | InferWork, tuple[str, ...]]:
    """The workload of ``req`` (as :func:`build_work`) with ``--recompute auto`` settled for a
    card of ``memory_bytes`` per GPU (None: no card), and the assumption that says which
    setting was taken and why (empty when the request chose one itself)."""
    if not is_auto(req):
        return build_work(req), ()
    if memory_bytes is None:
        work = build_work(replace(req, recompute="none"))
        return work, (
            N_("activation recomputation: none (--recompute auto; give --gpu to settle it)"),
        )
    needs: list[float] = []
    # Checkpointing every K-th layer is a refinement of op or full: only full is left to try.
    ladder = LADDER if req.recompute_every == 1 else LADDER[-1:]
    work = build_work(replace(req, recompute=ladder[0]))
    for mode in ladder:
        work = build_work(replace(req, recompute=mode))
        assert isinstance(work, TrainWork)
        need = training_memory(spec, work).total_bytes
        if need <= memory_bytes:
            if not needs:
                return work, (
                    N_(
                        "activation recomputation: none (--recompute auto: the job fits without it)"
                    ),
                )
            return work, (
                N_(
                    "activation recomputation: {mode} (--recompute auto: without it the job "
                    "needs {need:,.2f} GiB and the card has {have:,.2f} GiB)"
                ).format(mode=mode, need=needs[0] / GiB, have=memory_bytes / GiB),
            )
        needs.append(need)
    return work, (
        N_("activation recomputation: full (--recompute auto: the job does not fit even with it)"),
    )
