"""``suanli gpus`` (the catalog, filtered and sorted) and ``suanli gpu NAME`` (one in full)."""

from __future__ import annotations

from typing import Any

import click

from suanli.catalog import GPU
from suanli.catalog.gpu import FORM_FACTORS, NUMERIC_FIELDS, VENDORS
from suanli.catalog.prices import Price
from suanli.cli.prices import price_note, price_option, priced, rent_option
from suanli.cli.render import formatted_help, print_json, print_table
from suanli.cli.types import FloatRange
from suanli.i18n import N_, _
from suanli.units import GiB, fmt_usd

catalog_option = click.option(
    "--catalog",
    "catalog_file",
    type=click.Path(dir_okay=False),
    default=None,
    help=N_("A TOML file of extra or overriding [[gpu]] entries (see docs/catalog.md)."),
)


def _tflops(value: Any) -> str:
    return f"{value / 1e12:,.1f}" if value else "-"


#: ``--sort``'s help lists catalog.query.SORT_ALIASES (a test keeps the two in step).
SORT_HELP = N_(
    "Sort by a metric: memory, bandwidth, fp64, fp32, tf32, fp16, bf16, fp8, fp4, int8, tdp, "
    "price, cloud, year, interconnect, or any numeric field name."
)


@click.command(
    "gpus", help=N_("List the GPU catalog: memory, bandwidth, dense peak FLOP/s, power, price.")
)
@click.option(
    "--vendor",
    type=click.Choice(VENDORS, case_sensitive=False),
    multiple=True,
    metavar="VENDOR",
    help=formatted_help(
        N_("Keep only these vendors (repeatable): {choices}.").format(choices=", ".join(VENDORS))
    ),
)
@click.option(
    "--form-factor",
    type=click.Choice(FORM_FACTORS, case_sensitive=False),
    multiple=True,
    help=N_("Keep only these form factors (repeatable)."),
)
@click.option(
    "--min-memory",
    type=FloatRange(min=0),
    default=None,
    metavar="GIB",
    help=N_("Keep GPUs with at least this much memory, in GiB."),
)
@click.option(
    "--sort",
    "sort_key",
    default="bf16",
    show_default=True,
    metavar="FIELD",
    help=SORT_HELP,
)
@click.option("--ascending", is_flag=True, help=N_("Smallest first (default: largest first)."))
@click.option("--json", "as_json", is_flag=True, help=N_("Print one JSON document (base units)."))
@catalog_option
def gpus_cmd(
    vendor: tuple[str, ...],
    form_factor: tuple[str, ...],
    min_memory: float | None,
    sort_key: str,
    ascending: bool,
    as_json: bool,
    catalog_file: str | None,
) -> None:
    """``suanli gpus``: its help is the ``help=`` above (translated with --lang zh)."""
    from suanli.answers.gpus import GpuListRequest, gpu_list

    answer = gpu_list(
        GpuListRequest(
            vendors=vendor,
            form_factors=form_factor,
            min_memory=min_memory,
            sort=sort_key,
            ascending=ascending,
            catalog_file=catalog_file,
        )
    )
    if as_json:
        print_json(answer.to_json())
        return
    gpus = answer.devices
    # Each rent points to its provenance (provider, kind, date), listed once below the table.
    notes: dict[str, int] = {}
    for rent in answer.rents:
        if rent is not None:
            notes.setdefault(price_note(rent), len(notes) + 1)
    rows = [
        [
            g.id,
            f"{g.memory_bytes / GiB:,.0f}",
            g.memory_type,
            f"{g.memory_bandwidth_bytes_per_s / 1e12:.2f}",
            _tflops(g.get("peak_bf16_dense_flops") or g.get("peak_fp16_dense_flops")),
            _tflops(g.get("peak_fp8_dense_flops")),
            f"{g.get('tdp_watts'):.0f}" if g.get("tdp_watts") else "-",
            f"{fmt_usd(rent.usd)} [{notes[price_note(rent)]}]" if rent is not None else "-",
        ]
        for g, rent in zip(gpus, answer.rents, strict=True)
    ]
    figures = [_("GiB"), "TB/s", "bf16 TFLOPS", "fp8 TFLOPS", "TDP W", "$/h"]
    print_table(
        _("{n} devices, sorted by {key}").format(n=len(gpus), key=sort_key),
        [_("id"), figures[0], _("memory"), *figures[1:]],
        rows,
        right_align=figures,
        no_wrap=[_("id")],
        caption=_(
            "Dense tensor rates (sparse datasheet figures halved). "
            "bf16 column falls back to fp16 where bf16 is unsupported. "
            "'suanli gpu ID' shows sources."
        ),
    )
    if notes:
        print_table(
            _("$/h: where each rent per GPU-hour comes from (the same in every command)"),
            ["#", _("from")],
            [[f"[{i}]", note] for note, i in notes.items()],
        )


