"""Shared by the web API tests: the CLI's JSON for the same question, the one-sentence 4xx
check, and the key-for-key comparison of an API document with the CLI's."""

from __future__ import annotations

import json
from typing import Any

import pytest

from ..cli.test_cli import run


def cli_json(*args: str) -> Any:
    out = run(*args, "--json")
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def assert_one_sentence(response: Any, status: int | tuple[int, ...]) -> str:
    statuses = status if isinstance(status, tuple) else (status,)
    assert response.status_code in statuses, (response.status_code, response.text)
    assert 400 <= response.status_code < 500
    body = response.json()
    assert set(body) == {"error"}, body
    message = body["error"]
    assert isinstance(message, str) and message.strip()
    assert "\n" not in message and "Traceback" not in message and len(message) <= 400
    return message


def same(api: Any, cli: Any) -> None:
    """The API document holds the CLI's, key for key (the API may add keys)."""
    if isinstance(cli, dict):
        for key, value in cli.items():
            assert key in api, key
            same(api[key], value)
    elif isinstance(cli, list):
        assert len(api) == len(cli)
        for a, c in zip(api, cli, strict=True):
            same(a, c)
    elif isinstance(cli, float):
        assert api == pytest.approx(cli, rel=1e-12, abs=0)
    else:
        assert api == cli
