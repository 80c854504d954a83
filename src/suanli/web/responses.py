"""What the web API answers, as the OpenAPI document declares it.

Each route names the documents it serves (:func:`documented`): the answers' own JSON Schemas
(:func:`suanli.answers.schemas.document_schemas`, the ones published in ``docs/schemas/``) for a
200, and the one error object for a 4xx or 5xx. :func:`openapi_document` puts those schemas into
``components/schemas`` when ``/openapi.json`` is first asked for (building them takes most of a
second, too slow for every ``create_app``). The documents only the web serves (the form's
options, the page's messages) are typed answers here, so they carry
``schema_version`` like every other document.

No FastAPI import here: the functions work on plain dicts.
"""

from __future__ import annotations

import copy
import functools
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, ClassVar

from suanli.answers.base import Answer, json_schema

#: Where a route's declared document lives in the OpenAPI document.
COMPONENTS = "#/components/schemas/"

#: The component of the error object every 4xx and 5xx answer has.
ERROR = "error"

ERROR_SCHEMA: dict[str, Any] = {
    "title": "ApiError",
    "description": "Every 4xx and 5xx answer of the API: one sentence saying what is wrong and "
    "what to do (in English; with ?lang=zh in Chinese).",
    "type": "object",
    "properties": {"error": {"type": "string", "maxLength": 400}},
    "required": ["error"],
    "additionalProperties": False,
}

#: What each error status means, as the OpenAPI document says it.
ERROR_MEANINGS = {
    400: "Bad input (an unknown model or GPU, a job that cannot run, a Host not allowed).",
    413: "The request body is over the size limit (GET /api/options: limits.body_bytes).",
    415: "The upload is neither multipart/form-data nor application/json.",
    422: "A field has the wrong type or is out of its range.",
    500: "A bug in suanli (please report it).",
    503: "The server is busy with other plan searches, or a search ran out of memory.",
}

#: The errors of a route with a JSON body, and of one without.
BODY_ERRORS = (400, 413, 422, 500)
GET_ERRORS = (400, 500)


@dataclass(frozen=True)
class FrameworkOption:
    """A framework the form offers."""

    id: str
    name: str
    kind: str
    """training, serving or local."""


@dataclass(frozen=True)
class QuantOption:
    """A weight format the form offers."""

    id: str
    name: str
    bits_per_weight: float


@dataclass(frozen=True)
class WebLimits:
    """The web's own bounds on a request."""

    body_bytes: int
    """Largest request body, in bytes."""
    plan_max_gpus_train: int
    """Largest GPU count a training plan searches."""
    plan_max_gpus_infer: int
    """Largest GPU count a serving plan searches."""


@dataclass(frozen=True)
class OptionsAnswer(Answer):
    """GET /api/options: the choices the form offers (the CLI's option values) and the limits."""

    schema_name: ClassVar[str] = "web-options"

    tasks: tuple[str, ...]
    dtypes: tuple[str, ...]
    precisions: tuple[str, ...]
    optimizers: tuple[str, ...]
    recompute: tuple[str, ...]
    frameworks: tuple[FrameworkOption, ...]
    attention: tuple[str, ...]
    kv_dtypes: tuple[str, ...]
    quant: tuple[QuantOption, ...]
    scenarios: dict[str, str]
    """Scenario id -> why it needs what it needs."""
    vendors: tuple[str, ...]
    form_factors: tuple[str, ...]
    limits: WebLimits
    hub: bool
    """Whether Hugging Face ids are accepted (else presets and uploads only)."""
    defaults: dict[str, Any] = field(default_factory=dict)
    """Option -> its default, from the one declaration the command line and the API use
    (answers/options.py): the form starts from these, never from values of its own."""


@dataclass(frozen=True)
class MessagesAnswer(Answer):
    """GET /api/messages: the page's labels in one language."""

    schema_name: ClassVar[str] = "web-messages"

    lang: str
    """zh or en."""
    messages: dict[str, str]
    """English label -> the label in ``lang``."""


#: The documents only the web serves.
WEB_ANSWERS: tuple[type[Answer], ...] = (OptionsAnswer, MessagesAnswer)


def config_schema(model: dict[str, Any]) -> dict[str, Any]:
    """POST /api/config: the model document (``suanli model --json``) and the upload's id."""
    return {
        "title": "UploadedModel",
        "description": "The uploaded config's model summary (suanli model --json), with the id "
        "to send as 'model' to the other endpoints.",
        "allOf": [model],
        "properties": {
            "model": {"type": "string", "description": "The 'upload:...' id of this config."},
            "filename": {
                "anyOf": [{"type": "string"}, {"type": "null"}],
                "description": "The uploaded file's name (null for a JSON body).",
            },
        },
        "required": ["model", "filename"],
    }


