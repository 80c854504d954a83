"""``capacity``: a simulated deployment or a capacity plan, as ``suanli capacity --json``."""

from __future__ import annotations

import json
import math
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from suanli.answers.base import SCHEMA_VERSION, json_schema
from suanli.answers.capacity import CapacityRequest, capacity, clip_to_context
from suanli.answers.capacity_result import CapacityPlan, CapacitySimulation
from suanli.catalog import bundled_gpus, find_gpu
from suanli.cli.capacity import capacity_cmd
from suanli.estimate.device import device_for
from suanli.estimate.inference import inference_perf
from suanli.estimate.serving import Lengths, device_dtype, make_requests
from suanli.estimate.workload import InferWork
from suanli.models.resolve import load_model

TRACE = "arrival_s,prompt_tokens,output_tokens\n0,100,20\n0.2,300,50\n1.0,80,5\n"


def cli_json(*args: str) -> dict[str, Any]:
    result = CliRunner().invoke(capacity_cmd, [*args, "--json"])
    assert result.exit_code == 0, result.output
    doc: dict[str, Any] = json.loads(result.output, parse_constant=pytest.fail)
    return doc


def test_cli_simulation_json_equals_the_answer() -> None:
    args = ("llama-3.1-8b", "--gpu", "h100", "--rate", "10", "--requests", "400")
    args += ("--output-dist", "lognormal", "--price", "2", "--slo-tpot", "0.05")
    answer = capacity(
        CapacityRequest(
            "llama-3.1-8b",
            gpu="h100",
            rate=10,
            requests=400,
            output_dist="lognormal",
            price=2,
            slo_tpot=0.05,
        )
    )
    assert isinstance(answer, CapacitySimulation)
    doc = answer.to_json()
    assert cli_json(*args) == doc
    # The keys of the document before the answer layer, in their order, after schema_version.
    assert list(doc)[:4] == ["schema_version", "model", "rate_requests_per_s", "all_at_once"]
    assert list(doc)[16:25] == [
        "slo_tpot_s",
        "gpu",
        "dispatch",
        "kv_tokens_per_replica",
        "meets_slo",
        "completed",
        "replicas",
        "tp",
        "gpus",
    ]
    assert list(doc)[-6:] == [
        "usd_per_million_tokens",
        "queue_series",
        "assumptions",
        "overloaded",
        "overload",
        "rent",
    ]
    assert doc["overloaded"] is False and doc["overload"] is None
    assert doc["schema_version"] == SCHEMA_VERSION
    assert doc["meets_slo"] is True and doc["gpu"] == "h100-sxm-80gb"
    stats = answer.stats
    assert stats.usd_per_hour == 2
    assert stats.usd_per_million_tokens == pytest.approx(2 / 3600 / stats.tokens_per_s * 1e6)


def test_cli_plan_json_equals_the_answer(tmp_path: Path) -> None:
    trace = tmp_path / "trace.csv"
    trace.write_text(TRACE)
    doc = cli_json(
        "llama-3.1-8b",
        "--arrivals",
        "trace",
        "--trace",
        str(trace),
        "--slo-tpot",
        "0.03",
        "--max-gpus",
        "4",
    )
    # The trace as text answers the same as the trace file.
    answer = capacity(
        CapacityRequest(
            "llama-3.1-8b", arrivals="trace", trace_text=TRACE, slo_tpot=0.03, max_gpus=4
        )
    )
    assert isinstance(answer, CapacityPlan)
    assert doc == answer.to_json()
    assert list(doc)[-2:] == ["max_gpus", "rows"]
    fitting = [r for r in doc["rows"] if r["fits"]]
    lost = [r for r in doc["rows"] if not r["fits"]]
    assert fitting and lost
    assert list(fitting[0])[:12] == [
        "gpu",
        "fits",
        "reason",
        "tp",
        "replicas",
        "gpus",
        "weight_format",
        "simulations",
        "rent",
        "requests",
        "completed",
        "policy",
    ]
    # A GPU without an answer has only the row's own keys, with nulls for the layout.
    assert list(lost[0]) == list(fitting[0])[:9]
    assert lost[0]["tp"] is None and lost[0]["reason"]
    for row in fitting:
        assert row["tpot_p95_s"] <= 0.03 and row["gpus"] == row["tp"] * row["replicas"]


