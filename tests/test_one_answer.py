"""One question, one answer: "does this job fit this card, in how much memory, how fast?" asked
of every view — ``suanli mem`` and ``suanli perf`` (--json), ``suanli card``, ``suanli plan``, the
page's API (POST /api/memory, /api/perf) and the Python API — gets the same verdict, the same
bytes and the same tokens/s, with every option left at its default.

The views once disagreed: ``card`` assumed gradient checkpointing while ``mem`` assumed none, so
a LoRA of Llama-3.1-8B on a 24 GB card both fitted (20.92 GiB) and did not (29.80 GiB).
"""

from __future__ import annotations

import json
from functools import cache
from typing import Any

import pytest
from click.testing import CliRunner

MODELS = ("qwen3-4b", "llama-3.1-8b", "qwen3-14b", "qwen3-32b")
TASKS = ("lora", "qlora", "full")
CARDS = ("rtx-4090", "h100")
#: 24 (model, task, card) questions: small and large models, each fine-tune, both sides of
#: the fit line on a consumer and a datacentre card.
QUESTIONS = [(m, t, g) for m in MODELS for t in TASKS for g in CARDS]


@cache
def _card(gpu: str) -> Any:
    from suanli.answers.card import CardRequest, card

    return card(CardRequest(gpu=gpu, presets=MODELS))


@cache
def _client() -> Any:
    from fastapi.testclient import TestClient

    from suanli.web.app import create_app

    return TestClient(create_app(allow_hub=False), raise_server_exceptions=False)


def _cli(*args: str) -> tuple[int, dict[str, Any] | None]:
    from suanli.cli.main import cli

    result = CliRunner().invoke(cli, [*args, "--json"])
    doc = json.loads(result.output) if result.exit_code == 0 else None
    return result.exit_code, doc


def _card_cell(model: str, task: str, gpu: str) -> tuple[bool, float | None]:
    answer = _card(gpu)
    job = next(i for i, j in enumerate(answer.jobs) if j.task == task)
    assert answer.jobs[job].tokens == 2048  # the workload's default sequence
    row = next(r for r in answer.models if r.model == model)
    return row.fits[job], row.tokens_per_s[job]


def test_the_questions_cover_both_verdicts() -> None:
    """The set is no use if every job fits (or none does)."""
    from suanli.answers.memory import MemoryRequest, memory

    verdicts = {
        memory(MemoryRequest(model=m, work=_work(t), gpu=g)).fit.fits  # type: ignore[union-attr]
        for m, t, g in QUESTIONS
    }
    assert verdicts == {True, False}
    assert len(QUESTIONS) >= 20


def _work(task: str) -> Any:
    from suanli.answers.request import WorkRequest

    return WorkRequest(task=task)


@pytest.mark.parametrize(("model", "task", "gpu"), QUESTIONS)
def test_every_view_gives_the_same_verdict_memory_and_speed(
    model: str, task: str, gpu: str
) -> None:
    from suanli.answers.memory import MemoryRequest, memory
    from suanli.answers.perf import PerfRequest, TrainPerfAnswer, perf

    library = memory(MemoryRequest(model=model, work=_work(task), gpu=gpu))
    assert library.fit is not None
    fits = library.fit.fits
    code, cli_mem = _cli("mem", model, "--task", task, "--gpu", gpu)
    assert code == 0 and cli_mem is not None
    web_mem = _client().post("/api/memory", json={"model": model, "task": task, "gpu": gpu})
    assert web_mem.status_code == 200, web_mem.text
    for doc in (cli_mem, web_mem.json()):
        assert doc["total_bytes"] == library.total_bytes
        assert doc["fit"]["fits"] is fits
    card_fits, card_speed = _card_cell(model, task, gpu)
    assert card_fits is fits
    # When it does not fit, mem says what to change, and that change fits.
    assert (library.to_fit is None) is fits
    if library.to_fit is not None and library.to_fit.fits:
        assert library.to_fit.memory_bytes <= library.fit.gpu_memory_bytes

    code, cli_perf = _cli("perf", model, "--task", task, "--gpu", gpu)
    web_perf = _client().post("/api/perf", json={"model": model, "task": task, "gpu": gpu})
    if not fits:
        # A speed for a job that cannot run is refused everywhere (not a number to bet on).
        assert code == 2 and web_perf.status_code == 400 and card_speed is None
        return
    speed = perf(PerfRequest(model=model, work=_work(task), gpu=gpu))
    assert isinstance(speed, TrainPerfAnswer)
    assert code == 0 and cli_perf is not None and web_perf.status_code == 200
    for tokens_per_s in (cli_perf["tokens_per_s"], web_perf.json()["tokens_per_s"], card_speed):
        assert tokens_per_s == pytest.approx(speed.tokens_per_s, rel=1e-9)


@pytest.mark.parametrize(("model", "task", "gpu"), QUESTIONS[::3])
def test_plan_on_one_card_agrees_and_its_layout_reproduces_in_mem(
    model: str, task: str, gpu: str
) -> None:
    """``plan`` searches more layouts than the defaults (micro-batch, recomputation), so it
    can fit where the defaults do not only through a change mem names; where it fits, its
    layout asked of ``mem`` gives the memory plan reported."""
    from suanli.answers.memory import MemoryRequest, memory
    from suanli.answers.plan import PlanRequest, plan

    answer = plan(PlanRequest(model=model, task=task, gpus=(gpu,), max_gpus=1))
    row = answer.rows[0]
    default = memory(MemoryRequest(model=model, work=_work(task), gpu=gpu))
    assert default.fit is not None
    if default.fit.fits:
        assert row.fits
    if not row.fits:
        assert not default.fit.fits
        return
    options = row.layout.options.split()  # type: ignore[union-attr]
    code, doc = _cli("mem", model, "--task", task, "--seq", str(answer.seq), *options, "--gpu", gpu)
    assert code == 0 and doc is not None
    assert doc["fit"]["fits"] is True
    assert doc["total_bytes"] == pytest.approx(row.layout.memory_bytes, rel=1e-6)  # type: ignore[union-attr]
