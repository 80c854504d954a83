"""Buy, rent or call an API? What GPU work costs over the years and where the break-even lies
(``suanli cost``, ``POST /api/cost``).

The arithmetic is :func:`suanli.plan.cost.compare_costs` (docs/cost.md); this answer adds the
cumulative cost month by month (``curve``, for the chart) and the time at which renting has cost
as much as buying (``break_even_years``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

from suanli.answers.base import OMIT_NONE, Answer
from suanli.catalog import GPU, find_gpu, load_catalog
from suanli.catalog.prices import Price
from suanli.i18n import N_
from suanli.plan.cost import Assumption, CostComparison, CostTotals, YearRow, compare_costs
from suanli.plan.cost.model import check_currency, usd_cny_rate

#: The formula behind each number of the answer (the page shows them on hover).
EXPLAIN: dict[str, str] = {
    "buy_cumulative_usd": N_(
        "GPUs x (price + server share) + years x (electricity + facility), less the resale "
        "value at the end"
    ),
    "rent_cumulative_usd": N_("GPUs x busy hours per year x years x USD per GPU-hour"),
    "break_even_years": N_(
        "purchase / (rent per year - running cost per year): when renting has cost as much as "
        "buying (resale not counted)"
    ),
    "break_even_utilisation": N_(
        "the utilisation above which buying is cheaper over the whole period"
    ),
}

#: The longest PUE id kept from free text (the ids are short words such as typical-colo).
PUE_ID_MAX = 40


@dataclass(frozen=True)
class CostRequest:
    """The cost question: the GPUs, how long and how busy, and any price that overrides the
    dated defaults (costs.toml and the GPU catalog)."""

    gpu: str
    """A GPU name the catalog knows."""
    gpus: int = 8
    years: float = 3.0
    utilisation: float = 1.0
    """Share of the hours the GPUs are busy, 0..1."""
    price: float | None = None
    """Purchase price per GPU, in ``currency`` (default: the catalog's, or the China price)."""
    resale: float = 0.0
    """Resale value at the end, as a share of the purchase price."""
    pue: float | str | None = None
    """Power usage effectiveness: a number, a number as text, or an id (hyperscale,
    typical-colo, enterprise, home)."""
    region: str | None = None
    """Electricity region (us, eu, cn, ...)."""
    usd_per_kwh: float | None = None
    rent: float | None = None
    """On-demand rent per GPU-hour in ``currency`` (default: the cheapest snapshot)."""
    spot: float | None = None
    """Spot rent per GPU-hour in ``currency``."""
    reserved: float | None = None
    """Reserved rent per GPU-hour in ``currency``."""
    tokens_per_year: float = 0.0
    """Output tokens per year the work needs, for the API column."""
    input_tokens_per_year: float = 0.0
    api: str | None = None
    """API model for the price (e.g. llama-3.1-8b); with a token volume, also the model the
    GPUs serve, whose estimated speed turns the tokens into GPU-hours."""
    gpu_tokens_per_s: float | None = None
    """Output tokens per second one GPU serves (measured); default: estimated for ``api``."""
    catalog_file: str | None = None
    """Extra or overriding GPU entries (TOML)."""
    currency: str = "usd"
    """usd or cny: the currency of ``price``, ``rent``, ``spot`` and ``reserved``, of the
    verdict and assumptions, and of the ``..._cny`` amounts added with cny; cny also prefers
    the China market (Chinese clouds, China prices, electricity region cn)."""
    usd_cny: float | None = None
    """CNY per USD (default: the dated rate in costs.toml)."""
    cloud: str | None = None
    """Only cloud prices from providers whose name contains this (e.g. autodl)."""


@dataclass(frozen=True, kw_only=True)
class CostInputs:
    """What was compared."""

    gpu: str
    """Catalog id."""
    gpus: int
    years: float
    utilisation: float
    hours_per_year: float


@dataclass(frozen=True, kw_only=True)
class CostYear:
    """Cumulative cost of each option at the end of a year (the last may be a part-year)."""

    year: int | float
    """Whole years are integers."""
    buy_cumulative_usd: float
    rent_cumulative_usd: float
    api_cumulative_usd: float | None
    """None when no token volume was given."""
    spot_cumulative_usd: float | None
    reserved_cumulative_usd: float | None
    buy_cumulative_cny: float | None = field(default=None, metadata=OMIT_NONE)
    """The same amounts in CNY, with currency cny only."""
    rent_cumulative_cny: float | None = field(default=None, metadata=OMIT_NONE)
    api_cumulative_cny: float | None = field(default=None, metadata=OMIT_NONE)
    spot_cumulative_cny: float | None = field(default=None, metadata=OMIT_NONE)
    reserved_cumulative_cny: float | None = field(default=None, metadata=OMIT_NONE)


@dataclass(frozen=True, kw_only=True)
class CurvePoint:
    """Cumulative cost of each option at one time (month by month, for a chart)."""

    year: float
    buy_cumulative_usd: float
    """Purchase plus running costs so far; the resale value comes off at the last point."""
    rent_cumulative_usd: float | None
    spot_cumulative_usd: float | None
    reserved_cumulative_usd: float | None
    api_cumulative_usd: float | None
    buy_cumulative_cny: float | None = field(default=None, metadata=OMIT_NONE)
    """The same amounts in CNY, with currency cny only."""
    rent_cumulative_cny: float | None = field(default=None, metadata=OMIT_NONE)
    spot_cumulative_cny: float | None = field(default=None, metadata=OMIT_NONE)
    reserved_cumulative_cny: float | None = field(default=None, metadata=OMIT_NONE)
    api_cumulative_cny: float | None = field(default=None, metadata=OMIT_NONE)


@dataclass(frozen=True, kw_only=True)
class CostAnswer(Answer):
    """Buy vs rent (vs spot, reserved, API) over the years, the break-even and the verdict."""

    schema_name = "cost"

    inputs: CostInputs
    per_year: tuple[CostYear, ...]
    totals: CostTotals
    break_even_utilisation: float | None
    """Utilisation at which buying and renting cost the same over the period; None if none in
    [0, 1] (renting is then cheaper at any utilisation)."""
    break_even_hours: float | None
    """Busy hours per GPU per year at the break-even utilisation."""
    verdict: str
    assumptions: tuple[Assumption, ...]
    """Every input with its value, unit, source and date."""
    curve: tuple[CurvePoint, ...]
    """Cumulative costs at 12 to 600 evenly spaced times (monthly for whole years)."""
    break_even_years: float | None
    """When renting has cost as much as buying (resale not counted); None: never."""
    explain: dict[str, str]
    """The formula behind each number."""
    currency: str = "USD"
    """USD or CNY: the currency of the verdict and the money assumptions. The ``..._usd``
    amounts are always in USD; with CNY every one has a ``..._cny`` sibling."""
    usd_cny: float | None = field(default=None, metadata=OMIT_NONE)
    """CNY per USD behind the ``..._cny`` amounts (with CNY only)."""
    rent: Price | None = None
    """The on-demand rent per GPU-hour compared, with its provider, kind, date and source: the
    one every view shows for the card (``suanli gpu``, ``plan``, ``capacity``...), or the
    user's (``given``)."""
    buy: Price | None = None
    """The purchase price per GPU compared, with where it comes from (or ``given``)."""


def parse_pue(value: float | str | None) -> float | str | None:
    """A PUE as given (a number, a number as text, or an id) -> a number or an id.

    Text that is not a number is an id (stripped, at most 40 characters). Raises ``ValueError``
    on a number that is not finite.
    """
    pue = value
    if isinstance(value, str):
        try:
            pue = float(value)
        except ValueError:
            pue = value.strip()[:PUE_ID_MAX]
    if isinstance(pue, float) and not math.isfinite(pue):
        raise ValueError(N_("invalid pue: give a finite number or an id such as typical-colo"))
    return pue


def _year_row(row: YearRow) -> CostYear:
    year = float(row.year)
    return CostYear(
        year=int(year) if year.is_integer() else year,
        buy_cumulative_usd=row.buy_cumulative_usd,
        rent_cumulative_usd=row.rent_cumulative_usd,
        api_cumulative_usd=row.api_cumulative_usd,
        spot_cumulative_usd=row.spot_cumulative_usd,
        reserved_cumulative_usd=row.reserved_cumulative_usd,
        buy_cumulative_cny=row.buy_cumulative_cny,
        rent_cumulative_cny=row.rent_cumulative_cny,
        api_cumulative_cny=row.api_cumulative_cny,
        spot_cumulative_cny=row.spot_cumulative_cny,
        reserved_cumulative_cny=row.reserved_cumulative_cny,
    )


def _cny(value: float | None, rate: float | None) -> float | None:
    return value * rate if value is not None and rate is not None else None


def cost_curve(result: CostComparison) -> tuple[tuple[CurvePoint, ...], float | None]:
    """The cumulative costs month by month and the break-even time in years.

    Buying costs ``capex + opex·t`` (less the resale value at the end); each rented option
    ``rate·t`` with its yearly total as the rate. The break-even time is
    ``capex / (rent per year - opex per year)`` when renting costs more per year than running.
    """
    totals = result.totals
    years = result.years
    rate = result.usd_cny
    capex = totals.capex_usd
    opex = (totals.electricity_usd + totals.facility_usd) / years
    yearly = {
        "rent": totals.rent_usd / years,
        "spot": totals.spot_usd / years if totals.spot_usd is not None else None,
        "reserved": totals.reserved_usd / years if totals.reserved_usd is not None else None,
        "api": totals.api_usd / years if totals.api_usd is not None else None,
    }
    steps = max(12, min(600, math.ceil(years * 12)))
    curve = []
    for i in range(steps + 1):
        t = years * i / steps
        at = {key: per * t if per is not None else None for key, per in yearly.items()}
        buy = capex + opex * t - (totals.resale_usd if i == steps else 0)
        curve.append(
            CurvePoint(
                year=t,
                buy_cumulative_usd=buy,
                rent_cumulative_usd=at["rent"],
                spot_cumulative_usd=at["spot"],
                reserved_cumulative_usd=at["reserved"],
                api_cumulative_usd=at["api"],
                buy_cumulative_cny=_cny(buy, rate),
                rent_cumulative_cny=_cny(at["rent"], rate),
                spot_cumulative_cny=_cny(at["spot"], rate),
                reserved_cumulative_cny=_cny(at["reserved"], rate),
                api_cumulative_cny=_cny(at["api"], rate),
            )
        )
    rent_year = yearly["rent"]
    crossing = capex / (rent_year - opex) if rent_year is not None and rent_year > opex else None
    return tuple(curve), crossing


@dataclass(frozen=True, kw_only=True)
class ServedVolume:
    """A token volume as GPU time: the speed, and the share of the hours it keeps the GPUs busy."""

    tokens_per_s: float
    """Output tokens per second per GPU."""
    utilisation: float
    speed_assumption: Assumption
    utilisation_assumption: Assumption


#: The serving setting of the speed estimate: concurrent sequences and output per request.
SERVE_BATCH = 16
SERVE_OUTPUT_TOKENS = 256
SERVE_PROMPT_TOKENS = 512


def served_volume(req: CostRequest, gpu: GPU) -> ServedVolume:
    """The GPU-hours ``req``'s token volume takes, as a utilisation of ``req.gpus`` GPUs;
    ``ValueError`` with one sentence when the speed is unknown or the GPUs cannot serve it."""
    if req.gpu_tokens_per_s is not None:
        speed = req.gpu_tokens_per_s
        if not speed > 0:
            raise ValueError(N_("--gpu-tokens-per-s must be above 0"))
        speed_source = "given"
    elif req.api is not None:
        from suanli.plan.cost.data import api_prices

        api_prices(req.api)  # an unknown API model is named as such first
        speed, speed_source = _estimated_speed(req, gpu)
    else:
        raise ValueError(
            N_(
                "a token volume needs the GPUs' speed: give --api MODEL (its speed is "
                "estimated) or --gpu-tokens-per-s"
            )
        )
    hours_needed = req.tokens_per_year / speed / 3600.0 if req.tokens_per_year else 0.0
    hours_available = req.gpus * 8760.0
    if hours_needed > hours_available:
        needed_gpus = math.ceil(hours_needed / 8760.0)
        raise ValueError(
            N_(
                "{gpus} x {gpu} at {speed:,.0f} output tokens/s each serve at most {most:.3g} "
                "tokens a year, less than the {asked:.3g} asked; give --gpus {needed} or more"
            ).format(
                gpus=req.gpus,
                gpu=gpu.id,
                speed=speed,
                most=speed * 3600 * hours_available,
                asked=req.tokens_per_year,
                needed=needed_gpus,
            )
        )
    utilisation = hours_needed / hours_available
    return ServedVolume(
        tokens_per_s=speed,
        utilisation=utilisation,
        speed_assumption=Assumption(
            name="gpu_output_tokens_per_s",
            value=speed,
            unit=N_("output tokens/s per GPU"),
            source=speed_source,
        ),
        utilisation_assumption=Assumption(
            name="utilisation",
            value=utilisation,
            unit=N_("fraction of hours busy"),
            source=N_(
                "derived: output tokens per year / (tokens/s per GPU x 3,600 x 8,760 x GPUs)"
            ),
        ),
    )


def _estimated_speed(req: CostRequest, gpu: GPU) -> tuple[float, str]:
    """Output tokens/s of one GPU serving ``req.api`` (a preset or config), as suanli perf
    estimates a static batch of up to 16 requests in bf16."""
    from suanli.answers.model_source import load_model
    from suanli.answers.request import WorkRequest, build_work
    from suanli.estimate.device import device_for
    from suanli.estimate.fitting import fit_inference
    from suanli.estimate.inference import inference_perf
    from suanli.estimate.workload import InferWork

    assert req.api is not None
    try:
        spec = load_model(req.api).spec
    except (ValueError, OSError):
        raise ValueError(
            N_(
                "suanli cannot estimate a GPU's speed for {model!r} (not a preset or config); "
                "give --gpu-tokens-per-s with a measured figure"
            ).format(model=req.api)
        ) from None
    prompt = SERVE_PROMPT_TOKENS
    if req.tokens_per_year > 0 and req.input_tokens_per_year > 0:
        ratio = req.input_tokens_per_year / req.tokens_per_year
        prompt = max(1, min(round(SERVE_OUTPUT_TOKENS * ratio), 131_072))
    context = prompt + SERVE_OUTPUT_TOKENS
    work = build_work(WorkRequest(task="infer", batch=1, context=context))
    assert isinstance(work, InferWork)
    batch = min(SERVE_BATCH, fit_inference(spec, work, gpu.id, gpu.memory_bytes).max_batch)
    if batch < 1:
        raise ValueError(
            N_(
                "{model} in bf16 does not fit one {gpu}; give --gpu-tokens-per-s with the speed "
                "of the setup you would run"
            ).format(model=req.api, gpu=gpu.id)
        )
    work = build_work(WorkRequest(task="infer", batch=batch, context=context))
    assert isinstance(work, InferWork)
    device = device_for(gpu, "bf16", auto_calibration=False)
    result = inference_perf(spec, work, device, prompt, SERVE_OUTPUT_TOKENS)
    source = N_(
        "estimated (suanli perf): {model} in bf16, {batch} requests at once, {prompt} "
        "prompt + {output} output tokens each"
    ).format(model=req.api, batch=batch, prompt=prompt, output=SERVE_OUTPUT_TOKENS)
    return result.batch_tokens_per_s, source


def cost(req: CostRequest, *, catalog: Sequence[GPU] | None = None) -> CostAnswer:
    """Buy vs rent vs API for ``req.gpus`` GPUs like ``req.gpu`` over ``req.years``.

    ``catalog`` is the GPU list to look the name up in (default: the bundled catalog with
    ``req.catalog_file`` over it). Raises ``ValueError`` with one sentence on bad input (an
    unknown GPU, region or PUE id, a missing purchase price).
    """
    gpu = find_gpu(
        req.gpu, list(catalog) if catalog is not None else load_catalog(req.catalog_file)
    )
    currency = check_currency(req.currency)
    rate, _ = usd_cny_rate(req.usd_cny) if currency == "cny" else (1.0, None)

    def usd(amount: float | None) -> float | None:
        """A money input given in ``req.currency``, in USD."""
        return amount / rate if amount is not None else None

    utilisation, served = req.utilisation, None
    if req.tokens_per_year > 0 or req.input_tokens_per_year > 0:
        # The GPUs are costed for the hours the same token volume takes them, not for busy
        # hours given separately: buy, rent and the API then answer for the same work.
        served = served_volume(req, gpu)
        utilisation = served.utilisation
    result = compare_costs(
        gpu,
        gpus=req.gpus,
        years=req.years,
        utilisation=utilisation,
        price_usd=usd(req.price),
        resale_fraction=req.resale,
        pue=parse_pue(req.pue),
        region=req.region,
        usd_per_kwh=req.usd_per_kwh,
        rent_usd_per_gpu_hour=usd(req.rent),
        spot_usd_per_gpu_hour=usd(req.spot),
        reserved_usd_per_gpu_hour=usd(req.reserved),
        output_tokens_per_year=req.tokens_per_year,
        input_tokens_per_year=req.input_tokens_per_year,
        api=req.api,
        currency=currency,
        usd_cny=req.usd_cny,
        cloud=req.cloud,
    )
    curve, crossing = cost_curve(result)
    assumptions = result.assumptions
    if served is not None:
        derived = [
            served.utilisation_assumption if a.name == "utilisation" else a for a in assumptions
        ]
        assumptions = (*derived, served.speed_assumption)
    return CostAnswer(
        inputs=CostInputs(
            gpu=result.gpu_id,
            gpus=result.gpus,
            years=result.years,
            utilisation=result.utilisation,
            hours_per_year=result.hours_per_year,
        ),
        per_year=tuple(_year_row(r) for r in result.per_year),
        totals=result.totals,
        break_even_utilisation=result.break_even_utilisation,
        break_even_hours=result.break_even_hours,
        verdict=result.verdict,
        assumptions=assumptions,
        curve=curve,
        break_even_years=crossing,
        explain=dict(EXPLAIN),
        currency=result.currency,
        usd_cny=result.usd_cny,
        rent=result.rent,
        buy=result.buy,
    )
