"""``suanli serve``: loopback by default, a warning otherwise, exit 1 without the web extra."""

from __future__ import annotations

import importlib
import sys
import threading
import webbrowser
from typing import Any

import pytest
from click.testing import CliRunner

from suanli.cli.main import MissingExtra, SuanliGroup
from suanli.cli.serve import is_loopback, serve_cmd


def group() -> SuanliGroup:
    g = SuanliGroup(name="suanli")
    g.add_command(serve_cmd)
    return g


@pytest.mark.parametrize(
    ("host", "loopback"),
    [
        ("127.0.0.1", True),
        ("127.0.0.2", True),
        ("localhost", True),
        ("::1", True),
        ("[::1]", True),
        ("0.0.0.0", False),
        ("::", False),
        ("192.168.1.10", False),
        ("example.org", False),
    ],
)
def test_is_loopback(host: str, loopback: bool) -> None:
    assert is_loopback(host) is loopback


def test_without_the_web_extra_it_says_how_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "uvicorn", None)  # import uvicorn -> ImportError
    result = CliRunner().invoke(group(), ["serve"])
    assert result.exit_code == 1
    assert result.stderr.strip() == (
        "error: suanli serve needs the web extra: pip install 'suanli[web]'"
    )
    direct = CliRunner().invoke(serve_cmd, [])
    assert isinstance(direct.exception, MissingExtra)


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    pytest.importorskip("fastapi", reason="the web extra (fastapi) is not installed")
    uvicorn = pytest.importorskip("uvicorn", reason="the web extra (uvicorn) is not installed")
    seen: dict[str, Any] = {"opened": []}

    def fake_run(app: Any, **kwargs: Any) -> None:
        seen["app"] = app
        seen.update(kwargs)

    class NowTimer:
        def __init__(self, delay: float, fn: Any, args: tuple[Any, ...] = ()) -> None:
            self.fn, self.args = fn, args

        def start(self) -> None:
            self.fn(*self.args)

    monkeypatch.setattr(uvicorn, "run", fake_run)
    monkeypatch.setattr(threading, "Timer", NowTimer)
    # serve sets the allowed hosts in os.environ: restored after the test, for the API tests
    monkeypatch.delenv("SUANLI_ALLOW_HOSTS", raising=False)
    monkeypatch.setattr(webbrowser, "open", lambda url: seen["opened"].append(url))
    return seen


def test_defaults_to_loopback_without_a_warning(calls: dict[str, Any]) -> None:
    result = CliRunner().invoke(group(), ["serve"])
    assert result.exit_code == 0, result.output
    assert calls["host"] == "127.0.0.1" and calls["port"] == 8000
    assert "warning" not in result.stderr
    assert "http://127.0.0.1:8000/" in result.stderr
    assert calls["opened"] == []
    assert calls["app"] == "suanli.web.app:create_app" and calls["factory"] is True
    module, _, factory = calls["app"].partition(":")
    assert getattr(importlib.import_module(module), factory)().title == "suanli"
    module, _, protocol = calls["http"].partition(":")  # malformed HTTP gets the JSON error
    assert getattr(importlib.import_module(module), protocol).__name__ == "JSONErrorH11Protocol"


def test_other_hosts_warn_and_open_opens(calls: dict[str, Any]) -> None:
    result = CliRunner().invoke(group(), ["serve", "--host", "0.0.0.0", "--port", "9123", "--open"])
    assert result.exit_code == 0, result.output
    assert calls["host"] == "0.0.0.0" and calls["port"] == 9123
    assert "warning: listening on 0.0.0.0, not loopback" in result.stderr
    assert calls["opened"] == ["http://127.0.0.1:9123/"]


def test_bad_port_is_a_usage_error() -> None:
    result = CliRunner().invoke(group(), ["serve", "--port", "70000"])
    assert result.exit_code == 2
    assert "port" in result.stderr
