"""The type of one declared workload option (:class:`Option`) and the catalog ids some helps
list, read cheaply (:func:`catalog_ids`); the table itself is :mod:`suanli.answers.options`."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from suanli.estimate.workload import TASKS

#: Tasks an option applies to by default: every one.
ALL_TASKS = TASKS


@dataclass(frozen=True, kw_only=True)
class Option:
    """One workload option as every front-end offers it."""

    name: str
    """The request field, the web's JSON key; the command line's ``--name-with-dashes``."""
    kind: type
    """``int``, ``float``, ``str`` or ``bool`` (a flag on the command line)."""
    default: Any
    """The value when none is given; ``None`` where the help names the rule that replaces it."""
    help: str
    """English message id (``N_``); ``{name}`` holes are filled by :attr:`help_values`."""
    unit: str = ""
    """What one unit of the value is (``tokens``, ``sequences``, ``GPUs``, ``GiB``...)."""
    minimum: float | None = None
    maximum: float | None = None
    """Inclusive bounds, unless :attr:`min_open` / :attr:`max_open` exclude them."""
    min_open: bool = False
    max_open: bool = False
    choices: tuple[str, ...] = ()
    """The values allowed (from the estimators' constants); empty: any within the bounds."""
    cli_choices: tuple[str, ...] = ()
    """More values the command line accepts (``--task generate-image``: a diffusion pipeline)."""
    max_length: int | None = None
    """Longest text value (a free-text option: a framework id, a weight format)."""
    tasks: tuple[str, ...] = ALL_TASKS
    """The tasks whose answer reads it (a serving framework sets only serving options)."""
    layout: bool = False
    """How the work is laid out (batch, parallel degrees, GPUs, offload, recomputation) rather
    than what it is: ``plan`` searches these and takes only the others."""
    metavar: str | None = None
    """The command line's name for the value in ``--help`` (``GIB``, ``N``, ``WxH``)."""
    help_values: Callable[[], Mapping[str, str]] | None = None
    """The values of the help's holes, computed when the help is first shown."""

    @property
    def flag(self) -> bool:
        """A yes/no option: ``--name`` on the command line, ``true``/``false`` on the web."""
        return self.kind is bool

    @property
    def optional(self) -> bool:
        """``None`` is a value (the default that the help describes)."""
        return self.default is None

    @property
    def cli_name(self) -> str:
        """``--global-batch`` for ``global_batch``."""
        return "--" + self.name.replace("_", "-")

    def help_text(self) -> str:
        """The English help with its holes filled (the catalog's frameworks, ...)."""
        return self.help.format(**self.help_values()) if self.help_values else self.help


def catalog_ids(file: str, table: str) -> tuple[str, ...]:
    """The ``id`` of every ``[[table]]`` in the bundled ``catalog/data/<file>``, in file order.

    For ``--help``, which must not slow a command down: the ids are read from the text (each
    table's first key) instead of parsing and validating the whole file, which took ten times
    longer (``tests/test_options_declared.py`` holds the list to the loaders' own)."""
    import re

    import suanli.catalog

    text = (Path(suanli.catalog.__file__).parent / "data" / file).read_text(encoding="utf-8")
    header = re.escape(f"[[{table}]]")
    return tuple(
        re.findall(rf'^{header}[ \t]*\n(?:[ \t]*#.*\n)*[ \t]*id\s*=\s*"([^"]+)"', text, re.M)
    )


@cache
def framework_ids() -> dict[str, str]:
    """Every framework in catalog/data/frameworks.toml, for the ``--framework`` help."""
    return {"frameworks": ", ".join(catalog_ids("frameworks.toml", "framework"))}


@cache
def weight_format_ids() -> dict[str, str]:
    """Every weight format in catalog/data/quant.toml, for the ``--quant`` help."""
    return {"formats": ", ".join(catalog_ids("quant.toml", "format"))}
