"""The ``suanli serve`` web app: a page and JSON endpoints that mirror the CLI's ``--json``.

Every endpoint calls the same library functions as the matching command, so the numbers are the
CLI's numbers. Bad input gets a 4xx answer ``{"error": "one sentence"}``; a 500 means a bug.

Security choices (docs/web.md): the server binds loopback by default (``suanli serve``); every
request body is limited to :data:`BODY_LIMIT` bytes; a model is a preset name, a Hugging Face
id or an uploaded ``config.json`` (never a path on the server); an upload is parsed as JSON only,
never executed, and kept in memory (never written to disk by this module).

FastAPI and uvicorn (the ``[web]`` extra) are imported here and nowhere else.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import re
import threading
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable, MutableMapping, Sequence
from functools import lru_cache
from importlib import resources
from typing import Annotated, Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.responses import HTMLResponse, JSONResponse, Response
from fastapi.staticfiles import StaticFiles
from pydantic import AfterValidator, BaseModel, ConfigDict, Field
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException as StarletteHTTPException

from suanli import __version__
from suanli.catalog import GPU, find_gpu, load_catalog
from suanli.catalog.formats import get_format, weight_formats
from suanli.catalog.gpu import FORM_FACTORS, VENDORS
from suanli.catalog.query import sort_gpus
from suanli.estimate.workload import (
    ATTENTION,
    DTYPES,
    KERNELS,
    KV_DTYPES,
    OPTIMIZERS,
    PRECISIONS,
    RECOMPUTE,
    TASKS,
    InferWork,
    TrainWork,
)
from suanli.models.config import spec_from_config
from suanli.models.params import count_params
from suanli.models.presets import find_preset, presets
from suanli.models.resolve import LoadedModel
from suanli.plan.scenarios import SCENARIOS

log = logging.getLogger("suanli.web")

#: Largest request body accepted, in bytes (1 MiB): a config.json is a few kilobytes.
BODY_LIMIT = 1 << 20
#: Largest GPU count the plan search covers on the web (the CLI has no such cap).
PLAN_MAX_GPUS_TRAIN = 64
#: The serving search grows faster with the GPU count (formats x KV dtypes x TP x batch).
PLAN_MAX_GPUS_INFER = 8
#: Plan results kept (the page asks again for inputs it has seen; the search is deterministic).
PLAN_CACHE_SIZE = 128
#: Uploaded configs kept in memory, most recent first out last.
UPLOAD_SLOTS = 64
MAX_TOKENS = 1 << 22
DEFAULT_MODEL = "llama-3.1-8b"

_UPLOAD = re.compile(r"^upload:([0-9a-f]{16})$")
_HUB_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,95}/[A-Za-z0-9][A-Za-z0-9_.-]{0,95}$")
_CLI_FLAG = re.compile(r"(?<![\w-])--([a-z][a-z0-9-]*)")


# --- errors and JSON -------------------------------------------------------------------------


class ApiError(Exception):
    """An expected failure: the status code and the one sentence the user sees."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


def sentence(text: str, limit: int = 400) -> str:
    """One line, CLI flags spelled as the API's field names (``--max-gpus`` -> ``max_gpus``)."""
    text = " ".join(str(text).split())
    text = _CLI_FLAG.sub(lambda m: m.group(1).replace("-", "_"), text)
    if len(text) > limit:
        text = text[: limit - 1] + "…"
    return text or "bad request"


