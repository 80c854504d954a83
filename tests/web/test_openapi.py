"""The OpenAPI document declares what every endpoint really answers: each 200 is the answer's
JSON Schema (the one published in docs/schemas/), each error the one error object, and real
answers validate against what is declared."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("fastapi", reason="the web extra (fastapi) is not installed")
pytest.importorskip("httpx", reason="httpx (for FastAPI's TestClient) is not installed")

import jsonschema
from fastapi.testclient import TestClient

from suanli.answers.base import SCHEMA_VERSION
from suanli.answers.schemas import document_schemas
from suanli.web.app import BODY_LIMIT, create_app
from suanli.web.responses import COMPONENTS, ERROR

FIXTURES = Path(__file__).parent.parent / "fixtures" / "configs"


@pytest.fixture(scope="module")
def client() -> Iterator[TestClient]:
    with TestClient(
        create_app(allow_hub=False, search_processes=False), raise_server_exceptions=False
    ) as c:
        yield c


@pytest.fixture(scope="module")
def openapi(client: TestClient) -> dict[str, Any]:
    response = client.get("/openapi.json")
    assert response.status_code == 200
    doc: dict[str, Any] = response.json()
    return doc


def operations(openapi: dict[str, Any]) -> Iterator[tuple[str, str, dict[str, Any]]]:
    for path, ops in openapi["paths"].items():
        for method, op in ops.items():
            yield path, method, op


def resolve(openapi: dict[str, Any], schema: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in schema:
        ref = schema["$ref"]
        assert ref.startswith(COMPONENTS), ref
        schema = openapi["components"]["schemas"][ref.removeprefix(COMPONENTS)]
    return schema


def says_something(openapi: dict[str, Any], schema: dict[str, Any]) -> bool:
    """Not an empty object: named properties, a list of such, or a choice among such."""
    schema = resolve(openapi, schema)
    for combined in ("anyOf", "allOf"):
        if combined in schema:
            return all(says_something(openapi, s) for s in schema[combined])
    if schema.get("type") == "array":
        return says_something(openapi, schema.get("items", {}))
    return bool(schema.get("properties")) and bool(schema.get("required"))


def declared(openapi: dict[str, Any], path: str, method: str, status: int) -> dict[str, Any]:
    response = openapi["paths"][path][method]["responses"][str(status)]
    schema: dict[str, Any] = response["content"]["application/json"]["schema"]
    return schema


def check(openapi: dict[str, Any], path: str, method: str, response: Any) -> Any:
    """``response``'s body validated against the schema the document declares for its status."""
    schema = declared(openapi, path, method, response.status_code)
    # The components are carried along so that the schema's $refs resolve inside it.
    validator = jsonschema.Draft202012Validator({**schema, "components": openapi["components"]})
    body = response.json()
    validator.validate(body)
    return body


# --- what the document declares --------------------------------------------------------------


def test_every_api_response_declares_a_schema_that_says_something(
    openapi: dict[str, Any],
) -> None:
    seen = 0
    for path, method, op in operations(openapi):
        assert path.startswith("/api/"), path
        for status, response in op["responses"].items():
            schema = response["content"]["application/json"]["schema"]
            assert says_something(openapi, schema), (method, path, status, schema)
            seen += 1
    assert seen >= 14 * 3  # every endpoint: its answer and at least two errors


def test_every_declared_answer_is_an_object_with_the_version_first(
    openapi: dict[str, Any],
) -> None:
    seen = 0
    for path, method, _op in operations(openapi):
        ok = resolve(openapi, declared(openapi, path, method, 200))
        for schema in [resolve(openapi, s) for s in ok.get("anyOf", [ok])]:
            if "allOf" in schema:  # /api/config: the model document and the upload's id
                schema = resolve(openapi, schema["allOf"][0])
            assert schema["type"] == "object", (method, path)
            assert next(iter(schema["properties"])) == "schema_version", (method, path)
            assert schema["properties"]["schema_version"] == {"const": SCHEMA_VERSION}
            seen += 1
    assert seen >= 14
    assert list(openapi["components"]["schemas"]["gpus"]["properties"])[:2] == [
        "schema_version",
        "gpus",
    ]
    assert list(openapi["components"]["schemas"]["models"]["properties"]) == [
        "schema_version",
        "models",
    ]