def documented(
    *documents: str, errors: Iterable[int] = BODY_ERRORS
) -> dict[int | str, dict[str, Any]]:
    """A route's ``responses=``: its 200 is one of ``documents`` (names of ``docs/schemas/``
    files, or of :data:`WEB_ANSWERS`), each status of ``errors`` the error object."""
    refs = [{"$ref": COMPONENTS + name} for name in documents]
    ok = refs[0] if len(refs) == 1 else {"anyOf": refs}
    out: dict[int | str, dict[str, Any]] = {
        200: {
            "description": "The answer (numbers in base units; see schema_version).",
            "content": {"application/json": {"schema": ok}},
        }
    }
    for status in errors:
        out[status] = {
            "description": ERROR_MEANINGS[status],
            "content": {"application/json": {"schema": {"$ref": COMPONENTS + ERROR}}},
        }
    return out


def _rewrite_refs(node: Any, rename: Callable[[str], str]) -> Any:
    """A copy of a schema with every ``$ref`` passed through ``rename``."""
    if isinstance(node, dict):
        return {
            k: rename(v) if k == "$ref" and isinstance(v, str) else _rewrite_refs(v, rename)
            for k, v in node.items()
        }
    if isinstance(node, list):
        return [_rewrite_refs(v, rename) for v in node]
    return node


def _nullable_numbers(node: Any) -> Any:
    """The web writes a non-finite float (an infinite time for a job that cannot run) as null:
    every ``number`` of the answers' schemas may be null in a web answer."""
    if isinstance(node, dict):
        out = {k: _nullable_numbers(v) for k, v in node.items()}
        if out.get("type") == "number":
            out["type"] = ["number", "null"]
        return out
    if isinstance(node, list):
        return [_nullable_numbers(v) for v in node]
    return node


@functools.cache
def response_components() -> dict[str, dict[str, Any]]:
    """Component name -> schema: every answer document (by its ``docs/schemas/`` name), the
    web's own documents, ``config``, the error object and every nested type (by type name)."""
    from suanli.answers.schemas import document_schemas

    documents = document_schemas()
    for cls in WEB_ANSWERS:
        documents[cls.schema_name] = json_schema(cls)
    components: dict[str, dict[str, Any]] = {}

    def to_component(ref: str) -> str:
        return ref.replace("#/$defs/", COMPONENTS, 1)

    for name, schema in documents.items():
        body = {k: v for k, v in schema.items() if k not in ("$schema", "$id", "$defs")}
        for def_name, definition in schema.get("$defs", {}).items():
            hoisted = _nullable_numbers(_rewrite_refs(definition, to_component))
            if components.setdefault(def_name, hoisted) != hoisted:  # a bug, not bad input
                raise KeyError(f"two different types are named {def_name}")
        components[name] = _nullable_numbers(_rewrite_refs(body, to_component))
    components["config"] = config_schema({"$ref": COMPONENTS + "model"})
    components[ERROR] = copy.deepcopy(ERROR_SCHEMA)
    return components


def _refs(node: Any) -> Iterable[str]:
    """The component names ``node`` refers to."""
    if isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith(COMPONENTS):
            yield ref.removeprefix(COMPONENTS)
        for value in node.values():
            yield from _refs(value)
    elif isinstance(node, list):
        for value in node:
            yield from _refs(value)


def openapi_document(base: dict[str, Any]) -> dict[str, Any]:
    """``base`` (FastAPI's generated document) with the components its routes' responses
    refer to, and FastAPI's own validation-error types dropped (the API answers 422 with the
    error object, not with those)."""
    doc = copy.deepcopy(base)
    schemas = doc.setdefault("components", {}).setdefault("schemas", {})
    for unused in ("HTTPValidationError", "ValidationError"):
        schemas.pop(unused, None)
    available = response_components()
    # The KeyErrors below are bugs in the routes' declarations (tests/web/test_openapi.py).
    requests = set(schemas)
    if requests & set(available):
        raise KeyError(f"components named twice: {sorted(requests & set(available))}")
    wanted = [name for name in _refs(doc["paths"]) if name not in requests]
    while wanted:  # the documents the routes name, and the types inside them
        name = wanted.pop()
        if name in schemas:
            continue
        if name not in available:
            raise KeyError(f"a route declares {name}, which is no document")
        schemas[name] = copy.deepcopy(available[name])
        wanted.extend(_refs(schemas[name]))
    doc["components"]["schemas"] = dict(sorted(schemas.items()))
    return doc
