"""Catalog load time: the typed schema (msgspec) against the hand-written validator it replaced.

Run: ``python benchmarks/bench_catalog_load.py [--repeat N]``. Both validate every bundled GPU
file (about 150 entries) from the same parsed TOML, so the figures compare validation alone; the
TOML parse (the same for both) is reported apart. The old validator is kept below, verbatim but
for the messages (its checks in the order it made them), only for this comparison. Results are
recorded in docs/catalog.md ("Schemas").
"""

from __future__ import annotations

import argparse
import re
import statistics
import sys
import time
from collections.abc import Callable, Iterable, Mapping
from importlib import resources
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
from suanli.catalog.loader import NON_GPU_DATA_FILES, check_entry
from suanli.catalog.schema import PRICE_KINDS, convert_gpu_file
from suanli.i18n import N_

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

_ID_RE = re.compile(r"^[a-z0-9][a-z0-9.-]*$")
_DATE_RE = re.compile(r"^\d{4}-\d{2}(-\d{2})?$")
_SPARSE_PAIRS = {
    "peak_fp16_sparse_flops": "peak_fp16_dense_flops",
    "peak_bf16_sparse_flops": "peak_bf16_dense_flops",
    "peak_fp8_sparse_flops": "peak_fp8_dense_flops",
    "peak_fp4_sparse_flops": "peak_fp4_dense_flops",
    "peak_int8_sparse_ops": "peak_int8_dense_ops",
}
_MAX_DENSE_16BIT_FLOPS_PER_WATT = 2.6e12


class OldError(ValueError):
    """A refusal of the old validator."""


# -- the hand-written validator of suanli 0.x (src/suanli/catalog/loader.py before issue 22) --


def _fail(origin: str, entry: str, message: str) -> OldError:
    return OldError(f"{origin}, entry {entry!r}: {message}")


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


# -- the comparison ---------------------------------------------------------------------------


def _documents() -> list[tuple[str, dict[str, Any]]]:
    data = resources.files("suanli.catalog") / "data"
    out = []
    for item in sorted(data.iterdir(), key=lambda t: t.name):
        if item.name.endswith(".toml") and item.name not in NON_GPU_DATA_FILES:
            out.append((item.name, tomllib.loads(item.read_text(encoding="utf-8"))))
    return out


def old_validate(docs: Iterable[tuple[str, dict[str, Any]]]) -> int:
    """The hand-written validator over every document; the number of entries."""
    return sum(len([parse_entry(e, name) for e in doc["gpu"]]) for name, doc in docs)


def new_validate(docs: Iterable[tuple[str, dict[str, Any]]]) -> int:
    """The typed schema, then the cross-field checks, over every document."""
    count = 0
    for name, doc in docs:
        parsed = convert_gpu_file(doc)
        count += len(
            [check_entry(e, raw, name) for e, raw in zip(parsed.gpu, doc["gpu"], strict=True)]
        )
    return count


def _time(run: Callable[[], object], repeat: int) -> list[float]:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return times


def main() -> None:
    """Print the median and best milliseconds of each way, alternated so both see one load."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=51)
    args = parser.parse_args()
    texts = []
    data = resources.files("suanli.catalog") / "data"
    for item in sorted(data.iterdir(), key=lambda t: t.name):
        if item.name.endswith(".toml") and item.name not in NON_GPU_DATA_FILES:
            texts.append(item.read_text(encoding="utf-8"))
    docs = _documents()
    assert old_validate(docs) == new_validate(docs)
    old: list[float] = []
    new: list[float] = []
    for _ in range(args.repeat):
        old += _time(lambda: old_validate(docs), 1)
        new += _time(lambda: new_validate(docs), 1)
    parse = _time(lambda: [tomllib.loads(t) for t in texts], args.repeat)
    entries = new_validate(docs)

    def line(label: str, times: list[float]) -> str:
        median, best = statistics.median(times) * 1e3, min(times) * 1e3
        return f"{label:<30} median {median:7.2f} ms   best {best:7.2f} ms"

    print(f"entries validated: {entries}")
    print(line("TOML parse (the same for both)", parse))
    print(line("hand-written validator", old))
    print(line("typed schema + cross checks", new))
    ratio = statistics.median(old) / statistics.median(new)
    print(f"schema / hand-written (medians): {ratio:.1f}x faster")


if __name__ == "__main__":
    main()
