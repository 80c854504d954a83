"""The web API's error contract and transport limits: one-sentence 4xx answers, strict JSON,
and the request body limit (docs/web.md)."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Awaitable, Callable, MutableMapping
from contextvars import ContextVar
from typing import Any
from urllib.parse import parse_qs

from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from suanli.i18n import N_, is_sentence, message_of, normalize
from suanli.i18n import sentence as in_language

#: Largest request body accepted, in bytes (1 MiB): a config.json is a few kilobytes.
BODY_LIMIT = 1 << 20

_QUOTED_COMMAND = re.compile(r"('suanli [^']*')")
_CLI_FLAG = re.compile(r"(?<![\w-])--([a-z][a-z0-9-]*)")


class ApiError(Exception):
    """An expected failure: the status code and the one sentence the user sees."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message

    def __reduce__(self) -> tuple[Any, tuple[int, str]]:
        # Raised in a worker process, it is pickled back to the server whole.
        return (ApiError, (self.status, self.message))


def _field_name(match: re.Match[str]) -> str:
    return match.group(1).replace("-", "_")


def sentence(text: str, limit: int = 400) -> str:
    """One line, CLI flags spelled as the API's field names (``--max-gpus`` -> ``max_gpus``),
    except inside a quoted command to run (``'suanli fit ... --task full'`` stays as typed)."""
    text = " ".join(str(text).split())
    parts = _QUOTED_COMMAND.split(text)
    text = "".join(
        part if _QUOTED_COMMAND.fullmatch(part) else _CLI_FLAG.sub(_field_name, part)
        for part in parts
    )
    if len(text) > limit:
        text = text[: limit - 1] + "…"
    return text or N_("bad request")


#: The language the answer to the current request is written in: ``?lang=`` on any request
#: (:class:`AnswerLanguage`); English when none is given, so scripts get the CLI's JSON.
ANSWER_LANG: ContextVar[str] = ContextVar("suanli_answer_lang", default="en")


