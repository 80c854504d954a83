"""Every data file the package reads ships with it: each non-Python file under src/suanli
matches a package-data glob of pyproject.toml (an installed copy lacked speed_bands.json)."""

from __future__ import annotations

import fnmatch
from pathlib import Path

import tomllib

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src"


def _globs() -> dict[str, list[str]]:
    data = tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))
    globs: dict[str, list[str]] = data["tool"]["setuptools"]["package-data"]
    return globs


def _shipped(path: Path, globs: dict[str, list[str]]) -> bool:
    for package, patterns in globs.items():
        base = SRC / package.replace(".", "/")
        if base not in path.parents:
            continue
        rel = path.relative_to(base).as_posix()
        # setuptools globs do not cross directories: "static/*" is one level.
        if any(fnmatch.fnmatch(rel, p) and rel.count("/") == p.count("/") for p in patterns):
            return True
    return False


def test_every_data_file_under_the_package_is_shipped() -> None:
    globs = _globs()
    missing = [
        p.relative_to(ROOT).as_posix()
        for p in sorted(SRC.joinpath("suanli").rglob("*"))
        if p.is_file()
        and p.suffix not in (".py", ".pyc")
        and "__pycache__" not in p.parts
        and not _shipped(p, globs)
    ]
    assert not missing, f"not in [tool.setuptools.package-data]: {missing}"


def test_the_check_would_catch_a_file_outside_the_globs() -> None:
    globs = {"suanli.catalog": ["data/*.toml"]}
    assert not _shipped(SRC / "suanli/catalog/data/speed_bands.json", globs)
    assert _shipped(SRC / "suanli/catalog/data/gpus.toml", globs)
