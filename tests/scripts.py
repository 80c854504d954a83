"""Load the repository's scripts (benchmarks/, scripts/, docs/research/) as modules in tests:
they are files, not part of the package, and several tests check what they compute."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[1]


def load_script(relative_path: str) -> ModuleType:
    """The script at ``relative_path`` (from the repository root) as a module named after its
    file, loaded once: it is registered in ``sys.modules`` first, because dataclasses look their
    module up while being built."""
    path = ROOT / relative_path
    name = path.stem
    if name in sys.modules and getattr(sys.modules[name], "__file__", None) == str(path):
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module