def test_errors_are_the_error_object_not_fastapis(openapi: dict[str, Any]) -> None:
    components = openapi["components"]["schemas"]
    assert "HTTPValidationError" not in components and "ValidationError" not in components
    for path, method, op in operations(openapi):
        statuses = {int(s) for s in op["responses"]}
        assert 200 in statuses and 400 in statuses and 500 in statuses, path
        if method == "post":
            assert {413, 422} <= statuses, path
        for status in statuses - {200}:
            assert declared(openapi, path, method, status) == {"$ref": COMPONENTS + ERROR}
    assert 503 in {int(s) for s in openapi["paths"]["/api/plan"]["post"]["responses"]}
    assert components[ERROR]["required"] == ["error"]


def test_the_answers_are_the_published_schemas(openapi: dict[str, Any]) -> None:
    components = openapi["components"]["schemas"]
    published = document_schemas()
    for name in ("memory", "perf-train", "perf-infer", "plan", "card", "cost", "live"):
        assert components[name]["title"] == published[name]["title"]
        assert list(components[name]["properties"]) == list(published[name]["properties"])
        assert components[name]["properties"]["schema_version"] == {"const": SCHEMA_VERSION}
    # The web writes a non-finite float as null (strict JSON), and says so.
    assert components["perf-train"]["properties"]["mfu"]["type"] == ["number", "null"]
    assert published["perf-train"]["properties"]["mfu"]["type"] == "number"
    assert declared(openapi, "/api/perf", "post", 200) == {
        "anyOf": [{"$ref": COMPONENTS + "perf-train"}, {"$ref": COMPONENTS + "perf-infer"}]
    }


def test_every_component_is_a_valid_schema_and_every_ref_resolves(
    openapi: dict[str, Any],
) -> None:
    components = openapi["components"]["schemas"]
    for name, schema in components.items():
        jsonschema.Draft202012Validator.check_schema(schema)
        text = str(schema)
        assert "#/$defs/" not in text, name  # hoisted into components
    refs = {part.split("'")[0] for part in str(openapi).split(f"'$ref': '{COMPONENTS}")[1:]}
    assert refs and refs <= set(components)


def test_the_document_is_built_once_per_app(client: TestClient) -> None:
    first = client.app.openapi()  # type: ignore[attr-defined]
    assert client.app.openapi() is first  # type: ignore[attr-defined]


# --- real answers validate against it --------------------------------------------------------

GETS = ["/api/presets", "/api/gpus", "/api/frameworks", "/api/options", "/api/messages?lang=zh"]

POSTS = [
    ("/api/memory", {"model": "llama-3.1-8b", "task": "lora", "gpu": "4090", "cards": ["l40s"]}),
    ("/api/memory", {"model": "llama-3.1-8b", "task": "infer", "quant": "awq-4bit-g128"}),
    ("/api/perf", {"model": "qwen2.5-0.5b", "task": "full", "gpu": "h100", "tokens": 1e9}),
    ("/api/perf", {"model": "llama-3.1-8b", "task": "infer", "gpu": "4090"}),
    # A job that does not fit, asked anyway: infinite figures are written as null.
    ("/api/perf", {"model": "llama-3.1-70b", "task": "full", "gpu": "4090", "ignore_fit": True}),
    ("/api/image", {"model": "sdxl", "gpu": "4090"}),
    ("/api/plan", {"model": "qwen2.5-0.5b", "gpu": ["4090", "h100"], "max_gpus": 2}),
    ("/api/plan", {"model": "qwen2.5-0.5b", "task": "infer", "gpu": ["4090"], "max_gpus": 1}),
    ("/api/plan", {"scenario": "rendering-video", "gpu": ["4090"]}),
    ("/api/card", {"gpu": "4090", "models": ["llama-3.1-8b", "qwen2.5-7b"]}),
    ("/api/cost", {"gpu": "h100", "price": 30000, "tokens_per_year": 1e9, "api": "llama-3.1-8b"}),
]


