"""The ``suanli serve`` web app: a page and JSON endpoints that serve the same answers as the CLI.

Routes only: each endpoint turns its request body (:mod:`suanli.web.schemas`) into the application
layer's request, calls the answer function (:mod:`suanli.answers`) and returns ``to_json()``, so the
numbers are the CLI's numbers. Bad input gets a 4xx answer ``{"error": "one sentence"}``; a 500
means a bug (:mod:`suanli.web.security`).

Security choices (docs/web.md): the server binds loopback by default (``suanli serve``); every
request body is limited to :data:`BODY_LIMIT` bytes; a model is a preset name, a Hugging Face
id or an uploaded ``config.json`` (never a path on the server, :mod:`suanli.web.models`); an upload
is parsed as JSON only, never executed, and kept in memory.

FastAPI and uvicorn (the ``[web]`` extra) are imported in this package and nowhere else.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import threading
from collections import OrderedDict
from collections.abc import AsyncIterator, Callable
from importlib import resources
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.openapi.utils import get_openapi
from fastapi.responses import HTMLResponse, Response
from fastapi.staticfiles import StaticFiles
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.requests import ClientDisconnect

from suanli import __version__
from suanli.answers.card import card
from suanli.answers.cost import cost
from suanli.answers.frameworks import framework_list
from suanli.answers.gpus import GpuListRequest, gpu_list
from suanli.answers.image import generate_image
from suanli.answers.live import live_report
from suanli.answers.memory import memory
from suanli.answers.model import model_info, preset_list
from suanli.answers.options import WORK_OPTIONS
from suanli.answers.perf import perf
from suanli.answers.plan import plan
from suanli.answers.serving_load import OUTPUT_TOKENS, PROMPT_TOKENS
from suanli.catalog.formats import weight_formats
from suanli.catalog.gpu import FORM_FACTORS, VENDORS
from suanli.estimate.workload import (
    ATTENTION,
    DTYPES,
    KV_DTYPES,
    OPTIMIZERS,
    PRECISIONS,
    TASKS,
)
from suanli.i18n import LANGS, N_, message_of, normalize, translate_to
from suanli.models.presets import DEFAULT_MODEL
from suanli.models.resolve import LoadedModel
from suanli.plan.scenarios import SCENARIOS
from suanli.web.models import Models
from suanli.web.page_messages import PAGE_MESSAGES, PAGE_WORDS, SCRIPT_MESSAGES
from suanli.web.protocol import quiet_accept_errors
from suanli.web.responses import (
    BODY_ERRORS,
    GET_ERRORS,
    FrameworkOption,
    MessagesAnswer,
    OptionsAnswer,
    QuantOption,
    WebLimits,
    documented,
    openapi_document,
)
from suanli.web.schemas import (
    PLAN_MAX_GPUS_INFER,
    PLAN_MAX_GPUS_TRAIN,
    CardRequest,
    CostRequest,
    ImageRequest,
    MemoryRequest,
    PerfRequest,
    PlanRequest,
)
from suanli.web.security import (
    ALLOW_HOSTS_ENV,
    ANSWER_LANG,
    BODY_LIMIT,
    LOOPBACK_HOSTS,
    AnswerLanguage,
    ApiError,
    BodyLimit,
    CleanJSONResponse,
    HostAllowList,
    clean,
    error_response,
    render_json,
    sentence,
    too_large,
    validation_sentence,
)
from suanli.web.slots import SEARCH_SLOTS, WorkerSlots
from suanli.web.workers import plan_body

__all__ = [
    "BODY_LIMIT",
    "PLAN_MAX_GPUS_INFER",
    "PLAN_MAX_GPUS_TRAIN",
    "ApiError",
    "Models",
    "PlanCache",
    "PlanRequest",
    "clean",
    "create_app",
    "sentence",
]

log = logging.getLogger("suanli.web")

#: Plan results kept (the page asks again for inputs it has seen; the search is deterministic).
PLAN_CACHE_SIZE = 128


def _no_local_cpu(*names: str | None) -> None:
    """The page sizes catalog GPUs; it never measures the server's own CPU."""
    from suanli.live.localcpu import is_local_cpu

    for name in names:
        if name and is_local_cpu(name):
            raise ApiError(
                400,
                N_("{name!r} is this server's CPU; pick a GPU from /api/gpus").format(name=name),
            )


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


#: Everything the page's scripts and labels show: the labels, the scripts' texts, answer words.
MESSAGES = tuple(dict.fromkeys((*PAGE_MESSAGES, *SCRIPT_MESSAGES, *PAGE_WORDS)))