def clean(obj: Any, lang: str = "en") -> Any:
    """A JSON-ready copy: non-finite floats become null, numpy scalars plain numbers, and the
    library's sentences (values, never keys) written in ``lang``."""
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, str):
        return in_language(obj, lang) if lang != "en" and is_sentence(obj) else obj
    if isinstance(obj, (int, bool)) or obj is None:
        return obj
    if isinstance(obj, dict):
        return {str(k): clean(v, lang) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [clean(v, lang) for v in obj]
    item = getattr(obj, "item", None)
    if callable(item):  # numpy scalar
        return clean(item(), lang)
    return str(obj)


def render_json(content: Any, lang: str | None = None) -> bytes:
    """Strict, compact JSON: no NaN/Infinity (which browsers' JSON.parse rejects); sentences in
    ``lang`` (default: the request's, :data:`ANSWER_LANG`)."""
    return json.dumps(
        clean(content, lang or ANSWER_LANG.get()),
        ensure_ascii=False,
        allow_nan=False,
        separators=(",", ":"),
    ).encode("utf-8")


class CleanJSONResponse(JSONResponse):
    """The API's JSON responses (see :func:`render_json`)."""

    def render(self, content: Any) -> bytes:
        return render_json(content)


def error_response(status: int, message: str) -> CleanJSONResponse:
    """The one error shape of the API, in the request's language."""
    lang = ANSWER_LANG.get()
    shown = in_language(message, lang) if is_sentence(message) else message
    return CleanJSONResponse({"error": sentence(shown)}, status_code=status)


def validation_sentence(exc: RequestValidationError) -> str:
    errors = list(exc.errors())
    if not errors:
        return N_("the request is not valid")
    first = errors[0]
    kind = str(first.get("type", ""))
    loc = [str(p) for p in first.get("loc", ()) if p != "body"]
    field = ".".join(loc)
    msg = str(first.get("msg", N_("is not valid")))
    msg = msg.removeprefix("Value error, ").removeprefix("Assertion failed, ")
    msg = msg[:1].lower() + msg[1:]
    raised = (first.get("ctx") or {}).get("error")
    if kind == "value_error" and isinstance(raised, ValueError):
        msg = message_of(raised)  # a validator's own sentence, kept with its message id
    if kind == "json_invalid":
        text = N_("the request body is not valid JSON")
    elif kind == "missing" and field:
        text = N_("missing field {field}").format(field=field)
    elif kind == "missing":
        text = N_("the request needs a JSON body")
    elif kind == "extra_forbidden":
        text = N_("unknown field {field}; see /docs for the fields of this endpoint").format(
            field=field
        )
    elif kind in ("model_attributes_type", "dict_type") and not field:
        text = N_("the request body must be a JSON object")
    elif field:
        text = N_("invalid {field}: {problem}").format(field=field, problem=msg)
    else:
        text = N_("invalid request: {problem}").format(problem=msg)
    if len(errors) == 2:
        text = N_("{problem} (and 1 more problem)").format(problem=text)
    elif len(errors) > 2:
        text = N_("{problem} (and {count} more problems)").format(
            problem=text, count=len(errors) - 1
        )
    return text


Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


def too_large() -> str:
    return N_("the request body is larger than the {limit:,}-byte limit").format(limit=BODY_LIMIT)


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
                await error_response(400, N_("the Content-Length header is not a number"))(
                    scope, receive, send
                )
                return
            if size > self.limit:
                await error_response(413, too_large())(scope, receive, send)
                return
        seen = 0

        async def limited() -> Message:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.limit:
                    # An HTTPException passes through FastAPI's body reading unchanged.
                    raise StarletteHTTPException(413, too_large())
            return message

        await self.app(scope, limited, send)


#: Host names the page answers to by default: this machine's loopback names.
LOOPBACK_HOSTS = ("localhost", "127.0.0.1", "[::1]", "::1")
#: The environment variable ``suanli serve`` passes its allow-list through (uvicorn builds the
#: app from its factory, so the list cannot be an argument).
ALLOW_HOSTS_ENV = "SUANLI_ALLOW_HOSTS"


def host_name(header: bytes) -> str:
    """The host part of a Host header value (``[::1]:8000`` -> ``[::1]``, ``a.b:80`` -> ``a.b``)."""
    text = header.decode("latin-1").strip().lower()
    if text.startswith("["):
        return text[: text.find("]") + 1] if "]" in text else text
    return text.rsplit(":", 1)[0] if text.count(":") == 1 else text


class HostAllowList:
    """Answer only requests whose Host header names an allowed host: a page on another origin
    that rebinds its DNS name to 127.0.0.1 still sends its own name, and gets a 400 JSON error
    instead of the API (DNS rebinding)."""

    def __init__(self, app: ASGIApp, hosts: tuple[str, ...] = LOOPBACK_HOSTS) -> None:
        self.app = app
        self.hosts = {h.strip().lower() for h in hosts if h.strip()}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and "*" not in self.hosts:
            header = dict(scope.get("headers") or []).get(b"host", b"")
            name = host_name(header)
            if name not in self.hosts:
                shown = name[:60] or "(none)"
                await error_response(
                    400,
                    N_(
                        "host {host!r} is not one this server answers to; open it as "
                        "http://127.0.0.1, or add the name with suanli serve's allow-host option"
                    ).format(host=shown),
                )(scope, receive, send)
                return
        await self.app(scope, receive, send)


class AnswerLanguage:
    """``?lang=zh`` (or ``en``) on any request: its answer's sentences, and its error, are
    written in that language (:data:`ANSWER_LANG`); the JSON keys and every other value stay
    as they are. An unknown language is a 400 with one sentence."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        asked = None
        if scope["type"] == "http" and b"lang=" in scope.get("query_string", b""):
            found = parse_qs(scope["query_string"].decode("latin-1")).get("lang")
            asked = found[-1] if found else None
        if asked is None:
            await self.app(scope, receive, send)
            return
        try:
            lang = normalize(asked)
        except ValueError as exc:
            await error_response(400, exc.args[0])(scope, receive, send)
            return
        token = ANSWER_LANG.set(lang)
        try:
            await self.app(scope, receive, send)
        finally:
            ANSWER_LANG.reset(token)