def _format_field(name: str, value: Any) -> str:
    if value is None:
        return "-"
    if name == "memory_bytes":
        return f"{value / GiB:,.0f} GiB ({value:,} bytes)"
    if name.endswith("bytes_per_s"):
        return f"{value / 1e9:,.0f} GB/s"
    if name.endswith("_flops"):
        return f"{value / 1e12:,.1f} TFLOPS"
    if name.endswith("_ops"):
        return f"{value / 1e12:,.1f} TOPS"
    if name.endswith("usd") or name.endswith("usd_per_hour"):
        return fmt_usd(value)
    if isinstance(value, float) and value.is_integer():
        return f"{value:.0f}"
    return str(value)


#: The catalog's own price figures: the table shows the rent and purchase price every command
#: shows instead (``price_rows``); the JSON keeps both.
CATALOG_PRICE_FIELDS = (
    "cloud_usd_per_hour",
    "cloud_price_date",
    "price_usd",
    "price_kind",
    "price_date",
)


def gpu_rows(gpu: GPU) -> list[list[str]]:
    """Every field of ``gpu`` with its formatted value and the number of its source (the
    catalog's own prices apart: see ``price_rows``)."""
    index = {id(src): i + 1 for i, src in enumerate(gpu.sources)}
    rows = []
    for key, value in gpu.as_dict().items():
        if key in ("sources", "uncertain", "aliases", *CATALOG_PRICE_FIELDS):
            continue
        src = gpu.source_of(key) if key in NUMERIC_FIELDS else None
        flag = _(" (uncertain)") if key in gpu.uncertain else ""
        rows.append([key, _format_field(key, value) + flag, f"[{index[id(src)]}]" if src else ""])
    if gpu.aliases:
        rows.append(["aliases", ", ".join(gpu.aliases), ""])
    return rows


def price_rows(rent: Price | None, buy: Price | None) -> list[list[str]]:
    """The rent and purchase price every command shows for the card, with where each comes
    from (the catalog's own ``cloud_usd_per_hour`` and ``price_usd`` are rows of their own)."""
    return [
        [_("rent"), priced(rent), rent.source if rent is not None and not rent.given else ""],
        [_("buy"), priced(buy), buy.source if buy is not None and not buy.given else ""],
    ]


@click.command(
    "gpu",
    help=N_(
        "Show one GPU in full, every figure with its source. NAME forgives case, spaces, dashes."
    ),
)
@click.argument("name")
@rent_option
@price_option
@click.option("--json", "as_json", is_flag=True, help=N_("Print one JSON document (base units)."))
@catalog_option
def gpu_cmd(
    name: str, rent: float | None, price: float | None, as_json: bool, catalog_file: str | None
) -> None:
    """``suanli gpu``: its help is the ``help=`` above (translated with --lang zh)."""
    from suanli.answers.gpus import GpuRequest, gpu_detail

    answer = gpu_detail(GpuRequest(name=name, catalog_file=catalog_file, rent=rent, price=price))
    if as_json:
        print_json(answer.to_json())
        return
    gpu = answer.gpu
    print_table(
        gpu.name,
        [_("field"), _("value"), _("source")],
        gpu_rows(gpu) + price_rows(answer.rent, answer.buy),
        caption=_("from {origin}").format(origin=gpu.origin),
    )
    sources = [
        [
            f"[{i}]",
            s.ref,
            s.date,
            _("all other figures") if "*" in s.fields else ", ".join(s.fields),
        ]
        for i, s in enumerate(gpu.sources, start=1)
    ]
    print_table(_("sources"), ["#", _("reference"), _("date"), _("covers")], sources)
