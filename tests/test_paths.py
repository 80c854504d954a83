"""Where suanli keeps its files: the platform's directories, each overridable by SUANLI_*."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from suanli import paths

DIRS = [
    ("SUANLI_CONFIG", "XDG_CONFIG_HOME", paths.config_dir),
    ("SUANLI_CACHE", "XDG_CACHE_HOME", paths.cache_dir),
    ("SUANLI_STATE", "XDG_STATE_HOME", paths.state_dir),
]


@pytest.mark.parametrize(("variable", "xdg", "where"), DIRS)
def test_a_suanli_variable_overrides_the_directory(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, variable: str, xdg: str, where: object
) -> None:
    monkeypatch.setenv(xdg, str(tmp_path / "xdg"))
    monkeypatch.setenv(variable, str(tmp_path / "mine"))
    assert where() == tmp_path / "mine"  # type: ignore[operator]


@pytest.mark.parametrize(("variable", "xdg", "where"), DIRS)
def test_an_empty_suanli_variable_counts_as_unset(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, variable: str, xdg: str, where: object
) -> None:
    monkeypatch.setenv(variable, "")
    monkeypatch.setenv(xdg, str(tmp_path / "xdg"))
    assert where() != Path("")  # type: ignore[operator]
    assert where().name == "suanli"  # type: ignore[operator]


def test_a_tilde_in_an_override_is_the_home(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("SUANLI_CACHE", "~/c")
    assert paths.cache_dir() == tmp_path / "c"


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the XDG directories are Linux's")
@pytest.mark.parametrize(("variable", "xdg", "where"), DIRS)
def test_linux_follows_the_xdg_base_directories(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, variable: str, xdg: str, where: object
) -> None:
    monkeypatch.delenv(variable, raising=False)
    monkeypatch.setenv(xdg, str(tmp_path / "xdg"))
    assert where() == tmp_path / "xdg" / "suanli"  # type: ignore[operator]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the XDG defaults are Linux's")
def test_linux_defaults_are_under_the_home(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    for variable, xdg, _ in DIRS:
        monkeypatch.delenv(variable, raising=False)
        monkeypatch.delenv(xdg, raising=False)
    assert paths.config_dir() == tmp_path / ".config" / "suanli"
    assert paths.cache_dir() == tmp_path / ".cache" / "suanli"
    assert paths.state_dir() == tmp_path / ".local" / "state" / "suanli"


def test_calibrations_live_in_the_config_directory(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("SUANLI_CONFIG", str(tmp_path))
    assert paths.calibration_dir() == tmp_path / "calibration"


def test_a_device_profile_stays_in_the_calibration_directory(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("SUANLI_CONFIG", str(tmp_path))
    assert paths.local_calibration_path("h100-sxm-80gb") == (
        tmp_path / "calibration" / "h100-sxm-80gb.toml"
    )
    # A device id is not a path: separators and parent links become dashes.
    assert paths.local_calibration_path("../../etc/passwd").parent == tmp_path / "calibration"
    assert paths.local_calibration_path("///") == tmp_path / "calibration" / "device.toml"