def clean(obj: Any) -> Any:
    """A JSON-ready copy: non-finite floats become null, numpy scalars plain numbers."""
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, (str, int, bool)) or obj is None:
        return obj
    if isinstance(obj, dict):
        return {str(k): clean(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [clean(v) for v in obj]
    item = getattr(obj, "item", None)
    if callable(item):  # numpy scalar
        return clean(item())
    return str(obj)


def render_json(content: Any) -> bytes:
    """Strict, compact JSON: no NaN/Infinity (which browsers' JSON.parse rejects)."""
    return json.dumps(
        clean(content), ensure_ascii=False, allow_nan=False, separators=(",", ":")
    ).encode("utf-8")


class CleanJSONResponse(JSONResponse):
    """The API's JSON responses (see :func:`render_json`)."""

    def render(self, content: Any) -> bytes:
        return render_json(content)


def error_response(status: int, message: str) -> CleanJSONResponse:
    """The one error shape of the API."""
    return CleanJSONResponse({"error": sentence(message)}, status_code=status)


def _validation_sentence(exc: RequestValidationError) -> str:
    errors = list(exc.errors())
    if not errors:
        return "the request is not valid"
    first = errors[0]
    kind = str(first.get("type", ""))
    loc = [str(p) for p in first.get("loc", ()) if p != "body"]
    field = ".".join(loc)
    msg = str(first.get("msg", "is not valid"))
    msg = msg.removeprefix("Value error, ").removeprefix("Assertion failed, ")
    msg = msg[:1].lower() + msg[1:]
    if kind == "json_invalid":
        text = "the request body is not valid JSON"
    elif kind == "missing" and field:
        text = f"missing field {field}"
    elif kind == "missing":
        text = "the request needs a JSON body"
    elif kind == "extra_forbidden":
        text = f"unknown field {field}; see /docs for the fields of this endpoint"
    elif kind in ("model_attributes_type", "dict_type") and not field:
        text = "the request body must be a JSON object"
    else:
        text = f"invalid {field or 'request'}: {msg}"
    if len(errors) > 1:
        text += f" (and {len(errors) - 1} more problem{'s' if len(errors) > 2 else ''})"
    return text


# --- the body limit --------------------------------------------------------------------------

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


def _too_large() -> str:
    return f"the request body is larger than the {BODY_LIMIT:,}-byte limit"


class BodyLimit:
    """Refuse bodies over ``limit`` bytes: by Content-Length up front, or while streaming."""

    def __init__(self, app: ASGIApp, limit: int = BODY_LIMIT) -> None:
        self.app = app
        self.limit = limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = dict(scope.get("headers") or []).get(b"content-length")
        if declared is not None:
            try:
                size = int(declared)
            except ValueError:
                size = -1
            if size < 0:
                await error_response(400, "the Content-Length header is not a number")(
                    scope, receive, send
                )
                return
            if size > self.limit:
                await error_response(413, _too_large())(scope, receive, send)
                return
        seen = 0

        async def limited() -> Message:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.limit:
                    # An HTTPException passes through FastAPI's body reading unchanged.
                    raise StarletteHTTPException(413, _too_large())
            return message

        await self.app(scope, limited, send)


# --- requests --------------------------------------------------------------------------------


def _one_of(allowed: Sequence[str]) -> AfterValidator:
    def check(value: str) -> str:
        if value not in allowed:
            raise ValueError(f"{value!r} is not one of {', '.join(allowed)}")
        return value

    return AfterValidator(check)


Task = Annotated[str, _one_of(TASKS)]
Dtype = Annotated[str, _one_of(DTYPES)]
Precision = Annotated[str, _one_of(PRECISIONS)]
Optimizer = Annotated[str, _one_of(OPTIMIZERS)]
Recompute = Annotated[str, _one_of(RECOMPUTE)]
Attention = Annotated[str, _one_of(ATTENTION)]
Kernels = Annotated[str, _one_of(KERNELS)]
KvDtype = Annotated[str, _one_of(KV_DTYPES)]
Vendor = Annotated[str, _one_of(VENDORS)]
FormFactor = Annotated[str, _one_of(FORM_FACTORS)]
Scenario = Annotated[str, _one_of(tuple(SCENARIOS))]
Objective = Annotated[str, _one_of(("time", "cost", "cost-per-token"))]
Name = Annotated[str, Field(min_length=1, max_length=100)]
Money = Annotated[float, Field(ge=0, le=1e12, allow_inf_nan=False)]
Tokens = Annotated[int, Field(ge=1, le=MAX_TOKENS)]
Count = Annotated[int, Field(ge=1, le=65536)]


class _Shape(BaseModel):
    """What the work is (the CLI's workload-shape options), without its layout."""

    model_config = ConfigDict(extra="forbid")

    model: str = Field(
        DEFAULT_MODEL,
        max_length=200,
        description="A preset name (GET /api/presets), a Hugging Face id org/name, or the "
        "'upload:...' id POST /api/config returned. Paths are not accepted.",
    )
    seq: Tokens = Field(2048, description="Training sequence length in tokens.")
    context: Tokens = Field(4096, description="Inference: tokens per sequence in the KV cache.")
    dtype: Dtype = "bf16"
    precision: Precision = "mixed"
    optimizer: Optimizer = "adamw"
    attention: Attention = "sdpa"
    kernels: Kernels = "eager"
    lora_rank: int = Field(16, ge=1, le=4096)
    lora_targets: str = Field("q,k,v,o", max_length=100)
    dropout: float | None = Field(None, ge=0, lt=1, allow_inf_nan=False)
    kv_dtype: KvDtype = "bf16"
    cuda_context: float | None = Field(None, ge=0, le=1024, allow_inf_nan=False)
    fragmentation: float | None = Field(None, ge=0, lt=1, allow_inf_nan=False)
    nccl: float | None = Field(None, ge=0, le=1024, allow_inf_nan=False)


class Workload(_Shape):
    """The CLI's workload options (``suanli mem``/``perf``): the work and its layout."""

    task: Task = "lora"
    quant: str = Field("bf16", min_length=1, max_length=40, description="Weight format.")
    batch: Count | None = None
    global_batch: Count | None = None
    grad_accum: Count = 1
    recompute: Recompute = "none"
    zero: int = Field(0, ge=0, le=3)
    tp: int = Field(1, ge=1, le=1024)
    pp: int = Field(1, ge=1, le=1024)
    vpp: int = Field(1, ge=1, le=64)
    dp: Count | None = None
    ep: int = Field(1, ge=1, le=1024)
    sp: bool = False
    gpus: Count | None = Field(None, description="GPUs in the job (as --gpus).")
    offload_optimizer: bool = False
    prefill_chunk: Tokens | None = None
    gpu_memory_utilization: float | None = Field(None, gt=0, le=1, allow_inf_nan=False)


class MemoryRequest(Workload):
    """``suanli mem MODEL ... --gpu G --json``, and the fit on each of ``cards``."""

    gpu: Name | None = Field(None, description="Check the fit on this GPU (the doc's 'fit').")
    cards: list[Name] = Field(
        default_factory=list,
        max_length=16,
        description="More GPUs to compare: one entry each in 'fits' (after 'gpu').",
    )


class PerfRequest(Workload):
    """``suanli perf MODEL ... --gpu G --json``."""

    gpu: Name = Field(description="The GPU (catalog name).")
    gpus_per_node: int | None = Field(None, ge=1, le=1024)
    inter_node: str | None = Field(None, max_length=40)
    tokens: float | None = Field(None, ge=1, le=1e18, allow_inf_nan=False)
    prompt: Tokens = 1024
    output: Tokens = 256
    pue: float = Field(1.5, ge=1, le=10, allow_inf_nan=False)
    price: Money | None = None


class PlanRequest(_Shape):
    """``suanli plan MODEL ... --json``; the search is capped for a responsive page."""

    task: Task | None = Field(None, description="Default: the scenario's, else lora.")
    quant: str | None = Field(
        None, min_length=1, max_length=40, description="Inference: fix the weight format."
    )
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
    global_batch: Count | None = None
    tokens: float = Field(1e8, ge=1, le=1e18, allow_inf_nan=False)
    rps: float | None = Field(None, gt=0, le=1e9, allow_inf_nan=False)
    output: Tokens = 256
    max_tpot_ms: float | None = Field(None, gt=0, le=1e6, allow_inf_nan=False)
    objective: Objective | None = None
    budget: Money | None = None


class CostRequest(BaseModel):
    """``suanli cost GPU ... --json``."""

    model_config = ConfigDict(extra="forbid")

    gpu: Name
    gpus: int = Field(8, ge=1, le=1_000_000)
    years: float = Field(3.0, gt=0, le=50, allow_inf_nan=False)
    utilisation: float = Field(1.0, ge=0, le=1, allow_inf_nan=False)
    price: Money | None = Field(None, description="Purchase price per GPU (USD).")
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


# --- models: presets, hub ids and uploads, never paths ----------------------------------------


def _path_like(name: str) -> bool:
    return (
        name.startswith(("/", "\\", "~", "."))
        or any(c in name for c in ("\\", "\x00", ":"))
        or ".." in name
        or name.count("/") > 1
        or name.lower().endswith(".json")
        or bool(re.match(r"^[A-Za-z]:", name))
    )


def _hub_loader(repo_id: str) -> LoadedModel:
    """Read a hub id the way the CLI does (config.json only; remote code is never run)."""
    from suanli.models.resolve import _from_hub

    return _from_hub(repo_id)


class Models:
    """Resolves the web API's model strings; holds uploaded configs in memory."""

    def __init__(
        self, allow_hub: bool = True, hub_loader: Callable[[str], LoadedModel] | None = None
    ) -> None:
        self.allow_hub = allow_hub
        self.hub_loader = hub_loader or _hub_loader
        self._uploads: OrderedDict[str, LoadedModel] = OrderedDict()
        self._lock = threading.Lock()

    def resolve(self, name: str) -> LoadedModel:
        """A preset, an uploaded config or a hub id; anything path-like is refused."""
        name = name.strip()
        if not name:
            raise ApiError(
                400,
                "give a model: a preset name, a Hugging Face id org/name or an uploaded "
                "config.json",
            )
        upload = _UPLOAD.match(name)
        if upload:
            with self._lock:
                loaded = self._uploads.get(upload.group(1))
                if loaded is not None:
                    self._uploads.move_to_end(upload.group(1))
            if loaded is None:
                raise ApiError(404, "this uploaded config is no longer on the server; upload again")
            return loaded
        if _path_like(name):
            raise ApiError(
                400,
                f"model {name[:80]!r} looks like a path; the web API takes a preset name, a "
                "Hugging Face id org/name or an uploaded config.json, never a server path",
            )
        preset = find_preset(name)
        if preset is not None:
            spec = spec_from_config(preset.config(), preset.name)
            return LoadedModel(spec, count_params(spec), "preset", preset.name, preset=preset)
        if _HUB_ID.match(name):
            if not self.allow_hub:
                raise ApiError(
                    400,
                    f"{name!r} is not a preset and this server does not read the Hugging Face "
                    "hub; upload its config.json instead",
                )
            return self.hub_loader(name)
        names = ", ".join(sorted(presets())[:6])
        raise ApiError(
            400,
            f"unknown model {name[:80]!r}: not a preset (e.g. {names}; GET /api/presets lists "
            "all), a Hugging Face id org/name or an uploaded config",
        )

    def add(self, raw: bytes, filename: str | None) -> tuple[str, LoadedModel]:
        """Parse an uploaded config.json (JSON only) and keep its model in memory."""
        if not raw.strip():
            raise ApiError(400, "the uploaded config.json is empty")
        try:
            text = raw.decode("utf-8-sig")
        except UnicodeDecodeError:
            raise ApiError(400, "the uploaded config.json is not UTF-8 text") from None

        def no_constants(token: str) -> Any:
            raise ValueError(f"{token} is not a number JSON allows")

        try:
            cfg = json.loads(text, parse_constant=no_constants)
        except json.JSONDecodeError as exc:
            raise ApiError(
                400, f"the uploaded config.json is not valid JSON (line {exc.lineno}: {exc.msg})"
            ) from None
        except RecursionError:
            raise ApiError(400, "the uploaded config.json is nested too deeply") from None
        except ValueError as exc:
            why = "a number has too many digits" if "digits" in str(exc) else str(exc)
            raise ApiError(400, f"the uploaded config.json is not valid JSON ({why})") from None
        if not isinstance(cfg, dict):
            raise ApiError(400, "the uploaded config.json must hold a JSON object")
        label = re.sub(r"[^A-Za-z0-9_.-]+", "-", (filename or "config.json").rsplit("/")[-1])
        label = label.strip("-")[:60] or "config.json"
        digest = hashlib.sha256(
            json.dumps(cfg, sort_keys=True, separators=(",", ":")).encode("utf-8")
        ).hexdigest()[:16]
        spec = spec_from_config(cfg, f"upload:{label}")
        loaded = LoadedModel(spec, count_params(spec), "upload", f"upload:{digest}")
        _check_sizes(loaded)
        # A config can pass the reader and still describe nothing the estimators can size:
        # find out now, and say so, rather than fail on the first estimate.
        from suanli.estimate.memory import inference_memory, training_memory

        try:
            training_memory(spec, TrainWork(task="lora", seq=16))
            inference_memory(spec, InferWork(context=16))
        except ValueError:
            raise
        except Exception as exc:  # arithmetic on nonsense sizes: a bad config, not a bug
            raise ApiError(
                400,
                f"the uploaded config.json describes a model suanli cannot size "
                f"({type(exc).__name__}); check its sizes and layer counts",
            ) from None
        with self._lock:
            self._uploads[digest] = loaded
            self._uploads.move_to_end(digest)
            while len(self._uploads) > UPLOAD_SLOTS:
                self._uploads.popitem(last=False)
        return f"upload:{digest}", loaded


#: Bounds on an uploaded model, far above any real one, so that the estimators' integer
#: arithmetic (numpy int64 in the plan search) cannot overflow on a crafted config.
UPLOAD_BOUNDS = {
    "hidden_size": 1 << 20,
    "num_hidden_layers": 10_000,
    "vocab_size": 1 << 24,
    "num_attention_heads": 1024,
    "intermediate_size": 1 << 22,
    "num_experts": 1 << 16,
}
UPLOAD_MAX_PARAMS = 10**14


def _check_sizes(loaded: LoadedModel) -> None:
    spec = loaded.spec
    sizes = {
        "hidden_size": spec.hidden_size,
        "num_hidden_layers": spec.num_layers,
        "vocab_size": spec.vocab_size,
        "num_attention_heads": spec.attention.num_heads,
        "intermediate_size": max(
            [m.intermediate_size for m in (spec.mlp, spec.moe.expert if spec.moe else None) if m]
            or [0]
        ),
        "num_experts": spec.moe.num_experts if spec.moe else 0,
    }
    for key, value in sizes.items():
        if value > UPLOAD_BOUNDS[key]:
            raise ApiError(
                400,
                f"the uploaded config.json has {key} {value:,}, above the {UPLOAD_BOUNDS[key]:,} "
                "this page accepts; check the file",
            )
    if loaded.params.total > UPLOAD_MAX_PARAMS:
        raise ApiError(
            400,
            f"the uploaded config.json describes {loaded.params.total:.3g} parameters, above the "
            f"{UPLOAD_MAX_PARAMS:.0e} this page accepts; check its sizes",
        )


# --- the documents ---------------------------------------------------------------------------

_LAYOUT_DEFAULTS: dict[str, Any] = {
    "batch": None,
    "global_batch": None,
    "grad_accum": 1,
    "zero": 0,
    "tp": 1,
    "pp": 1,
    "vpp": 1,
    "dp": None,
    "ep": 1,
    "sp": False,
    "gpus": None,
    "offload_optimizer": False,
    "recompute": "none",
    "prefill_chunk": None,
    "gpu_memory_utilization": None,
}
_SHAPE_KEYS = tuple(k for k in _Shape.model_fields if k != "model")


def _opts(req: Workload) -> dict[str, Any]:
    """The request as the CLI's option dict (same names, same defaults)."""
    opts = req.model_dump(exclude={"model"})
    return {k: opts[k] for k in (*_SHAPE_KEYS, "task", "quant", *_LAYOUT_DEFAULTS)}


def _catalog() -> list[GPU]:
    return load_catalog(None)


def memory_doc(req: MemoryRequest, models: Models) -> dict[str, Any]:
    """The ``suanli mem --json`` document, with ``fits`` for every card asked about."""
    from suanli.cli.mem import _fit_dict
    from suanli.cli.options import work_from_options
    from suanli.estimate.memory import (
        fit_inference,
        fit_training,
        inference_memory,
        training_memory,
    )

    work = work_from_options(_opts(req))
    spec = models.resolve(req.model).spec
    catalog = _catalog()
    names = ([req.gpu] if req.gpu else []) + [c for c in req.cards if c != req.gpu]
    cards: list[GPU] = []
    for name in names:
        gpu = find_gpu(name, catalog)
        if gpu.id not in [c.id for c in cards]:
            cards.append(gpu)
    if isinstance(work, InferWork):
        result = inference_memory(spec, work)
        fits = [fit_inference(spec, work, g.id, g.memory_bytes) for g in cards]
    else:
        result = training_memory(spec, work)
        fits = [fit_training(spec, work, g.id, g.memory_bytes) for g in cards]
    doc: dict[str, Any] = {"model": req.model, "task": req.task, **result.as_dict()}
    if req.gpu:
        doc["fit"] = _fit_dict(fits[0])
    doc["fits"] = [
        {**_fit_dict(f), "name": g.name, "memory_bytes": g.memory_bytes}
        for f, g in zip(fits, cards, strict=True)
    ]
    return doc


def _roofline(device: Any, points: list[dict[str, Any]], note: str) -> dict[str, Any]:
    return {
        "gpu": device.name,
        "peak_flops": device.peak_flops,
        "achievable_flops": device.matmul_flops,
        "peak_bandwidth_bytes_per_s": device.memory_bytes_per_s,
        "achievable_bandwidth_bytes_per_s": device.bandwidth,
        "ridge_flops_per_byte": device.matmul_flops / device.bandwidth,
        "points": points,
        "note": note,
        "source": device.efficiency_source,
    }


def _point(label: str, flops: float, nbytes: float, seconds: float) -> dict[str, Any]:
    return {
        "label": label,
        "flops": flops,
        "bytes": nbytes,
        "seconds": seconds,
        "flops_per_byte": flops / nbytes if nbytes else None,
        "flops_per_s": flops / seconds if seconds else None,
    }


def perf_doc(req: PerfRequest, models: Models) -> dict[str, Any]:
    """The ``suanli perf --json`` document, with a roofline and the formulas behind it."""
    from suanli.cli.options import work_from_options
    from suanli.cli.perf import infer_report, train_report
    from suanli.estimate.perf import inference_perf, training_perf
    from suanli.hardware import device_for

    opts = _opts(req)
    if req.task == "infer":
        opts["context"] = req.prompt + req.output
    work = work_from_options(opts)
    spec = models.resolve(req.model).spec
    gpu = find_gpu(req.gpu, _catalog())
    if isinstance(work, TrainWork):
        dtype = work.dtype
    else:
        dtype = "fp8" if get_format(work.weight_format).compute_dtype == "fp8" else "bf16"
    device = device_for(gpu, dtype, gpus_per_node=req.gpus_per_node, inter_node=req.inter_node)
    if isinstance(work, InferWork):
        doc = infer_report(spec, work, device, req.prompt, req.output)
        r = inference_perf(spec, work, device, req.prompt, req.output)
        points = [
            _point(
                "prefill",
                r.prefill_flops / work.tp,
                r.breakdown_s["prefill_memory"] * device.bandwidth,
                r.ttft_s,
            ),
            _point(
                f"decode, batch {work.batch}",
                r.decode_flops_per_token * work.batch / work.tp,
                r.decode_bytes_per_step,
                r.tpot_s,
            ),
        ]
        doc["roofline"] = _roofline(
            device,
            points,
            "per GPU: prefill reads the weights once for the whole prompt; a decode step reads "
            "the weights and the KV cache for one token per sequence",
        )
        doc["explain"] = {
            "ttft_s": "prefill: max(prompt FLOPs / (tp x achievable FLOP/s), weight bytes / "
            "achievable bandwidth) + tensor-parallel all-reduces",
            "tpot_s": "one decode step: max(FLOPs / achievable FLOP/s, (weights + KV cache) "
            "bytes / achievable bandwidth) + tensor-parallel all-reduces",
            "tokens_per_s": "batch / TPOT",
            "bound": "decode is memory-bound while the bytes a step reads take longer than its "
            "FLOPs",
            "compute_bound_batch": "the batch from which a decode step's FLOPs take longer "
            "than reading the weights and KV cache",
        }
    else:
        doc = train_report(spec, work, device, req.tokens, req.pue, req.price)
        t = training_perf(spec, work, device)
        per_gpu = t.hardware_flops_per_step / t.gpus
        doc["roofline"] = _roofline(
            device,
            [
                _point(
                    "training step",
                    per_gpu,
                    t.breakdown_s["memory"] * device.bandwidth,
                    t.step_time_s,
                )
            ],
            "per GPU and optimizer step: hardware FLOPs (recomputation counted) over the bytes "
            "the memory-bound ops move; the point sits below the roof by the time spent in "
            "communication and the pipeline bubble",
        )
        doc["explain"] = {
            "step_time_s": "compute + memory + exposed communication + pipeline bubble, per "
            "optimizer step (roofline per op class; docs/speed.md)",
            "tokens_per_s": "tokens per step (batch x seq x grad_accum x dp) / step time",
            "mfu": "model FLOPs per step / (step time x GPUs x dense peak FLOP/s) (PaLM, "
            "appendix B)",
            "hfu": "as MFU, with recomputed FLOPs counted",
            "bound": "the largest share of the step: compute, memory or communication",
            "time_to_train_s": "tokens / tokens per second",
            "cost_usd": "GPU-hours x USD per GPU-hour (the catalog's cloud snapshot unless "
            "price is given)",
            "energy_kwh": "GPU-hours x TDP x PUE",
        }
    doc = {"model": req.model, "task": req.task, **doc}
    return doc


class PlanCache:
    """A small thread-safe LRU of rendered plan documents (JSON bytes) by request."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._docs: OrderedDict[str, bytes] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: str) -> bytes | None:
        with self._lock:
            doc = self._docs.get(key)
            if doc is not None:
                self._docs.move_to_end(key)
            return doc

    def put(self, key: str, doc: bytes) -> None:
        if self.size <= 0:
            return
        with self._lock:
            self._docs[key] = doc
            self._docs.move_to_end(key)
            while len(self._docs) > self.size:
                self._docs.popitem(last=False)


def plan_doc(req: PlanRequest, models: Models) -> dict[str, Any]:
    """The ``suanli plan --json`` document, the GPU count capped for a responsive page."""
    from suanli.cli.options import work_from_options
    from suanli.cli.plan import _candidates, _rendering_rows, _serve_plan, _train_plan

    chosen = SCENARIOS.get(req.scenario) if req.scenario else None
    task = req.task or (chosen.task if chosen else "lora")
    objective = req.objective or (
        chosen.objective if chosen else ("cost-per-token" if task == "infer" else "time")
    )
    cap = PLAN_MAX_GPUS_INFER if task == "infer" else PLAN_MAX_GPUS_TRAIN
    wanted = req.max_gpus or (chosen.max_gpus if chosen else 8)
    max_gpus = min(wanted, cap)
    forms = tuple(req.form_factor) or (chosen.form_factors if chosen else ())
    gpus = _candidates(_catalog(), tuple(req.gpu), tuple(req.vendor), forms, req.min_memory)
    if not gpus:
        raise ApiError(400, "no GPU matches the filters; loosen vendor, form_factor or min_memory")
    if req.scenario == "rendering-video":
        return {
            "scenario": req.scenario,
            "reasoning": chosen.reasoning if chosen else "",
            "rows": _rendering_rows(gpus),
        }
    spec = models.resolve(req.model).spec
    opts = {k: getattr(req, k) for k in _SHAPE_KEYS}
    opts.update(_LAYOUT_DEFAULTS)
    opts["task"] = task
    opts["quant"] = req.quant or "bf16"
    work = work_from_options(opts)
    if isinstance(work, InferWork):
        rows = _serve_plan(
            spec,
            work,
            gpus,
            max_gpus,
            req.rps,
            req.output,
            objective,
            req.max_tpot_ms,
            req.quant is not None,
        )
    else:
        rows = _train_plan(
            spec,
            work,
            gpus,
            max_gpus,
            req.gpus,
            req.global_batch,
            req.tokens,
            objective,
            req.budget,
        )
    doc: dict[str, Any] = {
        "model": req.model,
        "task": task,
        "objective": objective,
        "max_gpus": max_gpus,
        "scenario": req.scenario,
        "reasoning": chosen.reasoning if chosen else "",
        "tokens": req.tokens if not isinstance(work, InferWork) else None,
        "rows": rows,
    }
    if wanted > max_gpus:
        doc["capped"] = (
            f"the web page searches up to {cap} GPUs for {task}; run 'suanli plan' with "
            f"--max-gpus {wanted} for the full search"
        )
    return doc


def cost_doc(req: CostRequest) -> dict[str, Any]:
    """The ``suanli cost --json`` document, with the cumulative curves month by month and the
    time at which renting has cost as much as buying."""
    from suanli.plan.cost import cost_report

    gpu = find_gpu(req.gpu, _catalog())
    pue: float | str | None = req.pue
    if isinstance(pue, str):
        try:
            pue = float(pue)
        except ValueError:
            pue = req.pue.strip()[:40] if isinstance(req.pue, str) else None
    if isinstance(pue, float) and not math.isfinite(pue):
        raise ApiError(422, "invalid pue: give a finite number or an id such as typical-colo")
    doc = cost_report(
        gpu,
        gpus=req.gpus,
        years=req.years,
        utilisation=req.utilisation,
        price_usd=req.price,
        resale_fraction=req.resale,
        pue=pue,
        region=req.region,
        usd_per_kwh=req.usd_per_kwh,
        rent_usd_per_gpu_hour=req.rent,
        spot_usd_per_gpu_hour=req.spot,
        reserved_usd_per_gpu_hour=req.reserved,
        output_tokens_per_year=req.tokens_per_year,
        input_tokens_per_year=req.input_tokens_per_year,
        api=req.api,
    )
    totals = doc["totals"]
    years = req.years
    capex = totals["capex_usd"]
    opex = (totals["electricity_usd"] + totals["facility_usd"]) / years
    per_year = {
        key: (totals[f"{key}_usd"] / years if totals.get(f"{key}_usd") is not None else None)
        for key in ("rent", "spot", "reserved", "api")
    }
    steps = max(12, min(600, math.ceil(years * 12)))
    curve = []
    for i in range(steps + 1):
        t = years * i / steps
        point: dict[str, Any] = {
            "year": t,
            "buy_cumulative_usd": capex + opex * t - (totals["resale_usd"] if i == steps else 0),
        }
        for key, rate in per_year.items():
            point[f"{key}_cumulative_usd"] = rate * t if rate is not None else None
        curve.append(point)
    rent = per_year["rent"]
    crossing = capex / (rent - opex) if rent is not None and rent > opex else None
    doc["curve"] = curve
    doc["break_even_years"] = crossing
    doc["explain"] = {
        "buy_cumulative_usd": "GPUs x (price + server share) + years x (electricity + facility)"
        ", less the resale value at the end",
        "rent_cumulative_usd": "GPUs x busy hours per year x years x USD per GPU-hour",
        "break_even_years": "purchase / (rent per year - running cost per year): when renting "
        "has cost as much as buying (resale not counted)",
        "break_even_utilisation": "the utilisation above which buying is cheaper over the "
        "whole period",
    }
    return doc


def live_doc(provs: list[Any]) -> dict[str, Any]:
    """``suanli top --json``: GPU samples, or the CPU when there is no GPU."""
    from suanli.live.devices import gpu_samples
    from suanli.live.monitor import flags

    samples = gpu_samples(provs)
    has_gpus = bool(samples)
    note = ""
    if not samples:
        cpu = next((p for p in provs if p.name == "cpu"), None)
        try:
            samples = cpu.sample() if cpu is not None else []
        except ImportError:
            samples = []
            note = "no GPU found, and the CPU sample needs psutil: pip install 'suanli[live]'"
        else:
            note = "no GPU found on this machine; showing the CPU"
    return {
        "time": time.time(),
        "gpus": has_gpus,
        "note": note,
        "samples": [
            {
                **s.__dict__,
                "processes": [p.__dict__ for p in s.processes],
                "flags": [f.__dict__ for f in flags(s)],
            }
            for s in samples
        ],
    }


# --- the app ---------------------------------------------------------------------------------


def _static_dir() -> Any:
    return resources.files("suanli.web") / "static"


def _multipart_available() -> bool:
    from importlib.util import find_spec

    return any(find_spec(name) is not None for name in ("python_multipart", "multipart"))


def create_app(
    *,
    allow_hub: bool = True,
    hub_loader: Callable[[str], LoadedModel] | None = None,
    plan_cache_size: int = PLAN_CACHE_SIZE,
) -> FastAPI:
    """The web app: the page at ``/``, the JSON API under ``/api``, OpenAPI docs at ``/docs``.

    ``allow_hub=False`` refuses Hugging Face ids (only presets and uploads); ``hub_loader``
    replaces the hub reader (tests); ``plan_cache_size=0`` turns the plan cache off.
    """
    app = FastAPI(
        title="suanli",
        version=__version__,
        summary="Will it fit, how fast, which GPU, what cost: the suanli CLI's --json as an API.",
        description="Every endpoint mirrors a `suanli` command's `--json` document (numbers in "
        "base units: bytes, FLOP/s, seconds, USD). Bad input gets a 4xx answer "
        '`{"error": "one sentence"}`.',
        docs_url=None,
        redoc_url=None,
        default_response_class=CleanJSONResponse,
    )
    models = Models(allow_hub=allow_hub, hub_loader=hub_loader)
    cache = PlanCache(plan_cache_size)
    providers: list[Any] = []
    providers_lock = threading.Lock()
    multipart_ok = _multipart_available()
    app.state.models = models
    app.state.plan_cache = cache

    async def api_error(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, ApiError)
        return error_response(exc.status, exc.message)

    async def value_error(request: Request, exc: Exception) -> Response:
        return error_response(400, str(exc))

    async def invalid(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, RequestValidationError)
        return error_response(422, _validation_sentence(exc))

    async def http_error(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, StarletteHTTPException)
        detail = exc.detail if isinstance(exc.detail, str) else ""
        if exc.status_code == 404 and detail in ("", "Not Found"):
            detail = f"no such endpoint {request.url.path[:80]}; see /docs"
        elif exc.status_code == 405:
            detail = f"{request.method} is not allowed on {request.url.path[:80]}; see /docs"
        return error_response(exc.status_code, detail or "bad request")

    async def overflow(request: Request, exc: Exception) -> Response:
        return error_response(
            400, "the sizes given are too large to estimate (arithmetic overflow); use smaller ones"
        )

    async def bug(request: Request, exc: Exception) -> Response:
        log.error("internal error on %s", request.url.path, exc_info=exc)
        return error_response(
            500, f"internal error ({type(exc).__name__}): a bug in suanli, please report it"
        )

    app.add_exception_handler(ApiError, api_error)
    app.add_exception_handler(ValueError, value_error)
    app.add_exception_handler(OverflowError, overflow)
    app.add_exception_handler(RequestValidationError, invalid)
    app.add_exception_handler(StarletteHTTPException, http_error)
    app.add_exception_handler(Exception, bug)
    app.add_middleware(BodyLimit)

    static = StaticFiles(packages=[("suanli.web", "static")])
    app.mount("/static", static, name="static")

    @app.get("/", include_in_schema=False)
    def index() -> HTMLResponse:
        return HTMLResponse((_static_dir() / "index.html").read_text("utf-8"))

    @app.get("/docs", include_in_schema=False)
    def docs() -> HTMLResponse:
        return get_swagger_ui_html(
            openapi_url="/openapi.json",
            title="suanli API",
            swagger_js_url="/static/vendor/swagger-ui-bundle.js",
            swagger_css_url="/static/vendor/swagger-ui.css",
            swagger_favicon_url="/static/favicon.svg",
        )

    @app.get("/api/presets", summary="The bundled model presets (suanli models --json)")
    def api_presets() -> list[dict[str, Any]]:
        return [dict(row) for row in _preset_rows()]

    @app.get("/api/gpus", summary="The GPU catalog, fastest bf16 first (suanli gpus --json)")
    def api_gpus() -> list[dict[str, Any]]:
        return [g.as_dict() for g in sort_gpus(_catalog(), "bf16", descending=True)]

    @app.get("/api/options", summary="The choices the form offers, and the web limits")
    def api_options() -> dict[str, Any]:
        return {
            "tasks": list(TASKS),
            "dtypes": list(DTYPES),
            "precisions": list(PRECISIONS),
            "optimizers": list(OPTIMIZERS),
            "recompute": list(RECOMPUTE),
            "attention": list(ATTENTION),
            "kv_dtypes": list(KV_DTYPES),
            "quant": [
                {"id": f.id, "name": f.name, "bits_per_weight": f.bits_per_weight}
                for f in weight_formats().values()
            ],
            "scenarios": {k: s.reasoning for k, s in SCENARIOS.items()},
            "vendors": list(VENDORS),
            "form_factors": list(FORM_FACTORS),
            "limits": {
                "body_bytes": BODY_LIMIT,
                "plan_max_gpus_train": PLAN_MAX_GPUS_TRAIN,
                "plan_max_gpus_infer": PLAN_MAX_GPUS_INFER,
            },
            "hub": allow_hub,
        }

    @app.post("/api/memory", summary="Memory per GPU and the fit (suanli mem --json)")
    def api_memory(req: MemoryRequest) -> dict[str, Any]:
        return memory_doc(req, models)

    @app.post("/api/perf", summary="Speed, the bound and a roofline (suanli perf --json)")
    def api_perf(req: PerfRequest) -> dict[str, Any]:
        return perf_doc(req, models)

    @app.post(
        "/api/plan",
        summary="GPUs ranked with their best layout (suanli plan --json)",
        response_model=dict[str, Any],
    )
    async def api_plan(req: PlanRequest) -> Response:
        # A hit is answered on the event loop; a search runs in the thread pool.
        key = req.model_dump_json()
        body = cache.get(key)
        if body is None:
            doc = await run_in_threadpool(plan_doc, req, models)
            body = render_json(doc)
            cache.put(key, body)
        return Response(body, media_type="application/json")

    @app.post("/api/cost", summary="Buy vs rent vs API over the years (suanli cost --json)")
    def api_cost(req: CostRequest) -> dict[str, Any]:
        return cost_doc(req)

    @app.post(
        "/api/config",
        summary="Upload a config.json (multipart field 'file', or a JSON body)",
        description="Parsed as JSON only, never executed, kept in memory. Returns the model "
        "summary (suanli model --json) and the 'model' id to use in the other endpoints.",
    )
    async def api_config(request: Request) -> dict[str, Any]:
        ctype = request.headers.get("content-type", "").lower()
        filename: str | None = None
        if ctype.startswith("multipart/form-data"):
            if not multipart_ok:
                raise ApiError(
                    415, "multipart uploads need python-multipart; send the JSON as the body"
                )
            form = await request.form(max_files=1, max_fields=8, max_part_size=BODY_LIMIT)
            try:
                item = form.get("file")
                if item is None or isinstance(item, str):
                    raise ApiError(400, "send the config as a multipart file field named 'file'")
                filename = item.filename
                raw = await item.read(BODY_LIMIT + 1)
            finally:
                await form.close()
        elif ctype.startswith("application/json"):
            raw = await request.body()
        else:
            raise ApiError(
                415,
                "upload config.json as multipart/form-data (field 'file') or as an "
                "application/json body",
            )
        if len(raw) > BODY_LIMIT:
            raise ApiError(413, _too_large())
        from suanli.cli.model import model_summary

        model_id, loaded = models.add(raw, filename)
        return {**model_summary(loaded), "model": model_id, "filename": filename}

    @app.get("/api/live", summary="Live GPU readings (suanli top --json), else the CPU")
    def api_live() -> dict[str, Any]:
        with providers_lock:
            if not providers:
                from suanli.live.devices import providers as find_providers

                providers.extend(find_providers())
        return live_doc(providers)

    return app


@lru_cache(maxsize=1)
def _preset_rows() -> tuple[dict[str, Any], ...]:
    """``suanli models --json``, with whether an API price is known for each."""
    from suanli.plan.cost import cost_data

    priced = {r.id for r in cost_data().api}
    out = []
    for p in presets().values():
        counts = count_params(spec_from_config(p.config(), p.name))
        out.append(
            {
                "name": p.name,
                "family": p.family,
                "hf_id": p.hf_id,
                "params_total": counts.total,
                "params_active": counts.active,
                "published_params_total": p.published_params_total,
                "api_priced": p.name in priced,
            }
        )
    return tuple(out)
