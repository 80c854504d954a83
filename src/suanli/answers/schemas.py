"""Every document the front-ends serve, and its JSON Schema (published in docs/schemas/).

An answer type's document is ``to_json()``; three documents are JSON lists of rows instead
(``suanli gpus --json``, ``suanli models --json``, ``suanli top --json``), kept as lists so that
scripts written against them keep working.
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
    "fit",
    "card",
    "compare",
    "cost",
    "capacity",
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


def _list_schema(title: str, description: str, item: Any) -> dict[str, Any]:
    from dataclasses import make_dataclass

    holder = make_dataclass(title, [("rows", list[item])])
    schema = json_schema(holder)
    return {
        "$schema": schema["$schema"],
        "title": title,
        "description": description,
        "type": "array",
        "items": schema["properties"]["rows"]["items"],
        **({"$defs": schema["$defs"]} if "$defs" in schema else {}),
    }


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
    from suanli.answers.live import DeviceReading
    from suanli.answers.model import PresetRow

    out = {cls.schema_name: json_schema(cls) for cls in answer_types()}
    out["gpus"] = _list_schema(
        "GpuList",
        "suanli gpus --json and GET /api/gpus: one object per GPU, the catalog's fields in base "
        "units (see docs/catalog.md for the fields).",
        dict[str, Any],
    )
    out["gpus"]["items"] = _gpu_row(out["gpu"])
    out["models"] = _list_schema(
        "PresetList", "suanli models --json and GET /api/presets: the bundled presets.", PresetRow
    )
    out["top"] = _list_schema(
        "DeviceReadings",
        "suanli top --json: one reading per device (GET /api/live wraps the same rows in the "
        "'live' document).",
        DeviceReading,
    )
    for schema in out.values():
        schema["$id"] = f"suanli/{SCHEMA_VERSION}/{schema['title']}"
    return dict(sorted(out.items()))