@pytest.mark.parametrize("path", GETS)
def test_get_answers_validate(client: TestClient, openapi: dict[str, Any], path: str) -> None:
    response = client.get(path)
    assert response.status_code == 200, response.text
    body = check(openapi, path.split("?")[0], "get", response)
    assert isinstance(body, dict)  # the lists too: {"schema_version": ..., "gpus": [...]}
    assert next(iter(body)) == "schema_version" and body["schema_version"] == SCHEMA_VERSION


@pytest.mark.parametrize(("path", "body"), POSTS)
def test_post_answers_validate(
    client: TestClient, openapi: dict[str, Any], path: str, body: dict[str, Any]
) -> None:
    response = client.post(path, json=body)
    assert response.status_code == 200, response.text
    doc = check(openapi, path, "post", response)
    assert next(iter(doc)) == "schema_version" and doc["schema_version"] == SCHEMA_VERSION


def test_upload_answer_validates(client: TestClient, openapi: dict[str, Any]) -> None:
    raw = (FIXTURES / "gpt2.json").read_bytes()
    response = client.post("/api/config", files={"file": ("config.json", raw, "application/json")})
    assert response.status_code == 200, response.text
    doc = check(openapi, "/api/config", "post", response)
    assert doc["schema_version"] == SCHEMA_VERSION
    assert doc["model"].startswith("upload:") and doc["filename"] == "config.json"


@pytest.mark.parametrize("fake", ["healthy-8xh100", "problems", "no-gpu"])
def test_live_answer_validates(
    openapi: dict[str, Any], monkeypatch: pytest.MonkeyPatch, fake: str
) -> None:
    monkeypatch.setenv("SUANLI_FAKE_GPUS", fake)
    with TestClient(create_app(allow_hub=False, search_processes=False)) as c:
        response = c.get("/api/live")
    assert response.status_code == 200, response.text
    assert check(openapi, "/api/live", "get", response)["schema_version"] == SCHEMA_VERSION


@pytest.mark.parametrize(
    ("path", "body", "status"),
    [
        ("/api/memory", {"model": "no-such-model-xyz"}, 400),
        ("/api/perf", {"model": "llama-3.1-8b", "gpu": "4090", "batch": -1}, 422),
        ("/api/cost", {"gpu": "h100", "years": "many"}, 422),
        ("/api/plan", {"model": "llama-3.1-8b", "gpu": ["h100"], "gpus": 10_000}, 422),
        ("/api/card", {"gpu": "4090", "models": ["x" * BODY_LIMIT]}, 413),
    ],
)
def test_error_answers_validate(
    client: TestClient, openapi: dict[str, Any], path: str, body: dict[str, Any], status: int
) -> None:
    response = client.post(path, json=body)
    assert response.status_code == status, response.text
    check(openapi, path, "post", response)


@pytest.mark.parametrize(
    ("path", "break_it"),
    [
        ("/api/memory", lambda d: d.pop("total_bytes")),
        ("/api/memory", lambda d: d.update(schema_version=SCHEMA_VERSION + 1)),
        ("/api/perf", lambda d: d.update(mfu="high")),
        ("/api/cost", lambda d: d.pop("schema_version")),
    ],
)
def test_a_broken_answer_fails_its_declared_schema(
    client: TestClient, openapi: dict[str, Any], path: str, break_it: Any
) -> None:
    body = dict(POSTS)[path]
    doc = copy.deepcopy(client.post(path, json=body).json())
    break_it(doc)
    schema = declared(openapi, path, "post", 200)
    validator = jsonschema.Draft202012Validator({**schema, "components": openapi["components"]})
    with pytest.raises(jsonschema.ValidationError):
        validator.validate(doc)
