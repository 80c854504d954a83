"""The published schemas are the types' schemas, and real documents validate against them."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from suanli.answers.base import SCHEMA_VERSION, jsonable
from suanli.answers.cost import CostRequest, cost
from suanli.answers.fit import FitRequest, fit
from suanli.answers.memory import MemoryRequest, memory
from suanli.answers.model import ModelRequest, model, preset_rows
from suanli.answers.perf import PerfRequest, perf
from suanli.answers.plan import PlanRequest, plan
from suanli.answers.request import WorkRequest
from suanli.answers.schemas import document_schemas

from ..scripts import load_script

ROOT = Path(__file__).resolve().parents[2]


def _generator() -> Any:
    return load_script("scripts/gen_schemas.py")


SCHEMAS = document_schemas()


def test_published_schemas_are_current() -> None:
    files = _generator().rendered()
    published = {p.name: p.read_text(encoding="utf-8") for p in (ROOT / "docs/schemas").iterdir()}
    stale = sorted(
        name for name in files.keys() | published.keys() if files.get(name) != published.get(name)
    )
    assert stale == [], "run: python scripts/gen_schemas.py"


def test_every_schema_is_a_valid_schema() -> None:
    for name, schema in SCHEMAS.items():
        jsonschema.Draft202012Validator.check_schema(schema)
        assert schema["title"], name


LORA = WorkRequest(task="lora", seq=1024)
DOCUMENTS = {
    "memory": lambda: memory(MemoryRequest("llama-3.1-8b", LORA, gpu="4090", cards=("l40s",))),
    "perf-train": lambda: perf(
        PerfRequest("qwen2.5-0.5b", WorkRequest(task="full", gpus=2), gpu="h100", tokens=1e9)
    ),
    "perf-infer": lambda: perf(PerfRequest("llama-3.1-8b", WorkRequest(task="infer"), gpu="4090")),
    "plan": lambda: plan(PlanRequest("qwen2.5-0.5b", gpus=("4090", "h100"), max_gpus=2)),
    "plan-rendering": lambda: plan(PlanRequest(scenario="rendering-video", gpus=("4090",))),
    "fit": lambda: fit(FitRequest("llama-3.1-8b", WorkRequest(task="full"), gpu="4090")),
    "cost": lambda: cost(CostRequest("h100", price=30000, tokens_per_year=1e9, api="llama-3.1-8b")),
    "model": lambda: model(ModelRequest("mixtral-8x7b")),
}


def _document(name: str) -> Any:
    return json.loads(json.dumps(DOCUMENTS[name]().to_json()))


@pytest.mark.parametrize("name", sorted(DOCUMENTS))
def test_real_documents_validate(name: str) -> None:
    doc = _document(name)
    assert doc["schema_version"] == SCHEMA_VERSION
    jsonschema.validate(doc, SCHEMAS[name])


def test_plan_inference_rows_validate() -> None:
    answer = plan(PlanRequest("qwen2.5-0.5b", task="infer", gpus=("4090", "t4"), max_gpus=1))
    jsonschema.validate(json.loads(json.dumps(answer.to_json())), SCHEMAS["plan"])


def test_list_documents_validate() -> None:
    doc = {"schema_version": SCHEMA_VERSION, "models": [jsonable(r) for r in preset_rows()]}
    jsonschema.validate(doc, SCHEMAS["models"])
    with pytest.raises(jsonschema.ValidationError):  # a bare list is not the document
        jsonschema.validate(doc["models"], SCHEMAS["models"])


@pytest.mark.parametrize(
    ("name", "break_it"),
    [
        ("memory", lambda d: d.pop("total_bytes")),
        ("memory", lambda d: d["breakdown"].update(weights="many")),
        ("perf-train", lambda d: d.update(mfu="high")),
        ("fit", lambda d: d["steps"][0].pop("options")),
    ],
)
def test_a_broken_document_fails(name: str, break_it: Any) -> None:
    doc = copy.deepcopy(_document(name))
    break_it(doc)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(doc, SCHEMAS[name])
