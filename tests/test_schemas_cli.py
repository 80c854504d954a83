"""Every ``--json`` the command line prints is versioned: a JSON object (the lists too), with
``schema_version`` first, equal to the one constant, and the document valid against its
published schema (docs/schemas/)."""

from __future__ import annotations

import json
from typing import Any

import jsonschema
import pytest

from suanli.answers.base import SCHEMA_VERSION
from suanli.answers.schemas import document_schemas

from .cli.test_cli import run

SCHEMAS = document_schemas()

#: Command line -> the schema its --json follows (a handful of each kind of answer).
COMMANDS: list[tuple[tuple[str, ...], str]] = [
    (("model", "llama-3.1-8b"), "model"),
    (("gpu", "h100"), "gpu"),
    (("mem", "llama-3.1-8b", "--task", "lora", "--gpu", "4090"), "memory"),
    (("perf", "qwen2.5-0.5b", "--task", "full", "--gpu", "h100"), "perf-train"),
    (("perf", "llama-3.1-8b", "--task", "infer", "--gpu", "4090"), "perf-infer"),
    (("perf", "sdxl", "--task", "generate-image", "--gpu", "4090"), "perf-image"),
    (("plan", "qwen2.5-0.5b", "--gpu", "4090", "--gpu", "h100", "--max-gpus", "2"), "plan"),
    (("fit", "llama-3.1-8b", "--task", "full", "--gpu", "4090"), "fit"),
    (("cost", "h100", "--price", "30000"), "cost"),
    (("card", "4090", "--model", "llama-3.1-8b"), "card"),
    (("compare", "qwen2.5-0.5b", "--task", "infer", "--devices", "h100,4090"), "compare"),
    (("stencil", "--grid", "256", "256", "256"), "stencil"),
    (("explain", "CUDA out of memory. Tried to allocate 2.00 GiB"), "explain"),
    (("frameworks",), "frameworks"),
    (("doctor",), "doctor"),
]


@pytest.mark.parametrize(("args", "schema"), COMMANDS, ids=[" ".join(a[:2]) for a, _ in COMMANDS])
def test_every_json_document_starts_with_the_schema_version(
    args: tuple[str, ...], schema: str
) -> None:
    out = run(*args, "--json")
    assert out.returncode == 0, out.stderr
    doc: dict[str, Any] = json.loads(out.stdout)
    assert next(iter(doc)) == "schema_version"
    assert doc["schema_version"] == SCHEMA_VERSION
    jsonschema.validate(doc, SCHEMAS[schema])


def test_every_published_schema_is_an_object_that_pins_the_version() -> None:
    """No document is a bare list (the lists keep their rows under one key since version 3)."""
    assert len(SCHEMAS) >= 25
    for name, schema in SCHEMAS.items():
        assert schema["type"] == "object", name
        assert schema["properties"]["schema_version"] == {"const": SCHEMA_VERSION}, name
        assert schema["required"][0] == "schema_version", name
        assert next(iter(schema["properties"])) == "schema_version", name
        assert schema["$id"] == f"suanli/{SCHEMA_VERSION}/{schema['title']}"


@pytest.mark.parametrize(
    ("args", "key", "least"),
    [(("gpus",), "gpus", 100), (("models",), "models", 30), (("top",), "devices", 6)],
)
def test_the_lists_keep_their_rows_under_one_key(
    args: tuple[str, ...], key: str, least: int
) -> None:
    out = run(*args, "--json", env={"SUANLI_FAKE_GPUS": "problems"})
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    assert list(doc)[:2] == ["schema_version", key] and doc["schema_version"] == SCHEMA_VERSION
    jsonschema.validate(doc, SCHEMAS[args[0]])
    rows = doc[key]
    assert isinstance(rows, list) and len(rows) >= least
    assert all(isinstance(r, dict) and "schema_version" not in r for r in rows)
    broken = {**doc, key: [{"no": "fields"}]}
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(broken, SCHEMAS[args[0]])
