"""``etp`` on the web (issue 41): the command line's ``--etp`` (tests/cli/test_etp_cli.py), a
degree that does not divide ``tp`` a 400 with one sentence."""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("fastapi")

BODY = {
    "model": "qwen3-30b-a3b",
    "task": "pretrain",
    "gpu": "h100-sxm-80gb",
    "tp": 2,
    "dp": 8,
    "ep": 8,
    "sp": True,
    "seq": 4096,
    "ignore_fit": True,
}


def test_the_web_refuses_a_bad_etp_and_answers_the_cli_s_figures(client: Any) -> None:
    bad = client.post("/api/perf", json={**BODY, "etp": 3})
    assert bad.status_code == 400 and "etp 3 does not divide" in bad.json()["error"]
    negative = client.post("/api/perf", json={**BODY, "etp": -1})
    assert 400 <= negative.status_code < 500
    split = client.post("/api/perf", json=BODY).json()
    whole = client.post("/api/perf", json={**BODY, "etp": 1}).json()
    a2a = "expert_all_to_all"
    assert whole["communication_s"][a2a] < split["communication_s"][a2a]
