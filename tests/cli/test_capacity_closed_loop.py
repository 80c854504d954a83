"""``suanli capacity --concurrency`` (a closed loop, as serving benchmarks load an engine) and
``--arrivals even``: the command, its document and its refusals."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from suanli.cli.main import cli as main
from tests.cli.test_capacity_cmd import invoke, invoke_json

CLOSED = ("llama-3.1-8b", "--gpu", "h100", "--concurrency", "32", "--requests", "320")


def test_a_closed_loop_says_so_and_serves_every_request() -> None:
    doc = invoke_json(*CLOSED)
    assert doc["arrivals"] == "closed" and doc["concurrency"] == 32
    assert doc["rate_requests_per_s"] is None and doc["all_at_once"] is False
    assert doc["completed"] == 320
    assert doc["overloaded"] is False  # a closed loop holds its own load
    table = invoke(*CLOSED)
    assert table.exit_code == 0, table.output
    assert "32 clients in a closed loop" in " ".join(table.output.split())


def test_more_clients_wait_longer_for_their_first_token() -> None:
    """Little's law in a closed loop: past the batch the engine holds, more clients only queue,
    so TTFT grows and the served rate does not."""
    few = invoke_json(*CLOSED, "--max-batch", "32")
    many = invoke_json(
        "llama-3.1-8b",
        "--gpu",
        "h100",
        "--concurrency",
        "128",
        "--requests",
        "1280",
        "--max-batch",
        "32",
        "--json",
    )
    assert many["ttft_p50_s"] > 3 * few["ttft_p50_s"]
    assert many["requests_per_s"] == pytest.approx(few["requests_per_s"], rel=0.1)


def test_even_arrivals_are_one_every_interval() -> None:
    doc = invoke_json(
        "llama-3.1-8b", "--gpu", "h100", "--rate", "2", "--arrivals", "even", "--requests", "40"
    )
    assert doc["arrivals"] == "even"
    # Light load, evenly spaced: nobody waits behind anybody.
    assert doc["queue_wait_mean_s"] < 0.05
    assert doc["requests_per_s"] == pytest.approx(2.0, rel=0.1)


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (("--rate", "5"), "not both"),
        (("--duration", "10"), "--requests"),
        (("--arrivals", "bursty"), "drop --arrivals"),
    ],
)
def test_a_closed_loop_refuses_what_it_replaces(extra: tuple[str, ...], message: str) -> None:
    result = CliRunner().invoke(main, ["capacity", *CLOSED, *extra])
    assert result.exit_code == 2, result.output
    assert message in result.output
    assert "Traceback" not in result.output


def test_a_closed_loop_needs_a_deployment_and_a_client() -> None:
    result = CliRunner().invoke(main, ["capacity", "llama-3.1-8b", "--concurrency", "8"])
    assert result.exit_code == 2 and "--gpu" in result.output
    result = CliRunner().invoke(
        main, ["capacity", "llama-3.1-8b", "--gpu", "h100", "--concurrency", "0"]
    )
    assert result.exit_code == 2 and "--concurrency" in result.output