def test_json_schemas_cover_the_documents() -> None:
    sim = capacity(CapacityRequest("llama-3.1-8b", gpu="h100", rate=math.inf, requests=50))
    assert isinstance(sim, CapacitySimulation)
    schema = json_schema(CapacitySimulation)
    assert schema["required"] == list(sim.to_json())
    assert list(schema["properties"]) == list(sim.to_json())
    plan = json_schema(CapacityPlan)
    assert plan["required"][-2:] == ["max_gpus", "rows"]
    row = plan["$defs"]["CapacityPlanRow"]
    assert row["required"] == [
        "gpu",
        "fits",
        "reason",
        "tp",
        "replicas",
        "gpus",
        "weight_format",
        "simulations",
        "rent",
    ]
    assert "ttft_p95_s" in row["properties"]


def test_undefined_numbers_are_none_and_null() -> None:
    """All at once: no rate; one output token: no TPOT. An infinite price is kept in the answer
    (the table shows it) and written as null."""
    at_once = capacity(CapacityRequest("llama-3.1-8b", gpu="h100", rate=math.inf, requests=100))
    assert isinstance(at_once, CapacitySimulation)
    assert at_once.workload.all_at_once and at_once.workload.rate_requests_per_s is None
    one = capacity(
        CapacityRequest("llama-3.1-8b", gpu="h100", rate=5, output=1, requests=50, price=math.inf)
    )
    assert isinstance(one, CapacitySimulation)
    assert one.stats.tpot_p95_s is None and one.stats.ttft_p95_s is not None
    assert one.stats.usd_per_hour == math.inf
    doc = one.to_json()
    assert doc["tpot_p95_s"] is None and doc["usd_per_hour"] is None
    json.dumps(doc, allow_nan=False)


def test_md1_mean_wait() -> None:
    """Batch 1, fixed lengths, Poisson arrivals at half the service rate: the mean wait in queue
    is the M/D/1 value rho S / (2 (1 - rho)) (Pollaczek-Khinchine)."""
    base = CapacityRequest(
        "llama-3.1-8b",
        gpu="h100",
        prompt=256,
        output=64,
        policy="static",
        max_batch=1,
        batch_timeout=0.0,
        seed=3,
    )
    alone = capacity(replace(base, rate=1.0, requests=1))
    assert isinstance(alone, CapacitySimulation) and alone.stats.e2e_mean_s is not None
    service = alone.stats.e2e_mean_s
    n = 60_000
    answer = capacity(replace(base, rate=0.5 / service, requests=n))
    assert isinstance(answer, CapacitySimulation) and answer.stats.queue_wait_mean_s is not None
    # The same arrivals, drawn independently of the answer: the sample's own rate.
    arrivals = make_requests(
        rate=0.5 / service, prompt=Lengths(mean=256), output=Lengths(mean=64), requests=n, seed=3
    ).arrival_s
    rho = (n - 1) / (arrivals[-1] - arrivals[0]) * service
    theory = rho * service / (2 * (1 - rho))
    assert answer.stats.queue_wait_mean_s == pytest.approx(theory, rel=0.05)
    assert answer.stats.gpu_utilization == pytest.approx(rho, rel=0.02)


def test_a_request_alone_matches_the_speed_model() -> None:
    """One request on an idle H100: TTFT and TPOT are the speed estimator's batch-1 figures."""
    answer = capacity(
        CapacityRequest("llama-3.1-8b", gpu="h100", rate=1, requests=1, prompt=1024, output=256)
    )
    assert isinstance(answer, CapacitySimulation)
    spec = load_model("llama-3.1-8b").spec
    h100 = find_gpu("h100-sxm-80gb", bundled_gpus())
    perf = inference_perf(
        spec, InferWork(batch=1, context=1280), device_for(h100, device_dtype("bf16")), 1024, 256
    )
    # The simulator linearises an iteration (closed-form sums over a run of decode steps) with
    # the kernel floors as a fixed term; the speed estimator sums the GEMMs kernel by kernel.
    assert answer.stats.ttft_mean_s == pytest.approx(perf.ttft_s, rel=0.1)
    assert answer.stats.tpot_mean_s == pytest.approx(perf.tpot_s, rel=0.1)


