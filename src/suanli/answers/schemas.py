"""Every document the front-ends serve, and its JSON Schema (published in docs/schemas/).

A document is an answer type's ``to_json()``: a JSON object with ``schema_version`` first. The
lists (``suanli gpus``, ``suanli models``, ``suanli top``) are objects too, their rows under one
key (``gpus``, ``models``, ``devices``), so every document says its version.
"""

from __future__ import annotations

import importlib
import inspect
from typing import Any

from suanli.answers.base import SCHEMA_VERSION, Answer, json_schema

#: The answer modules, one per question.
ANSWER_MODULES = (
    "memory",
    "perf",
    "plan",
    "plan_rendering",
    "fit",
    "card",
    "compare",
    "cost",
    "capacity",
    "capacity_result",
    "stencil",
    "model",
    "gpus",
    "live",
    "doctor",
    "doctor_run",
    "scaling",
    "bench",
    "verify",
    "explain",
    "frameworks",
    "image",
)


def answer_types() -> list[type[Answer]]:
    """Every answer type with a document name, in module order."""
    found: list[type[Answer]] = []
    for name in ANSWER_MODULES:
        module = importlib.import_module(f"suanli.answers.{name}")
        for _, cls in inspect.getmembers(module, inspect.isclass):
            if (
                issubclass(cls, Answer)
                and cls.schema_name
                and cls.__module__ == module.__name__
                and cls not in found
            ):
                found.append(cls)
    return found


def _gpu_row(gpu: dict[str, Any]) -> dict[str, Any]:
    """A row of the GPU list: the one-GPU document without ``schema_version`` (the fixed
    fields; the figures that follow vary by GPU)."""
    properties = {k: v for k, v in gpu["properties"].items() if k != "schema_version"}
    return {
        "type": "object",
        "properties": properties,
        "required": [k for k in gpu["required"] if k != "schema_version"],
    }


def document_schemas() -> dict[str, dict[str, Any]]:
    """Document name -> JSON Schema, for every document a front-end serves."""
    out = {cls.schema_name: json_schema(cls) for cls in answer_types()}
    # A GPU row has the one-GPU document's fixed fields (the figures after them vary by GPU).
    out["gpus"]["properties"]["gpus"]["items"] = _gpu_row(out["gpu"])
    out["gpus"]["$defs"] = {**out["gpus"].get("$defs", {}), **out["gpu"].get("$defs", {})}
    for schema in out.values():
        schema["$id"] = f"suanli/{SCHEMA_VERSION}/{schema['title']}"
    return dict(sorted(out.items()))
