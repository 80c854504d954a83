"""Packaging conventions users and tools expect (issue 22): a typed package, one version source,
and a ``__main__`` that runs nothing when imported."""

from __future__ import annotations

import importlib
import subprocess
import sys
from pathlib import Path

import tomllib

import suanli

ROOT = Path(__file__).resolve().parent.parent


def test_the_package_is_marked_typed_and_ships_the_marker() -> None:
    """PEP 561: py.typed sits in the package and the build includes it."""
    assert (ROOT / "src" / "suanli" / "py.typed").is_file()
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert "py.typed" in config["tool"]["setuptools"]["package-data"]["suanli"]


def test_the_version_has_one_source() -> None:
    """pyproject reads the version from suanli.__version__; no second literal exists."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert "version" not in config["project"]
    assert "version" in config["project"]["dynamic"]
    attr = config["tool"]["setuptools"]["dynamic"]["version"]["attr"]
    assert attr == "suanli.__version__"
    out = subprocess.run(
        [sys.executable, "-m", "suanli", "--version"], capture_output=True, text=True, check=True
    )
    assert suanli.__version__ in out.stdout


def test_importing_main_runs_nothing(capsys: object) -> None:
    """``import suanli.__main__`` (as tools and multiprocessing's spawn do) must not start the CLI:
    before the guard it parsed pytest's own argv and exited."""
    sys.modules.pop("suanli.__main__", None)
    module = importlib.import_module("suanli.__main__")
    assert callable(module.main)


def test_the_test_tools_are_a_dependency_group_not_a_user_extra() -> None:
    """PEP 735: pytest, ruff, mypy... live in [dependency-groups] test (no `suanli[test]` extra
    for users to stumble on); the test command installs the lock made from that group
    (tests/test_lock.py)."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert "test" not in config["project"]["optional-dependencies"]
    group = " ".join(config["dependency-groups"]["test"])
    for tool in ("pytest", "ruff", "mypy", "babel", "hypothesis"):
        assert tool in group


def test_the_default_model_is_declared_once() -> None:
    """Issue 40: the default model was written in 8 places. It is models.presets.DEFAULT_MODEL;
    the only other mention is the card command's list of popular models."""
    from suanli.models.presets import DEFAULT_MODEL, find_preset

    assert find_preset(DEFAULT_MODEL) is not None
    quoted = f'"{DEFAULT_MODEL}"'
    found = sorted(
        str(path.relative_to(ROOT))
        for path in (ROOT / "src" / "suanli").rglob("*.py")
        if quoted in path.read_text(encoding="utf-8")
    )
    assert found == ["src/suanli/answers/card.py", "src/suanli/models/presets.py"]
