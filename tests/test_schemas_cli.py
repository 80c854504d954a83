"""Every ``--json`` the command line prints is versioned: ``schema_version`` first, equal to the
one constant, and the document valid against its published schema (docs/schemas/)."""

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


def test_every_published_object_schema_pins_the_version() -> None:
    objects = [name for name, s in SCHEMAS.items() if s["type"] == "object"]
    assert len(objects) >= 20
    for name in objects:
        schema = SCHEMAS[name]
        assert schema["properties"]["schema_version"] == {"const": SCHEMA_VERSION}, name
        assert schema["required"][0] == "schema_version", name
        assert next(iter(schema["properties"])) == "schema_version", name
    for schema in SCHEMAS.values():  # the list documents carry it in their $id
        assert schema["$id"] == f"suanli/{SCHEMA_VERSION}/{schema['title']}"


def test_the_list_documents_are_the_known_three() -> None:
    """``gpus``, ``models`` and ``top`` print JSON lists (kept for scripts written against them,
    docs/changelog.md); no other document may be a list without a version."""
    lists = sorted(name for name, s in SCHEMAS.items() if s["type"] == "array")
    assert lists == ["gpus", "models", "top"]
    rows = json.loads(run("gpus", "--json").stdout)
    assert isinstance(rows, list) and len(rows) > 100
    jsonschema.validate(rows, SCHEMAS["gpus"])
