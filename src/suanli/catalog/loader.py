"""Load and validate the GPU catalog from TOML files.

The bundled files live in ``suanli/catalog/data``. A user adds or overrides entries with their own
file (``--catalog FILE``, or ``$SUANLI_CATALOG``, or ``~/.config/suanli/gpus.toml``); an entry with
the id of a bundled one replaces it. Every file is validated the same way on load.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Iterable, Mapping
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

from suanli.catalog.gpu import (
    ALL_FIELDS,
    BOOL_FIELDS,
    FORM_FACTORS,
    GPU,
    INTERCONNECT_KINDS,
    NUMERIC_FIELDS,
    REQUIRED_FIELDS,
    SOFTWARE_STACKS,
    VENDORS,
    Source,
)
from suanli.catalog.names import normalize
from suanli.i18n import N_

#: Data files beside the GPU files that hold other tables (weight formats, runtime overheads).
NON_GPU_DATA_FILES = frozenset(
    {
        "quant.toml",
        "overhead.toml",
        "interconnect.toml",
        "efficiency.toml",
        "costs.toml",
        "kernels.toml",
        "attention.toml",
        "decode_attention.toml",
        "frameworks.toml",
    }
)

#: Allowed ``price_kind`` values.
PRICE_KINDS = ("launch-msrp", "street", "list")

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python 3.10 only
    import tomli as tomllib


class CatalogError(ValueError):
    """A catalog file or entry is invalid; the message names the file, the entry and the fix."""


_ID_RE = re.compile(r"^[a-z0-9][a-z0-9.-]*$")
_DATE_RE = re.compile(r"^\d{4}-\d{2}(-\d{2})?$")

#: Sparse field -> its dense counterpart; the sparse figure must be exactly twice the dense one.
_SPARSE_PAIRS = {
    "peak_fp16_sparse_flops": "peak_fp16_dense_flops",
    "peak_bf16_sparse_flops": "peak_bf16_dense_flops",
    "peak_fp8_sparse_flops": "peak_fp8_dense_flops",
    "peak_fp4_sparse_flops": "peak_fp4_dense_flops",
    "peak_int8_sparse_ops": "peak_int8_dense_ops",
}

#: Upper bound of dense 16-bit tensor FLOP/s per watt of TDP. The most efficient parts in the
#: catalog (L4: 121e12 / 72 W = 1.7e12; B200: 2250e12 / 1000 W = 2.3e12) stay below it, while a
#: sparse figure stored as dense doubles the ratio. A heuristic guard (see docs/catalog.md).
_MAX_DENSE_16BIT_FLOPS_PER_WATT = 2.6e12

#: Environment variable naming a user catalog file (checked after the bundled data).
USER_CATALOG_ENV = "SUANLI_CATALOG"


def user_catalog_path() -> Path:
    """The per-user catalog file: ``$XDG_CONFIG_HOME/suanli/gpus.toml`` (or ``~/.config``)."""
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "suanli" / "gpus.toml"


def _fail(origin: str, entry: str, message: str) -> CatalogError:
    if entry:
        return CatalogError(
            N_("{origin}, entry {entry!r}: {message}").format(
                origin=origin, entry=entry, message=message
            )
        )
    return CatalogError(f"{origin}: {message}")


def _check_number(origin: str, gid: str, key: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise _fail(
            origin, gid, N_("{key} must be a number, got {value!r}").format(key=key, value=value)
        )
    low, high = NUMERIC_FIELDS[key]
    if not low <= value <= high:
        raise _fail(
            origin,
            gid,
            N_(
                "{key} = {value:g} is outside the plausible range [{low:g}, {high:g}]; "
                "check the unit (bytes, bytes/s, FLOP/s)"
            ).format(key=key, value=value, low=low, high=high),
        )
    return float(value)


def _parse_sources(origin: str, gid: str, raw: Any, keys: Iterable[str]) -> tuple[Source, ...]:
    if not isinstance(raw, list) or not raw:
        raise _fail(origin, gid, N_("needs a non-empty [[gpu.sources]] list"))
    sources = []
    for item in raw:
        if not isinstance(item, Mapping):
            raise _fail(origin, gid, N_("each source must be a table with fields, ref and date"))
        unknown = set(item) - {"fields", "ref", "date"}
        if unknown:
            raise _fail(
                origin, gid, N_("unknown source key(s) {keys}").format(keys=sorted(unknown))
            )
        fields = item.get("fields")
        ref = item.get("ref")
        date = item.get("date")
        if not isinstance(fields, list) or not all(isinstance(f, str) for f in fields):
            raise _fail(origin, gid, N_("source 'fields' must be a list of field names"))
        if not isinstance(ref, str) or not ref.strip():
            raise _fail(origin, gid, N_("source 'ref' must name the document"))
        if not isinstance(date, str) or not _DATE_RE.match(date):
            raise _fail(
                origin,
                gid,
                N_("source date {date!r} must be YYYY-MM or YYYY-MM-DD").format(date=date),
            )
        for name in fields:
            if name != "*" and name not in ALL_FIELDS:
                raise _fail(
                    origin, gid, N_("source names unknown field {name!r}").format(name=name)
                )
        sources.append(Source(tuple(fields), ref.strip(), date))
    covered = {f for s in sources for f in s.fields}
    if "*" not in covered:
        missing = [
            k for k in keys if (k in NUMERIC_FIELDS or k in BOOL_FIELDS) and k not in covered
        ]
        if missing:
            raise _fail(
                origin,
                gid,
                N_("figures without a source: {fields}").format(fields=", ".join(missing)),
            )
    return tuple(sources)


def parse_entry(raw: Mapping[str, Any], origin: str) -> GPU:
    """Validate one ``[[gpu]]`` table and build a :class:`GPU`; raises :class:`CatalogError`."""
    gid = str(raw.get("id", ""))
    unknown = sorted(set(raw) - ALL_FIELDS)
    if unknown:
        raise _fail(
            origin,
            gid,
            N_("unknown key(s) {keys}; see docs/catalog.md").format(keys=", ".join(unknown)),
        )
    for key in REQUIRED_FIELDS:
        if key not in raw:
            raise _fail(origin, gid, N_("missing required field {key!r}").format(key=key))
    if not _ID_RE.match(gid):
        raise _fail(origin, gid, N_("id must be lower-case letters, digits, '.' and '-'"))
    enums = {
        "vendor": VENDORS,
        "form_factor": FORM_FACTORS,
        "software_stack": SOFTWARE_STACKS,
        "interconnect_kind": INTERCONNECT_KINDS,
    }
    for key, allowed in enums.items():
        if key in raw and raw[key] not in allowed:
            raise _fail(
                origin,
                gid,
                N_("{key} = {value!r}; use one of {allowed}").format(
                    key=key, value=raw[key], allowed=", ".join(allowed)
                ),
            )
    if "price_kind" in raw and raw["price_kind"] not in PRICE_KINDS:
        raise _fail(
            origin,
            gid,
            N_("{key} = {value!r}; use one of {allowed}").format(
                key="price_kind", value=raw["price_kind"], allowed=", ".join(PRICE_KINDS)
            ),
        )
    for key in ("price_date", "cloud_price_date"):
        if key in raw and not _DATE_RE.match(str(raw[key])):
            raise _fail(origin, gid, N_("{key} must be YYYY-MM or YYYY-MM-DD").format(key=key))
    numbers = {k: _check_number(origin, gid, k, v) for k, v in raw.items() if k in NUMERIC_FIELDS}
    for key in BOOL_FIELDS:
        if key in raw and not isinstance(raw[key], bool):
            raise _fail(
                origin,
                gid,
                N_("{key} must be true or false, got {value!r}").format(key=key, value=raw[key]),
            )
    for sparse, dense in _SPARSE_PAIRS.items():
        if sparse in numbers:
            if dense not in numbers:
                raise _fail(
                    origin,
                    gid,
                    N_("{sparse} given without {dense}").format(sparse=sparse, dense=dense),
                )
            if abs(numbers[sparse] - 2 * numbers[dense]) > 0.01 * numbers[sparse]:
                raise _fail(
                    origin,
                    gid,
                    N_("{sparse} must be twice {dense} (2:4 sparsity)").format(
                        sparse=sparse, dense=dense
                    ),
                )
    tdp = numbers.get("tdp_watts")
    for key in ("peak_fp16_dense_flops", "peak_bf16_dense_flops"):
        if tdp and key in numbers and numbers[key] / tdp > _MAX_DENSE_16BIT_FLOPS_PER_WATT:
            raise _fail(
                origin,
                gid,
                N_(
                    "{key} = {value:g} is implausibly high for {tdp:g} W; "
                    "is it a sparse figure stored as dense? Halve it or move it to a "
                    "*_sparse_* field"
                ).format(key=key, value=numbers[key], tdp=tdp),
            )
    if ("price_usd" in raw) != ("price_date" in raw):
        raise _fail(origin, gid, N_("price_usd and price_date go together"))
    if ("cloud_usd_per_hour" in raw) != ("cloud_price_date" in raw):
        raise _fail(origin, gid, N_("cloud_usd_per_hour and cloud_price_date go together"))
    aliases = raw.get("aliases", [])
    if not isinstance(aliases, list) or not all(isinstance(a, str) for a in aliases):
        raise _fail(origin, gid, N_("aliases must be a list of strings"))
    uncertain = raw.get("uncertain", [])
    if not isinstance(uncertain, list) or not all(u in raw for u in uncertain):
        raise _fail(origin, gid, N_("uncertain must list fields that this entry has"))
    sources = _parse_sources(origin, gid, raw.get("sources"), raw.keys())
    core = set(REQUIRED_FIELDS)
    figures = {
        k: (numbers[k] if k in numbers and k not in ("pcie_gen", "pcie_lanes") else v)
        for k, v in raw.items()
        if k not in core and k not in ("aliases", "sources", "uncertain")
    }
    for key in (
        "pcie_gen",
        "pcie_lanes",
        "launch_year",
        "nvenc_engines",
        "nvdec_engines",
        "rt_cores",
        "cores",
        "memory_channels",
    ):
        if key in figures:
            figures[key] = int(figures[key])
    return GPU(
        id=gid,
        name=str(raw["name"]),
        vendor=str(raw["vendor"]),
        form_factor=str(raw["form_factor"]),
        memory_bytes=int(numbers["memory_bytes"]),
        memory_type=str(raw["memory_type"]),
        memory_bandwidth_bytes_per_s=numbers["memory_bandwidth_bytes_per_s"],
        launch_year=int(numbers["launch_year"]),
        software_stack=str(raw["software_stack"]),
        figures=figures,
        aliases=tuple(aliases),
        sources=sources,
        uncertain=tuple(uncertain),
        origin=origin,
    )


#: Entries one catalog file may hold (the bundled catalog has about 150).
MAX_CATALOG_ENTRIES = 10_000


def parse_catalog_text(text: str, origin: str) -> list[GPU]:
    """Parse the TOML text of one catalog file into validated entries."""
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise CatalogError(
            N_("{origin}: not valid TOML ({error}); fix the syntax").format(
                origin=origin, error=exc
            )
        ) from None
    unknown_top = set(doc) - {"gpu"}
    if unknown_top:
        raise CatalogError(
            N_("{origin}: unknown top-level key(s) {keys}; use [[gpu]]").format(
                origin=origin, keys=sorted(unknown_top)
            )
        )
    entries = doc.get("gpu", [])
    if not isinstance(entries, list) or not all(isinstance(e, dict) for e in entries):
        raise CatalogError(
            N_("{origin}: 'gpu' must be an array of tables ([[gpu]])").format(origin=origin)
        )
    if len(entries) > MAX_CATALOG_ENTRIES:
        raise CatalogError(
            N_("{origin}: {count:,} entries; a catalog holds at most {most:,}").format(
                origin=origin, count=len(entries), most=MAX_CATALOG_ENTRIES
            )
        )
    gpus = [parse_entry(e, origin) for e in entries]
    seen: set[str] = set()
    for gpu in gpus:
        if gpu.id in seen:
            raise CatalogError(
                N_("{origin}: duplicate id {id!r}; ids must be unique").format(
                    origin=origin, id=gpu.id
                )
            )
        seen.add(gpu.id)
    return gpus


def read_catalog_file(path: str | Path) -> list[GPU]:
    """Read and validate a user catalog file."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as exc:
        raise CatalogError(
            N_("cannot read catalog file {path!r} ({error}); check the path").format(
                path=str(p), error=exc.strerror
            )
        ) from None
    return parse_catalog_text(text, str(p))


