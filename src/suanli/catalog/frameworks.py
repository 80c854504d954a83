"""Training and serving frameworks as documented sets of option defaults.

Each framework in ``catalog/data/frameworks.toml`` names the workload options it sets (kernels,
recomputation, loss, gradient buffers, serving reservations...), each with the reason, the file
or page of the framework it was read from and that version. ``--framework NAME`` applies them to
every option the user did not set; the individual options still win.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Any

from suanli.catalog.loader import CatalogError
from suanli.catalog.toml_data import read_data
from suanli.i18n import N_

KINDS = ("train", "serve")


@dataclass(frozen=True)
class FrameworkDefault:
    """One option a framework sets, and why."""

    option: str
    """A WorkRequest field (``kernels``, ``recompute``, ``gpu_memory_utilization``...)."""
    value: Any
    why: str
    source: str


@dataclass(frozen=True)
class ConfigKey:
    """The framework's setting that turns a technique on."""

    option: str
    """A TrainWork field, or tp/pp/zero/sp of its layout."""
    value: Any
    """The value that calls for the key; ``*``: any value but the default."""
    key: str
    """The setting, with ``{value}`` for the value."""


@dataclass(frozen=True)
class Framework:
    """A framework: what it is for, the options it implies and where they come from."""

    id: str
    name: str
    kind: str
    """``train`` or ``serve``; ``hf`` (the default) is both."""
    version: str
    """The release or commit the defaults were read from."""
    source: str
    defaults: tuple[FrameworkDefault, ...]
    aliases: tuple[str, ...] = ()
    techniques: tuple[str, ...] = ()
    """Memory techniques it offers (``suanli fit`` suggests only these)."""
    notes: str = ""
    engine: tuple[FrameworkDefault, ...] = ()
    """A serving engine's scheduler defaults (``suanli capacity --framework``)."""
    config: tuple[ConfigKey, ...] = ()
    """The framework's own setting for each technique (``suanli fit`` prints them)."""
    family: str = "other"
    """The family of stacks whose published runs give an answer its error band."""
    cuda_first: bool = False
    """Its libraries are built for CUDA first: ``plan`` ranks other software stacks after CUDA."""

    def serves(self) -> bool:
        """Whether it runs inference (``--task infer``)."""
        return self.kind == "serve" or self.id == "hf"

    def trains(self) -> bool:
        """Whether it trains or fine-tunes."""
        return self.kind == "train"


def _framework(raw: dict[str, Any]) -> Framework:
    try:
        defaults = tuple(
            FrameworkDefault(str(d["option"]), d["value"], str(d["why"]), str(d["source"]))
            for d in raw.get("default", [])
        )
        fw = Framework(
            id=str(raw["id"]),
            name=str(raw["name"]),
            kind=str(raw["kind"]),
            version=str(raw["version"]),
            source=str(raw["source"]),
            defaults=defaults,
            aliases=tuple(str(a) for a in raw.get("aliases", [])),
            techniques=tuple(str(t) for t in raw.get("techniques", [])),
            notes=str(raw.get("notes", "")),
            family=str(raw.get("family", "other")),
            cuda_first=bool(raw.get("cuda_first", False)),
        )
    except (KeyError, TypeError) as exc:
        raise CatalogError(N_("frameworks.toml: a framework lacks {key}").format(key=exc)) from None
    if fw.kind not in KINDS:
        raise CatalogError(
            N_("frameworks.toml: {id} has kind {kind!r}, not one of {kinds}").format(
                id=fw.id, kind=fw.kind, kinds=KINDS
            )
        )
    return fw


@lru_cache(maxsize=1)
def frameworks() -> tuple[Framework, ...]:
    """Every bundled framework, in file order, with its serving engine's defaults."""
    data = read_data("frameworks.toml")
    found = [_framework(raw) for raw in data.get("framework", [])]
    engines: dict[str, list[FrameworkDefault]] = {}
    for raw in data.get("engine", []):
        try:
            engines.setdefault(str(raw["framework"]), []).append(
                FrameworkDefault(
                    str(raw["option"]), raw["value"], str(raw["why"]), str(raw["source"])
                )
            )
        except KeyError as exc:
            raise CatalogError(
                N_("frameworks.toml: an [[engine]] entry lacks {key}").format(key=exc)
            ) from None
    configs: dict[str, list[ConfigKey]] = {}
    for raw in data.get("config", []):
        try:
            configs.setdefault(str(raw["framework"]), []).append(
                ConfigKey(str(raw["option"]), raw["value"], str(raw["key"]))
            )
        except KeyError as exc:
            raise CatalogError(
                N_("frameworks.toml: a [[config]] entry lacks {key}").format(key=exc)
            ) from None
    known = {fw.id for fw in found}
    for name in (*engines, *configs):
        if name not in known:
            raise CatalogError(
                N_("frameworks.toml: an entry names unknown framework {name!r}").format(name=name)
            )
    return tuple(
        replace(fw, engine=tuple(engines.get(fw.id, ())), config=tuple(configs.get(fw.id, ())))
        for fw in found
    )


def get_framework(name: str) -> Framework:
    """The framework called ``name`` (its id or an alias, any case); ValueError with the list."""
    key = name.strip().lower()
    for fw in frameworks():
        if key == fw.id or key in fw.aliases:
            return fw
    known = ", ".join(fw.id for fw in frameworks())
    raise ValueError(
        N_("framework {name!r} is not one of {known} (suanli frameworks lists them)").format(
            name=name, known=known
        )
    )
