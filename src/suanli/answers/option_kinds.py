"""The kinds of workload option the declarations repeat (a token count, GiB, a fraction, a
choice, a switch, a parallel degree) and the bounds they share; the declarations themselves are
:mod:`suanli.answers.options` and :mod:`suanli.answers.options_serving`."""

from __future__ import annotations

from typing import Any

from suanli.answers.option_type import ALL_TASKS, Option
from suanli.estimate.workload import LORA_TARGETS, TRAIN_TASKS
from suanli.limits import MAX_TOKENS

#: Tasks an option applies to besides every one (ALL_TASKS): serving only, adapters only.
INFER = ("infer",)
ADAPTERS = ("lora", "qlora")
#: ``--recompute auto``: the lightest recomputation that fits the card (answers/recompute.py).
RECOMPUTE_AUTO = "auto"
#: Sequences in one micro-batch, global batch or accumulation (the web's bound since its start).
MAX_SEQUENCES = 65_536
#: Tensor, pipeline and expert degrees, and layers per checkpoint.
MAX_DEGREE = 1024


def lora_targets() -> dict[str, str]:
    """The LoRA target names the ``lora_targets`` help lists."""
    return {"targets": ",".join(LORA_TARGETS)}


def tokens(name: str, default: int | None, help: str, tasks: tuple[str, ...]) -> Option:
    """A token count, 1 to :data:`suanli.limits.MAX_TOKENS`."""
    return Option(
        name=name,
        kind=int,
        default=default,
        help=help,
        unit="tokens",
        minimum=1,
        maximum=MAX_TOKENS,
        tasks=tasks,
    )


def gib(name: str, help: str) -> Option:
    """A memory size in GiB, 0 to 1,024, defaulting to the rule its help names."""
    return Option(
        name=name,
        kind=float,
        default=None,
        help=help,
        unit="GiB",
        minimum=0,
        maximum=1024,
        metavar="GIB",
    )


def fraction(name: str, help: str, *, tasks: tuple[str, ...] = ALL_TASKS, **kw: Any) -> Option:
    """A share between 0 and 1 (``min_open``/``max_open`` exclude an end)."""
    return Option(
        name=name,
        kind=float,
        default=None,
        help=help,
        unit="fraction",
        minimum=0,
        maximum=1,
        tasks=tasks,
        **kw,
    )


def choice(name: str, default: str, choices: tuple[str, ...], help: str, **kw: Any) -> Option:
    """One of ``choices``."""
    return Option(name=name, kind=str, default=default, help=help, choices=choices, **kw)


def switch(name: str, help: str, *, tasks: tuple[str, ...] = TRAIN_TASKS, **kw: Any) -> Option:
    """An on/off flag, off by default (with a ``--no-`` form on the command line)."""
    return Option(name=name, kind=bool, default=False, help=help, tasks=tasks, **kw)


def degree(name: str, help: str, tasks: tuple[str, ...] = TRAIN_TASKS) -> Option:
    """A parallel degree, 1 to :data:`MAX_DEGREE` GPUs: part of the layout."""
    return Option(
        name=name,
        kind=int,
        default=1,
        help=help,
        unit="GPUs",
        minimum=1,
        maximum=MAX_DEGREE,
        tasks=tasks,
        layout=True,
    )
