"""Every ``python`` block of docs/api.md runs, in order, in one namespace (``python skip``
blocks need PyTorch or a GPU and are not run)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

API_MD = Path(__file__).resolve().parent.parent / "docs" / "api.md"
BLOCK = re.compile(r"^```(python[^\n]*)\n(.*?)^```", re.M | re.S)


def test_docs_api_examples_run(capsys: pytest.CaptureFixture[str]) -> None:
    blocks = [code for info, code in BLOCK.findall(API_MD.read_text("utf-8")) if info == "python"]
    assert len(blocks) >= 6
    namespace: dict[str, object] = {}
    for code in blocks:
        exec(compile(code, str(API_MD), "exec"), namespace)
    printed = capsys.readouterr().out
    assert "rtx-4090-24gb" in printed and "cuda-out-of-memory" in printed
