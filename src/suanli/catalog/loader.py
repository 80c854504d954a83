"""Load and validate the GPU catalog from TOML files.

The bundled files live in ``suanli/catalog/data``. A user adds or overrides entries with their own
file (``--catalog FILE``, or ``$SUANLI_CATALOG``, or ``gpus.toml`` in the user's configuration
directory, ``~/.config/suanli`` on Linux); an entry with the id of a bundled one replaces it. Every
file is validated the same way on load: the typed schema (:mod:`suanli.catalog.schema`) checks
types, enumerations, ranges and date shapes, then :func:`check_entry` checks what involves more
than one field, and the dates against the calendar.
"""

from __future__ import annotations

import datetime as dt
import os
import sys
from collections.abc import Iterable, Mapping
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

import msgspec

from suanli.catalog.dates import calendar_problem, utc_today
from suanli.catalog.explain import entry_label, explain_gpu_error
from suanli.catalog.gpu import BOOL_FIELDS, GPU, NUMERIC_FIELDS, REQUIRED_FIELDS, Source
from suanli.catalog.names import normalize
from suanli.catalog.schema import DATE_FIELDS, PRICE_KINDS, convert_gpu_file
from suanli.catalog.toml_cache import parse_bundled_toml
from suanli.i18n import N_, message_of
from suanli.paths import config_dir
from suanli.safe_files import UnsafeFileError, read_regular_text

#: The largest catalog, price or calibration file read (the bundled ones are under 200 KB).
MAX_TEXT_FILE_BYTES = 16 << 20
#: tomllib recurses once per nesting level: a file of thousands of "[" is refused in one sentence.
TOO_DEEP = N_("{origin}: nested too deeply to be a catalog file; fix the syntax")

__all__ = [
    "MAX_CATALOG_ENTRIES",
    "NON_GPU_DATA_FILES",
    "PRICE_KINDS",
    "USER_CATALOG_ENV",
    "CatalogError",
    "bundled_gpus",
    "load_catalog",
    "parse_catalog_text",
    "read_catalog_file",
    "user_catalog_path",
]

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
        "kv_dequant.toml",
    }
)

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python 3.10 only
    import tomli as tomllib


class CatalogError(ValueError):
    """A catalog file or entry is invalid; the message names the file, the entry and the fix."""


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
    """The per-user catalog file: ``gpus.toml`` in :func:`suanli.paths.config_dir`
    (``$XDG_CONFIG_HOME/suanli`` or ``~/.config/suanli`` on Linux)."""
    return config_dir() / "gpus.toml"


def _fail(origin: str, entry: str, message: str) -> CatalogError:
    return CatalogError(entry_label(origin, entry, message))


def _check_sources(
    entry: Any, keys: Iterable[str], origin: str, today: dt.date
) -> tuple[Source, ...]:
    """Real dates, and a source for every figure (unless one source covers ``*``)."""
    sources = []
    for item in entry.sources:
        problem = calendar_problem(item.date, _SOURCE_DATE, today)
        if problem:
            raise _fail(origin, entry.id, problem)
        sources.append(Source(tuple(item.fields), item.ref.strip(), item.date))
    covered = {f for s in sources for f in s.fields}
    if "*" not in covered:
        missing = [k for k in keys if k in _NEED_SOURCE and k not in covered]
        if missing:
            raise _fail(
                origin,
                entry.id,
                N_("figures without a source: {fields}").format(fields=", ".join(missing)),
            )
    return tuple(sources)


def _check_physics(gid: str, numbers: dict[str, float], origin: str) -> None:
    """Sparse figures twice the dense ones; dense 16-bit FLOP/s per watt below the bound."""
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


#: Figures that a source must cover.
_NEED_SOURCE = frozenset(NUMERIC_FIELDS) | frozenset(BOOL_FIELDS)
#: The name of a source's date in messages.
_SOURCE_DATE = N_("source date")
#: Keys of a ``[[gpu]]`` table that are not kept in :attr:`GPU.figures`.
_NOT_FIGURES = frozenset({*REQUIRED_FIELDS, "aliases", "sources", "uncertain"})


