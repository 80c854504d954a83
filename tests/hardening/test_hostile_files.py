"""Files are opened as what they claim to be (issue 39): a FIFO, a device, a symlink to
/dev/zero or an oversized file in a place suanli reads is refused with one sentence (or, in the
exporter's jobs folder, skipped) at once; nothing blocks, nothing reads without end.

Each command runs with a timeout well under what a blocked open would take (for ever).
"""

from __future__ import annotations

import json
import os
import socket
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from suanli.safe_files import UnsafeFileError, open_regular, read_regular_bytes

from ..cli.test_cli import run


def _fifo(folder: Path, name: str) -> Path:
    path = folder / name
    os.mkfifo(path)
    return path


def _zero_link(folder: Path, name: str) -> Path:
    path = folder / name
    path.symlink_to("/dev/zero")
    return path


MAKERS: dict[str, Callable[[Path, str], Path]] = {"fifo": _fifo, "dev-zero": _zero_link}


@pytest.mark.parametrize("kind", list(MAKERS))
def test_the_helper_refuses_at_once(kind: str, tmp_path: Path) -> None:
    path = MAKERS[kind](tmp_path, "x.json")
    start = time.monotonic()
    with pytest.raises(UnsafeFileError, match="not a regular file"):
        open_regular(path, 1 << 20)
    assert time.monotonic() - start < 1.0


def test_the_helper_caps_the_size_and_follows_a_link_to_a_regular_file(tmp_path: Path) -> None:
    big = tmp_path / "big.json"
    big.write_bytes(b"x" * 2000)
    with pytest.raises(UnsafeFileError, match="larger than 1,000 bytes"):
        read_regular_bytes(big, 1000)
    link = tmp_path / "link.json"
    link.symlink_to(big)
    assert read_regular_bytes(link, 4000) == b"x" * 2000
    with pytest.raises(FileNotFoundError):
        read_regular_bytes(tmp_path / "missing", 10)


def _one_sentence(out: object) -> None:
    assert out.returncode == 2, out.stderr  # type: ignore[attr-defined]
    assert "Traceback" not in out.stderr  # type: ignore[attr-defined]
    assert "not a regular file" in out.stderr  # type: ignore[attr-defined]


@pytest.mark.parametrize("kind", list(MAKERS))
def test_a_model_config_that_is_no_file(kind: str, tmp_path: Path) -> None:
    """A config.json that is a FIFO or a device is no config: one sentence, at once."""
    folder = tmp_path / "model"
    folder.mkdir()
    MAKERS[kind](folder, "config.json")
    out = run("model", str(folder))
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert "holds no config.json" in out.stderr


@pytest.mark.parametrize("kind", list(MAKERS))
def test_model_weights_that_are_no_file(kind: str, tmp_path: Path) -> None:
    """A model.safetensors FIFO beside a good config blocked the header reader for ever."""
    from suanli.models.presets import find_preset

    preset = find_preset("qwen2.5-0.5b")
    assert preset is not None
    (tmp_path / "config.json").write_text(json.dumps(preset.config()))
    MAKERS[kind](tmp_path, "model.safetensors")
    _one_sentence(run("model", str(tmp_path)))


@pytest.mark.parametrize("kind", list(MAKERS))
def test_a_log_that_is_no_file(kind: str, tmp_path: Path) -> None:
    path = MAKERS[kind](tmp_path, "train.log")
    _one_sentence(run("explain", "--log", str(path)))


@pytest.mark.parametrize("target", ["/dev/zero", "fifo"])
def test_a_catalog_that_is_no_file(target: str, tmp_path: Path) -> None:
    path = _fifo(tmp_path, "gpus.toml") if target == "fifo" else Path(target)
    _one_sentence(run("card", "4090", "--catalog", str(path)))


def test_a_deeply_nested_catalog_is_one_sentence(tmp_path: Path) -> None:
    path = tmp_path / "deep.toml"
    path.write_text("x = " + "[" * 5000 + "]" * 5000 + "\n")
    out = run("card", "4090", "--catalog", str(path))
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert "nested too deeply" in out.stderr


def test_the_exporters_jobs_folder_skips_what_is_no_report(tmp_path: Path) -> None:
    """A FIFO, a link to /dev/zero and a 1 GB sparse file beside one good report: the good one
    is read, the rest skipped, in well under a second."""
    from suanli.live.jobs import JobReport, read_reports, write_report

    _fifo(tmp_path, "fifo.json")
    _zero_link(tmp_path, "zero.json")
    with open(tmp_path / "huge.json", "wb") as handle:
        handle.truncate(1 << 30)
    good = JobReport(
        job="good",
        rank=0,
        hostname=socket.gethostname(),
        pid=os.getpid(),
        updated_unix_s=time.time(),
        steps=10,
        step_s=0.5,
        data_wait_share=0.1,
    )
    write_report(good, tmp_path)
    start = time.monotonic()
    reports = read_reports(tmp_path)
    assert time.monotonic() - start < 1.0
    assert [r.job for r in reports] == ["good"]
