"""The web API's request bodies (pydantic): the CLI's options as JSON fields, same names, same
defaults, bounded so that no request asks for unbounded work. Each turns into the application
layer's request type."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, create_model

from suanli.answers import card as card_answers
from suanli.answers import cost as cost_answers
from suanli.answers import image as image_answers
from suanli.answers import memory as memory_answers
from suanli.answers import perf as perf_answers
from suanli.answers import plan as plan_answers
from suanli.answers.option_type import Option
from suanli.answers.options import OPTIONS, PUE, WORK_OPTIONS
from suanli.answers.request import WorkRequest
from suanli.answers.serving_load import OUTPUT_TOKENS, PROMPT_TOKENS
from suanli.catalog.gpu import FORM_FACTORS, VENDORS
from suanli.i18n import N_, message_of
from suanli.limits import MAX_NICS_PER_NODE, MAX_TOKENS  # the CLI and the web share the bounds
from suanli.models.presets import DEFAULT_MODEL
from suanli.plan.scenarios import SCENARIOS
from suanli.web.security import ApiError

#: Largest GPU count the plan search covers on the web (the CLI has no such cap).
PLAN_MAX_GPUS_TRAIN = 64
#: The serving search grows faster with the GPU count (formats x KV dtypes x TP x batch).
PLAN_MAX_GPUS_INFER = 8


def _one_of(allowed: Sequence[str]) -> AfterValidator:
    def check(value: str) -> str:
        if value not in allowed:
            raise ValueError(
                N_("{value!r} is not one of {allowed}").format(
                    value=value, allowed=", ".join(allowed)
                )
            )
        return value

    return AfterValidator(check)


Vendor = Annotated[str, _one_of(VENDORS)]
FormFactor = Annotated[str, _one_of(FORM_FACTORS)]
Scenario = Annotated[str, _one_of(tuple(SCENARIOS))]
Objective = Annotated[str, _one_of(("time", "cost", "cost-per-token"))]
Name = Annotated[str, Field(min_length=1, max_length=100)]
Money = Annotated[float, Field(ge=0, le=1e12, allow_inf_nan=False)]
Tokens = Annotated[int, Field(ge=1, le=MAX_TOKENS)]


def annotation(option: Option) -> Any:
    """The JSON field type of a declared option: its choices, bounds or length, and null where
    the option's default is "the rule its help names"."""
    base: Any
    if option.flag:
        base = bool
    elif option.choices:
        # The check gives the one-sentence error; the enum puts the choices in the schemas.
        base = Annotated[
            str, _one_of(option.choices), Field(json_schema_extra={"enum": list(option.choices)})
        ]
    elif option.kind is str:
        base = Annotated[str, Field(max_length=option.max_length)]
    else:
        base = Annotated[option.kind, Field(**_bounds(option))]
    return base | None if option.optional else base


def _bounds(option: Option) -> dict[str, Any]:
    bounds: dict[str, Any] = {
        "gt" if option.min_open else "ge": option.minimum,
        "lt" if option.max_open else "le": option.maximum,
    }
    if option.kind is float:
        bounds["allow_inf_nan"] = False
    return bounds


def number_field(option: Option) -> Any:
    """The pydantic field of a declared number option that is never null (``pue``)."""
    return Field(option.default, description=option.help_text(), **_bounds(option))


def declared_fields(options: Iterable[Option]) -> dict[str, Any]:
    """pydantic's ``create_model`` fields of ``options``: each one's type, default and help."""
    return {
        option.name: (annotation(option), Field(option.default, description=option.help_text()))
        for option in options
    }


def unset_fields(options: Iterable[Option], description: str) -> dict[str, Any]:
    """The fields of ``options`` with null for "not sent" (``plan`` then follows its scenario)."""
    return {
        option.name: (annotation(option) | None, Field(None, description=description))
        for option in options
    }


class _ShapeBase(BaseModel):
    model_config = ConfigDict(extra="forbid")

    model: str = Field(
        DEFAULT_MODEL,
        max_length=200,
        description="A preset name (GET /api/presets), a Hugging Face id org/name, or the "
        "'upload:...' id POST /api/config returned. Paths are not accepted.",
    )


