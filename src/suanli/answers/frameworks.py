"""Which frameworks suanli knows, and what each one sets (``suanli frameworks``,
``GET /api/frameworks``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from suanli.answers.base import Answer
from suanli.catalog.frameworks import Framework, frameworks, get_framework


@dataclass(frozen=True, kw_only=True)
class FrameworkDefaultInfo:
    """One option a framework sets where the user does not."""

    option: str
    """The option's name (``--option-name`` on the command line, the field in the API)."""
    value: Any
    why: str
    source: str
    """The framework's file or page it was read from."""


@dataclass(frozen=True, kw_only=True)
class FrameworkInfo:
    """A framework: what it runs, the version its defaults were read from, and the defaults."""

    id: str
    name: str
    kind: str
    """``train`` or ``serve``."""
    version: str
    source: str
    aliases: tuple[str, ...]
    techniques: tuple[str, ...]
    """Memory techniques it offers (``suanli fit`` suggests only these)."""
    defaults: tuple[FrameworkDefaultInfo, ...]
    notes: str


@dataclass(frozen=True, kw_only=True)
class FrameworksAnswer(Answer):
    """Every framework ``--framework`` accepts (or the one asked for)."""

    schema_name = "frameworks"

    frameworks: tuple[FrameworkInfo, ...]


def _info(fw: Framework) -> FrameworkInfo:
    return FrameworkInfo(
        id=fw.id,
        name=fw.name,
        kind=fw.kind,
        version=fw.version,
        source=fw.source,
        aliases=fw.aliases,
        techniques=fw.techniques,
        defaults=tuple(
            FrameworkDefaultInfo(option=d.option, value=d.value, why=d.why, source=d.source)
            for d in fw.defaults
        ),
        notes=fw.notes,
    )


def framework_list(name: str | None = None) -> FrameworksAnswer:
    """All frameworks, or the one called ``name`` (an id or alias; ValueError if unknown)."""
    chosen = (get_framework(name),) if name else frameworks()
    return FrameworksAnswer(frameworks=tuple(_info(fw) for fw in chosen))
