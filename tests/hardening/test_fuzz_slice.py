"""A bounded slice of benchmarks/fuzz_cli.py in CI: a fixed random sample of its hostile
command lines (numbers, names, configs, grids, catalogs), each within a deadline, all clean:
exit 0 with a finite answer, or exit 2 with one line and no traceback."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest

from ..scripts import load_script


def _harness() -> Any:
    return load_script("benchmarks/fuzz_cli.py")


@pytest.fixture(scope="module")
def harness() -> Any:
    return _harness()


def test_a_sample_of_hostile_command_lines_is_clean(
    harness: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("SUANLI_NO_TRACE", "1")
    monkeypatch.setenv("SUANLI_CACHE", str(tmp_path / "cache"))
    cases = (
        list(harness.number_cases())
        + list(harness.model_cases(tmp_path))
        + list(harness.other_cases(tmp_path))
    )
    assert len(cases) >= 2000
    sample = random.Random(18).sample(cases, 250)
    # Every config class and every catalog case, whatever the sample drew.
    sample += [
        c for c in cases if c[0].startswith(("config nested", "catalog", "stencil", "hostile"))
    ]
    failures = []
    for label, argv in sample:
        kind, detail = harness.run_case(argv, 20.0)
        if kind != "clean":
            failures.append(f"{kind}: {label} {detail}")
    assert not failures, "\n".join(failures[:20])
