"""``pp_schedule`` on the web (issue 41): a layout a schedule cannot run is a 400 with one
sentence; a schedule it can run changes the bubble the answer shows (the command line's exit 2:
tests/cli/test_pp_schedule_cli.py)."""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("fastapi")

BODY = {
    "model": "llama-3.1-8b",
    "task": "pretrain",
    "gpu": "h100-sxm-80gb",
    "gpus": 16,
    "tp": 2,
    "pp": 4,
    "seq": 4096,
    "grad_accum": 16,
    "ignore_fit": True,
}


def test_the_web_refuses_an_odd_dualpipe_and_charges_a_smaller_bubble(client: Any) -> None:
    bad = client.post("/api/perf", json={**BODY, "pp": 1, "gpus": 2, "pp_schedule": "zb-h1"})
    assert bad.status_code == 400 and "pp_schedule zb-h1 needs pp > 1" in bad.json()["error"]
    odd = client.post(
        "/api/perf", json={**BODY, "pp": 3, "tp": 1, "gpus": 6, "pp_schedule": "dualpipe"}
    )
    assert odd.status_code == 400 and "even pp" in odd.json()["error"]
    unknown = client.post("/api/perf", json={**BODY, "pp_schedule": "gpipe"})
    assert 400 <= unknown.status_code < 500
    plain = client.post("/api/perf", json=BODY).json()
    zb = client.post("/api/perf", json={**BODY, "pp_schedule": "zb-h1"}).json()
    assert 0 < zb["breakdown_s"]["bubble"] < plain["breakdown_s"]["bubble"]