def check_entry(
    entry: Any, raw: Mapping[str, Any], origin: str, today: dt.date | None = None
) -> GPU:
    """The cross-field checks of one schema-valid ``[[gpu]]`` table (``entry``, a
    :data:`~suanli.catalog.schema.GpuEntry`, parsed from the TOML table ``raw``), and the
    :class:`GPU` it describes; raises :class:`CatalogError`. ``today`` (UTC) bounds the dates."""
    now = today if today is not None else utc_today()
    gid = entry.id
    for key in DATE_FIELDS:
        if key in raw:
            problem = calendar_problem(getattr(entry, key), key, now)
            if problem:
                raise _fail(origin, gid, problem)
    # Figures in file order, as the schema converted them (floats, or ints for counts).
    figures = {k: getattr(entry, k) for k in raw if k not in _NOT_FIGURES}
    _check_physics(gid, figures, origin)  # the physics involves optional figures only
    if ("price_usd" in raw) != ("price_date" in raw):
        raise _fail(origin, gid, N_("price_usd and price_date go together"))
    if ("cloud_usd_per_hour" in raw) != ("cloud_price_date" in raw):
        raise _fail(origin, gid, N_("cloud_usd_per_hour and cloud_price_date go together"))
    if not all(u in raw for u in entry.uncertain):
        raise _fail(origin, gid, N_("uncertain must list fields that this entry has"))
    return GPU(
        id=gid,
        name=entry.name,
        vendor=entry.vendor,
        form_factor=entry.form_factor,
        memory_bytes=entry.memory_bytes,
        memory_type=entry.memory_type,
        memory_bandwidth_bytes_per_s=entry.memory_bandwidth_bytes_per_s,
        launch_year=entry.launch_year,
        software_stack=entry.software_stack,
        figures=figures,
        aliases=tuple(entry.aliases),
        sources=_check_sources(entry, raw, origin, now),
        uncertain=tuple(entry.uncertain),
        origin=origin,
    )


#: Entries one catalog file may hold (the bundled catalog has about 150).
MAX_CATALOG_ENTRIES = 10_000


def parse_catalog_text(text: str, origin: str, *, bundled: bool = False) -> list[GPU]:
    """Parse the TOML text of one catalog file into validated entries (``bundled``: one of the
    package's files, whose parsed tables are kept between runs by
    :func:`~suanli.catalog.toml_cache.parse_bundled_toml`)."""
    try:
        doc = parse_bundled_toml(text, f"catalog/{origin}") if bundled else tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise CatalogError(
            N_("{origin}: not valid TOML ({error}); fix the syntax").format(
                origin=origin, error=exc
            )
        ) from None
    except RecursionError:
        raise CatalogError(TOO_DEEP.format(origin=origin)) from None
    raw_entries = doc.get("gpu", [])
    if isinstance(raw_entries, list) and len(raw_entries) > MAX_CATALOG_ENTRIES:
        raise CatalogError(
            N_("{origin}: {count:,} entries; a catalog holds at most {most:,}").format(
                origin=origin, count=len(raw_entries), most=MAX_CATALOG_ENTRIES
            )
        )
    try:
        parsed = convert_gpu_file(doc)
    except msgspec.ValidationError as exc:
        raise CatalogError(explain_gpu_error(str(exc), doc, origin)) from None
    today = utc_today()
    gpus = [
        check_entry(e, raw, origin, today) for e, raw in zip(parsed.gpu, raw_entries, strict=True)
    ]
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
        text = read_regular_text(p, MAX_TEXT_FILE_BYTES)
    except OSError as exc:
        raise CatalogError(
            N_("cannot read catalog file {path!r} ({error}); check the path").format(
                path=str(p), error=exc.strerror
            )
        ) from None
    except UnsafeFileError as exc:
        raise CatalogError(message_of(exc)) from None
    except UnicodeDecodeError:
        raise CatalogError(
            N_("{path} is not UTF-8 text; pass a TOML catalog file").format(path=str(p))
        ) from None
    return list(_parsed_catalog(text, str(p)))


@lru_cache(maxsize=8)
def _parsed_catalog(text: str, origin: str) -> tuple[GPU, ...]:
    """:func:`parse_catalog_text`, once per file content: every estimate loads the catalog
    (``suanli plan`` about 80 times), and a user's file was parsed again each time. Keyed on the
    text itself, so an edited file is read afresh; a failure is not kept."""
    return tuple(parse_catalog_text(text, origin))


@lru_cache(maxsize=1)
def bundled_gpus() -> tuple[GPU, ...]:
    """All bundled entries, validated; ids are unique across files."""
    gpus: list[GPU] = []
    data = resources.files("suanli.catalog") / "data"
    for item in sorted(data.iterdir(), key=lambda t: t.name):
        if item.name.endswith(".toml") and item.name not in NON_GPU_DATA_FILES:
            text = item.read_text(encoding="utf-8")
            gpus.extend(parse_catalog_text(text, item.name, bundled=True))
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

    Order: bundled data, then :func:`user_catalog_path` (or ``$SUANLI_CATALOG``), then
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