@lru_cache(maxsize=1)
def bundled_gpus() -> tuple[GPU, ...]:
    """All bundled entries, validated; ids are unique across files."""
    gpus: list[GPU] = []
    data = resources.files("suanli.catalog") / "data"
    for item in sorted(data.iterdir(), key=lambda t: t.name):
        if item.name.endswith(".toml") and item.name not in NON_GPU_DATA_FILES:
            gpus.extend(parse_catalog_text(item.read_text(encoding="utf-8"), item.name))
    _check_unique(gpus)
    return tuple(gpus)


def _check_unique(gpus: Iterable[GPU]) -> None:
    """Ids are unique across files, and no alias names two entries."""
    seen: dict[str, str] = {}
    alias_owner: dict[str, str] = {}
    for gpu in gpus:
        if gpu.id in seen:
            raise CatalogError(
                N_("id {id!r} appears in both {first} and {second}; ids must be unique").format(
                    id=gpu.id, first=seen[gpu.id], second=gpu.origin
                )
            )
        seen[gpu.id] = gpu.origin
        for alias in {normalize(a) for a in (gpu.id, gpu.name, *gpu.aliases)}:
            other = alias_owner.setdefault(alias, gpu.id)
            if other != gpu.id:
                raise CatalogError(
                    N_(
                        "{origin}: alias {alias!r} of {id!r} also names {other!r}; "
                        "aliases must be unique"
                    ).format(origin=gpu.origin, alias=alias, id=gpu.id, other=other)
                )


def load_catalog(extra: str | Path | None = None, use_user_file: bool = True) -> list[GPU]:
    """The bundled catalog, overridden by the user's files.

    Order: bundled data, then ``~/.config/suanli/gpus.toml`` (or ``$SUANLI_CATALOG``), then
    ``extra``. A later entry with the same id replaces an earlier one.
    """
    by_id = {g.id: g for g in bundled_gpus()}
    paths: list[Path] = []
    if use_user_file:
        env = os.environ.get(USER_CATALOG_ENV)
        if env:
            paths.append(Path(env))
        elif user_catalog_path().is_file():
            paths.append(user_catalog_path())
    if extra is not None:
        paths.append(Path(extra))
    for path in paths:
        for gpu in read_catalog_file(path):
            by_id[gpu.id] = gpu
    return list(by_id.values())