def _lang(value: str) -> str:
    """``zh`` or ``en``; a 400 with one sentence otherwise."""
    try:
        return normalize(value)
    except ValueError as exc:
        raise ApiError(400, message_of(exc)) from None


def _static_dir() -> Any:
    return resources.files("suanli.web") / "static"


def _multipart_available() -> bool:
    from importlib.util import find_spec

    return any(find_spec(name) is not None for name in ("python_multipart", "multipart"))


def accept_language(headers: Any) -> str:
    """The browser's first Accept-Language when suanli speaks it (``zh-CN`` -> ``zh``), else
    ``en``."""
    first = str(headers.get("accept-language", "")).split(",", 1)[0].strip().lower()
    return next((code for code in LANGS if first.startswith(code)), "en")


def create_app(
    *,
    allow_hub: bool = True,
    hub_loader: Callable[[str], LoadedModel] | None = None,
    plan_cache_size: int = PLAN_CACHE_SIZE,
    allow_hosts: tuple[str, ...] | None = None,
    search_slots: int = SEARCH_SLOTS,
    search_processes: bool = True,
) -> FastAPI:
    """The web app: the page at ``/``, the JSON API under ``/api``, OpenAPI docs at ``/docs``.

    ``allow_hub=False`` refuses Hugging Face ids (only presets and uploads); ``hub_loader``
    replaces the hub reader (tests); ``plan_cache_size=0`` turns the plan cache off;
    ``allow_hosts`` answers only requests whose Host header names one of them (``suanli serve``
    sets loopback names plus ``--allow-host``, through ``SUANLI_ALLOW_HOSTS``); None: no check.
    ``search_slots``: plan searches that run at once (the others queue, up to a deadline);
    ``search_processes``: run them in worker processes (:mod:`suanli.web.workers`), not threads.
    """

    @contextlib.asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        from suanli.web import workers

        if search_processes:  # the search workers start with the server, not on a first plan
            workers.warm(searches.slots)
        quiet_accept_errors(asyncio.get_running_loop())
        yield
        workers.shutdown()

    app = FastAPI(
        lifespan=lifespan,
        title="suanli",
        version=__version__,
        summary="Will it fit, how fast, which GPU, what cost: the suanli CLI's --json as an API.",
        description="Every endpoint mirrors a `suanli` command's `--json` document (numbers in "
        "base units: bytes, FLOP/s, seconds, USD). Bad input gets a 4xx answer "
        '`{"error": "one sentence"}`. Add `?lang=zh` to any request for its sentences (and its '
        "error) in Chinese; keys, numbers and ids do not change.",
        docs_url=None,
        redoc_url=None,
        default_response_class=CleanJSONResponse,
    )
    models = Models(allow_hub=allow_hub, hub_loader=hub_loader)
    searches = WorkerSlots(search_slots)

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
        return error_response(400, message_of(exc))

    async def invalid(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, RequestValidationError)
        return error_response(422, validation_sentence(exc))

    async def http_error(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, StarletteHTTPException)
        detail = exc.detail if isinstance(exc.detail, str) else ""
        if exc.status_code == 404 and detail in ("", "Not Found"):
            detail = N_("no such endpoint {path}; see /docs").format(path=request.url.path[:80])
        elif exc.status_code == 405:
            detail = N_("{method} is not allowed on {path}; see /docs").format(
                method=request.method, path=request.url.path[:80]
            )
        return error_response(exc.status_code, detail or N_("bad request"))

    async def overflow(request: Request, exc: Exception) -> Response:
        return error_response(
            400,
            N_("the sizes given are too large to estimate (arithmetic overflow); use smaller ones"),
        )

    async def bug(request: Request, exc: Exception) -> Response:
        log.error("internal error on %s", request.url.path, exc_info=exc)
        return error_response(
            500,
            N_("internal error ({error}): a bug in suanli, please report it").format(
                error=type(exc).__name__
            ),
        )

    async def disconnected(request: Request, exc: Exception) -> Response:
        # The client went away mid-body: nobody reads an answer; one line, no traceback.
        log.info("client disconnected during %s %s", request.method, request.url.path[:80])
        return Response(status_code=400)

    app.add_exception_handler(ClientDisconnect, disconnected)
    app.add_exception_handler(ApiError, api_error)
    app.add_exception_handler(ValueError, value_error)
    app.add_exception_handler(OverflowError, overflow)
    app.add_exception_handler(RequestValidationError, invalid)
    app.add_exception_handler(StarletteHTTPException, http_error)
    app.add_exception_handler(Exception, bug)
    app.add_middleware(BodyLimit)
    hosts = allow_hosts
    if hosts is None and os.environ.get(ALLOW_HOSTS_ENV):
        hosts = (*LOOPBACK_HOSTS, *os.environ[ALLOW_HOSTS_ENV].split(","))
    if hosts is not None:
        app.add_middleware(HostAllowList, hosts=tuple(hosts))
    app.add_middleware(AnswerLanguage)  # outermost: ?lang= reaches every answer and error

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

    @app.get(
        "/api/presets",
        summary="The bundled model presets (suanli models --json)",
        response_model=None,
        responses=documented("models", errors=GET_ERRORS),
    )
    def api_presets() -> dict[str, Any]:
        return preset_list().to_json()

    # The catalog never changes while the server runs: rendered once per language, answered on
    # the event loop, so it stays fast while searches occupy the worker threads.
    gpus_doc = gpu_list(GpuListRequest()).to_json()
    gpus_bodies = {"en": render_json(gpus_doc, "en")}

    @app.get(
        "/api/gpus",
        summary="The GPU catalog, fastest bf16 first (suanli gpus --json)",
        response_model=None,
        responses=documented("gpus", errors=GET_ERRORS),
    )
    async def api_gpus() -> Response:
        lang = ANSWER_LANG.get()
        if lang not in gpus_bodies:
            gpus_bodies[lang] = render_json(gpus_doc, lang)
        return Response(gpus_bodies[lang], media_type="application/json")

    @app.get(
        "/api/frameworks",
        summary="The frameworks and their defaults (suanli frameworks)",
        response_model=None,
        responses=documented("frameworks", errors=GET_ERRORS),
    )
    def api_frameworks() -> dict[str, Any]:
        return framework_list().to_json()

    @app.get(
        "/api/options",
        summary="The choices the form offers, and the web limits",
        response_model=None,
        responses=documented("web-options", errors=GET_ERRORS),
    )
    def api_options() -> dict[str, Any]:
        return OptionsAnswer(
            tasks=TASKS,
            dtypes=DTYPES,
            precisions=PRECISIONS,
            optimizers=OPTIMIZERS,
            recompute=WORK_OPTIONS["recompute"].choices,
            frameworks=tuple(
                FrameworkOption(id=fw.id, name=fw.name, kind=fw.kind)
                for fw in framework_list().frameworks
            ),
            attention=ATTENTION,
            kv_dtypes=KV_DTYPES,
            quant=tuple(
                QuantOption(id=f.id, name=f.name, bits_per_weight=f.bits_per_weight)
                for f in weight_formats().values()
            ),
            scenarios={k: s.reasoning for k, s in SCENARIOS.items()},
            vendors=tuple(VENDORS),
            form_factors=tuple(FORM_FACTORS),
            limits=WebLimits(
                body_bytes=BODY_LIMIT,
                plan_max_gpus_train=PLAN_MAX_GPUS_TRAIN,
                plan_max_gpus_infer=PLAN_MAX_GPUS_INFER,
            ),
            hub=allow_hub,
            defaults={
                "model": DEFAULT_MODEL,
                "prompt": PROMPT_TOKENS,
                "output": OUTPUT_TOKENS,
                **{name: option.default for name, option in WORK_OPTIONS.items()},
            },
        ).to_json()

    @app.post(
        "/api/memory",
        summary="Memory per GPU and the fit (suanli mem --json)",
        response_model=None,
        responses=documented("memory"),
    )
    def api_memory(req: MemoryRequest) -> dict[str, Any]:
        _no_local_cpu(req.gpu, *req.cards)
        return memory(req.to_request(), loader=models.resolve).to_json()

    @app.post(
        "/api/perf",
        summary="Speed, the bound and a roofline (suanli perf --json)",
        response_model=None,
        responses=documented("perf-train", "perf-infer"),
    )
    def api_perf(req: PerfRequest) -> dict[str, Any]:
        _no_local_cpu(req.gpu)
        return perf(req.to_request(), loader=models.resolve).to_json()

    @app.post(
        "/api/image",
        summary="Seconds per image and the fit (suanli perf --task generate-image --json)",
        response_model=None,
        responses=documented("perf-image"),
    )
    def api_image(req: ImageRequest) -> dict[str, Any]:
        _no_local_cpu(req.gpu)
        return generate_image(req.to_request()).to_json()

    @app.post(
        "/api/plan",
        summary="GPUs ranked with their best layout (suanli plan --json)",
        response_model=None,
        responses=documented("plan", "plan-rendering", errors=(*BODY_ERRORS, 503)),
    )
    async def api_plan(req: PlanRequest) -> Response:
        # A hit is answered on the event loop. The model is resolved in the thread pool (an
        # upload lives in this process); the search runs in a worker process (web/workers.py).
        lang = ANSWER_LANG.get()
        key = req.model_dump_json() if lang == "en" else f"{lang}:{req.model_dump_json()}"
        body = cache.get(key)
        if body is None:
            request = req.to_request()
            loaded = await run_in_threadpool(models.resolve, request.model)
            if search_processes:
                body = await searches.run_in_process(plan_body, request, loaded, lang)
            else:
                answer = await searches.run(plan, request, loader=lambda _name: loaded)
                body = render_json(answer.to_json())
            cache.put(key, body)
        return Response(body, media_type="application/json")

    @app.get(
        "/api/messages",
        summary="The page's labels in a language (zh or en)",
        response_model=None,
        responses=documented("web-messages", errors=(*GET_ERRORS, 422)),
    )
    def api_messages(request: Request, lang: str | None = None) -> dict[str, Any]:
        # An explicit ?lang= wins; otherwise the browser's first Accept-Language.
        chosen = lang if lang is not None else accept_language(request.headers)
        code = _lang(chosen)
        messages = {m: translate_to(code, m) for m in MESSAGES}
        return MessagesAnswer(lang=code, messages=messages).to_json()

    @app.post(
        "/api/card",
        summary="What a card can run (suanli card --json)",
        response_model=None,
        responses=documented("card"),
    )
    def api_card(req: CardRequest) -> dict[str, Any]:
        _no_local_cpu(req.gpu)
        return card(req.to_request(), loader=models.resolve).to_json()

    @app.post(
        "/api/cost",
        summary="Buy vs rent vs API over the years (suanli cost --json)",
        response_model=None,
        responses=documented("cost"),
    )
    def api_cost(req: CostRequest) -> dict[str, Any]:
        return cost(req.to_request()).to_json()

    @app.post(
        "/api/config",
        summary="Upload a config.json (multipart field 'file', or a JSON body)",
        description="Parsed as JSON only, never executed, kept in memory. Returns the model "
        "summary (suanli model --json) and the 'model' id to use in the other endpoints.",
        response_model=None,
        responses=documented("config", errors=(*BODY_ERRORS, 415)),
    )
    async def api_config(request: Request) -> dict[str, Any]:
        ctype = request.headers.get("content-type", "").lower()
        filename: str | None = None
        if ctype.startswith("multipart/form-data"):
            if not multipart_ok:
                raise ApiError(
                    415, N_("multipart uploads need python-multipart; send the JSON as the body")
                )
            form = await request.form(max_files=1, max_fields=8, max_part_size=BODY_LIMIT)
            try:
                item = form.get("file")
                if item is None or isinstance(item, str):
                    raise ApiError(
                        400, N_("send the config as a multipart file field named 'file'")
                    )
                filename = item.filename
                raw = await item.read(BODY_LIMIT + 1)
            finally:
                await form.close()
        elif ctype.startswith("application/json"):
            raw = await request.body()
        else:
            raise ApiError(
                415,
                N_(
                    "upload config.json as multipart/form-data (field 'file') or as an "
                    "application/json body"
                ),
            )
        if len(raw) > BODY_LIMIT:
            raise ApiError(413, too_large())
        model_id, loaded = models.add(raw, filename)
        return {**model_info(loaded).to_json(), "model": model_id, "filename": filename}

    @app.get(
        "/api/live",
        summary="Live GPU readings (suanli top --json), else the CPU",
        response_model=None,
        responses=documented("live", errors=GET_ERRORS),
    )
    def api_live() -> dict[str, Any]:
        with providers_lock:
            if not providers:
                from suanli.live.devices import providers as find_providers

                providers.extend(find_providers())
        return live_report(providers).to_json()

    def openapi() -> dict[str, Any]:
        # Built on the first GET /openapi.json: the answers' schemas take most of a second.
        if app.openapi_schema is None:
            base = get_openapi(
                title=app.title,
                version=app.version,
                summary=app.summary,
                description=app.description,
                routes=app.routes,
            )
            app.openapi_schema = openapi_document(base)
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]
    return app