def test_heavy_tails_are_clipped_to_the_context() -> None:
    req = CapacityRequest(
        "llama-3.1-8b",
        gpu="h100",
        rate=2,
        requests=200,
        prompt=60_000,
        prompt_dist="lognormal",
        spread=2,
        output=64,
    )
    answer = capacity(req)
    drawn = make_requests(
        rate=2,
        prompt=Lengths(mean=60_000, dist="lognormal", spread=2),
        output=Lengths(mean=64),
        requests=200,
    )
    context = load_model("llama-3.1-8b").spec.max_position_embeddings
    over = int((drawn.prompt + drawn.output > context).sum())
    assert over > 0 and answer.workload.clipped_requests == over
    clipped, count = clip_to_context(drawn, context)
    assert count == over and int((clipped.prompt + clipped.output).max()) <= context
    assert answer.workload.prompt_tokens_mean == pytest.approx(float(clipped.prompt.mean()))


def test_progress_is_reported() -> None:
    calls: list[tuple[str, int, int]] = []
    capacity(
        CapacityRequest("llama-3.1-8b", gpu="h100", rate=5, requests=300),
        progress=lambda *a: calls.append(a),
    )
    assert calls[0] == ("simulating", 0, 300) and calls[-1] == ("simulating", 300, 300)
    calls.clear()
    plan = capacity(
        CapacityRequest("llama-3.1-8b", rate=5, requests=100, slo_tpot=0.05, max_gpus=2),
        progress=lambda *a: calls.append(a),
    )
    assert isinstance(plan, CapacityPlan)
    assert calls[-1] == ("done", len(plan.rows), len(plan.rows))
    assert {c[0] for c in calls[:-1]} == {r.gpu for r in plan.rows}


@pytest.mark.parametrize(
    ("req", "message"),
    [
        (CapacityRequest("llama-3.1-8b", gpu="h100"), "--rate"),
        (CapacityRequest("llama-3.1-8b", rate=5), "--slo-ttft"),
        (CapacityRequest("llama-3.1-8b", gpu="h100", rate=1, trace_text=TRACE), "--arrivals"),
        (
            CapacityRequest(
                "llama-3.1-8b", gpu="h100", arrivals="trace", trace_text=TRACE, trace_file="x"
            ),
            "not both",
        ),
        (CapacityRequest("llama-3.1-8b", gpu="h100", rate=1, tp=3), "--tp"),
    ],
)
def test_bad_requests_raise_value_error(req: CapacityRequest, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        capacity(req)


def test_an_overloaded_deployment_says_so_with_the_replicas_it_needs() -> None:
    """Twenty requests/s on one L40S in bf16: the engine serves a few per second (each request
    is 1,024 + 256 tokens of an 8B model on 362 dense TFLOP/s), so the queue grows; the answer
    says overloaded and asks for more replicas than it had, and a light load is not flagged."""
    from suanli.answers.capacity import CapacityRequest, capacity

    heavy = capacity(CapacityRequest(model="llama-3.1-8b", gpu="l40s", rate=20, requests=400))
    assert heavy.overloaded and heavy.overload is not None
    # The queue it reports grew: the latencies are the run's, not the deployment's.
    assert max(heavy.queue_series.waiting) > 50
    need = int(heavy.overload.rsplit("about ", 1)[1].split()[0])
    assert need > heavy.replicas
    light = capacity(CapacityRequest(model="llama-3.1-8b", gpu="l40s", rate=1, requests=200))
    assert not light.overloaded and light.overload is None
    assert any("1,024 prompt tokens" in line for line in light.assumptions)