#: The options ``plan`` takes as "not sent" (null) rather than with their defaults.
PLAN_UNSET = ("task", "quant")

if TYPE_CHECKING:
    _Shape = _ShapeBase
    _WorkloadFields = _ShapeBase
    _PlanFields = _ShapeBase
else:
    # What the work is (the CLI's workload-shape options), without its layout.
    _Shape = create_model(
        "_Shape",
        __base__=_ShapeBase,
        __module__=__name__,
        **declared_fields(o for o in OPTIONS if not o.layout and o.name not in PLAN_UNSET),
    )
    # The CLI's workload options (``suanli mem``/``perf``): the work and its layout.
    _WorkloadFields = create_model(
        "_WorkloadFields",
        __base__=_Shape,
        __module__=__name__,
        **declared_fields(o for o in OPTIONS if o.layout or o.name in PLAN_UNSET),
    )
    _PlanFields = create_model(
        "_PlanFields",
        __base__=_Shape,
        __module__=__name__,
        **unset_fields(
            (WORK_OPTIONS[name] for name in PLAN_UNSET),
            "Default: the scenario's (task: else lora; quant: the search's formats).",
        ),
        **declared_fields([WORK_OPTIONS["global_batch"]]),
    )


class Workload(_WorkloadFields):
    """The CLI's workload options (``suanli mem``/``perf``): the work and its layout, each
    field generated from its declaration (suanli.answers.options)."""

    def work(self) -> WorkRequest:
        """The workload fields as the application layer's request; the fields the client sent
        are the ones a framework's defaults never change."""
        sent = tuple(sorted(self.model_fields_set - {"model"}))
        return WorkRequest.from_options({**self.model_dump(exclude={"model"}), "explicit": sent})


class MemoryRequest(Workload):
    """``suanli mem MODEL ... --gpu G --json``, and the fit on each of ``cards``."""

    gpu: Name | None = Field(None, description="Check the fit on this GPU (the doc's 'fit').")
    cards: list[Name] = Field(
        default_factory=list,
        max_length=16,
        description="More GPUs to compare: one entry each in 'fits' (after 'gpu').",
    )

    def to_request(self) -> memory_answers.MemoryRequest:
        """The application layer's memory request."""
        return memory_answers.MemoryRequest(
            model=self.model, work=self.work(), gpu=self.gpu, cards=tuple(self.cards)
        )


class PerfRequest(Workload):
    """``suanli perf MODEL ... --gpu G --json``."""

    gpu: Name = Field(description="The GPU (catalog name).")
    gpus_per_node: int | None = Field(None, ge=1, le=1024)
    inter_node: str | None = Field(None, max_length=40)
    nics_per_node: int | None = Field(None, ge=1, le=MAX_NICS_PER_NODE)
    tokens: float | None = Field(None, ge=1, le=1e18, allow_inf_nan=False)
    prompt: Tokens = PROMPT_TOKENS
    output: Tokens = OUTPUT_TOKENS
    pue: float = number_field(PUE)
    price: Money | None = None
    ignore_fit: bool = Field(
        False, description="Answer for a job that cannot run (fits/supported false) anyway."
    )

    def to_request(self) -> perf_answers.PerfRequest:
        """The application layer's perf request."""
        return perf_answers.PerfRequest(
            model=self.model,
            work=self.work(),
            gpu=self.gpu,
            gpus_per_node=self.gpus_per_node,
            inter_node=self.inter_node,
            nics_per_node=self.nics_per_node,
            tokens=self.tokens,
            prompt=self.prompt,
            output=self.output,
            pue=self.pue,
            price=self.price,
            ignore_fit=self.ignore_fit,
        )


class ImageRequest(BaseModel):
    """``suanli perf PIPELINE --task generate-image --gpu G --json``: bundled pipelines only
    (the server's folders are not the client's to read)."""

    model_config = ConfigDict(extra="forbid")

    model: Name = Field("sdxl", description="sd-1.5, sdxl, sd3-medium, flux.1-dev, flux.1-schnell")
    gpu: Name = Field(description="The GPU (catalog name).")
    width: int | None = Field(None, ge=16, le=8192)
    height: int | None = Field(None, ge=16, le=8192)
    steps: int | None = Field(None, ge=1, le=1000)
    batch: int = Field(1, ge=1, le=64)
    dtype: Annotated[str, _one_of(tuple(image_answers.DTYPE_BYTES))] | None = None
    guidance: bool | None = None
    max_sequence_length: int | None = Field(None, ge=1, le=4096)
    cpu_offload: Annotated[str, _one_of(image_answers.OFFLOADS)] = "none"
    ignore_fit: bool = False

    def to_request(self) -> image_answers.ImageRequest:
        """The application layer's image request."""
        return image_answers.ImageRequest(
            model=self.model,
            gpu=self.gpu,
            width=self.width,
            height=self.height,
            steps=self.steps,
            batch=self.batch,
            dtype=self.dtype,
            guidance=self.guidance,
            max_sequence_length=self.max_sequence_length,
            offload=self.cpu_offload,
            ignore_fit=self.ignore_fit,
            local_paths=False,
        )


class PlanRequest(_PlanFields):
    """``suanli plan MODEL ... --json``; the search is capped for a responsive page."""

    scenario: Scenario | None = None
    gpu: list[Name] = Field(default_factory=list, max_length=64, description="Only these GPUs.")
    vendor: list[Vendor] = Field(default_factory=list, max_length=8)
    form_factor: list[FormFactor] = Field(default_factory=list, max_length=8)
    min_memory: float | None = Field(None, ge=0, le=1e6, allow_inf_nan=False)
    max_gpus: int | None = Field(
        None,
        ge=1,
        le=1024,
        description=f"Capped at {PLAN_MAX_GPUS_TRAIN} for training and "
        f"{PLAN_MAX_GPUS_INFER} for inference on the web.",
    )
    gpus: int | None = Field(None, ge=1, le=PLAN_MAX_GPUS_TRAIN, description="Exactly N GPUs.")
    tokens: float = Field(1e8, ge=1, le=1e18, allow_inf_nan=False)
    rps: float | None = Field(None, gt=0, le=1e9, allow_inf_nan=False)
    prompt: Tokens = Field(PROMPT_TOKENS, description="Inference: prompt tokens per request.")
    output: Tokens = Field(OUTPUT_TOKENS, description="Inference: output tokens per request.")
    max_tpot_ms: float | None = Field(None, gt=0, le=1e6, allow_inf_nan=False)
    objective: Objective | None = None
    budget: Money | None = None
    rent: Money | None = Field(
        None, description="Rent per GPU-hour in USD for every GPU (default: each card's)."
    )
    stack_ok: bool = Field(False, description="Rank every software stack by speed alone.")

    def to_request(self) -> plan_answers.PlanRequest:
        """The application layer's plan request, with the web's GPU-count caps."""
        sent = self.model_dump(exclude={"model", "stack_ok"})
        return plan_answers.PlanRequest(
            model=self.model,
            work=WorkRequest.from_options(
                {
                    **{k: v for k, v in sent.items() if k not in PLAN_UNSET},
                    "explicit": tuple(sorted(self.model_fields_set - {"model"})),
                }
            ),
            task=sent["task"],
            quant=sent["quant"],
            scenario=self.scenario,
            gpus=tuple(self.gpu),
            vendors=tuple(self.vendor),
            form_factors=tuple(self.form_factor),
            min_memory_gib=self.min_memory,
            max_gpus=self.max_gpus,
            max_gpus_cap=PLAN_MAX_GPUS_TRAIN,
            max_gpus_cap_infer=PLAN_MAX_GPUS_INFER,
            exact_gpus=self.gpus,
            global_batch=sent["global_batch"],
            tokens=self.tokens,
            rps=self.rps,
            prompt=self.prompt,
            output=self.output,
            max_tpot_ms=self.max_tpot_ms,
            objective=self.objective,
            budget=self.budget,
            rent=self.rent,
            stack_ok=self.stack_ok,
        )


class CostRequest(BaseModel):
    """``suanli cost GPU ... --json``."""

    model_config = ConfigDict(extra="forbid")

    gpu: Name
    gpus: int = Field(8, ge=1, le=1_000_000)
    years: float = Field(3.0, gt=0, le=50, allow_inf_nan=False)
    utilisation: float = Field(1.0, ge=0, le=1, allow_inf_nan=False)
    price: Money | None = Field(None, description="Purchase price per GPU (in currency).")
    resale: float = Field(0.0, ge=0, le=1, allow_inf_nan=False)
    pue: float | str | None = Field(None, description="A number or an id (typical-colo, ...).")
    region: str | None = Field(None, max_length=40)
    usd_per_kwh: Money | None = None
    rent: Money | None = None
    spot: Money | None = None
    reserved: Money | None = None
    tokens_per_year: float = Field(0.0, ge=0, le=1e20, allow_inf_nan=False)
    input_tokens_per_year: float = Field(0.0, ge=0, le=1e20, allow_inf_nan=False)
    api: str | None = Field(None, max_length=100, description="API model for the price.")
    gpu_tokens_per_s: float | None = Field(
        None, gt=0, le=1e9, allow_inf_nan=False, description="Output tokens/s per GPU."
    )
    currency: Literal["usd", "cny"] = Field(
        "usd", description="Currency of price/rent/spot/reserved and of the answer."
    )
    usd_cny: float | None = Field(
        None, ge=1, le=20, allow_inf_nan=False, description="CNY per USD (default: dated rate)."
    )
    cloud: str | None = Field(None, max_length=60, description="Cloud provider name filter.")

    def to_request(self) -> cost_answers.CostRequest:
        """The application layer's cost request; a non-finite PUE is a 422 like other fields."""
        try:
            pue = cost_answers.parse_pue(self.pue)
        except ValueError as exc:
            raise ApiError(422, message_of(exc)) from None
        return cost_answers.CostRequest(
            gpu=self.gpu,
            gpus=self.gpus,
            years=self.years,
            utilisation=self.utilisation,
            price=self.price,
            resale=self.resale,
            pue=pue,
            region=self.region,
            usd_per_kwh=self.usd_per_kwh,
            rent=self.rent,
            spot=self.spot,
            reserved=self.reserved,
            tokens_per_year=self.tokens_per_year,
            input_tokens_per_year=self.input_tokens_per_year,
            api=self.api,
            gpu_tokens_per_s=self.gpu_tokens_per_s,
            currency=self.currency,
            usd_cny=self.usd_cny,
            cloud=self.cloud,
        )


class CardRequest(BaseModel):
    """``suanli card GPU --json``: what one card (or several) can run."""

    model_config = ConfigDict(extra="forbid")

    gpu: Name = Field(description="The card (catalog name), e.g. 4090.")
    gpus: int = Field(1, ge=1, le=1024)
    seq: int = Field(
        WORK_OPTIONS["seq"].default,
        ge=128,
        le=MAX_TOKENS,
        description="Training sequence length.",
    )
    contexts: list[Annotated[int, Field(ge=256, le=MAX_TOKENS)]] = Field(
        list(card_answers.CardRequest.contexts),
        min_length=1,
        max_length=6,
        description="Inference context lengths.",
    )
    models: list[Name] = Field(
        [], max_length=20, description="Models to show (none: the popular ones)."
    )
    rent: Money | None = Field(None, description="Rent per GPU-hour in USD (default: the data's).")
    price: Money | None = Field(None, description="Purchase price per GPU in USD.")

    def to_request(self) -> card_answers.CardRequest:
        """The application layer's card request."""
        return card_answers.CardRequest(
            gpu=self.gpu,
            gpus=self.gpus,
            seq=self.seq,
            contexts=tuple(self.contexts),
            presets=tuple(self.models) or card_answers.POPULAR,
            rent=self.rent,
            price=self.price,
        )
