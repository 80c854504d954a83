"""The layering rules of docs/architecture.md, checked on the source itself.

Layers only look down (data -> models/catalog -> estimate/plan -> answers -> cli | web | API):
no module outside ``cli/`` imports ``suanli.cli``; ``web/`` and ``cli/`` never import each
other; the answers import neither; no private name crosses a module boundary; no import cycle;
no module grows past the size a reader can hold.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parent.parent / "src"
#: The largest source module allowed (lines); docs/architecture.md says why.
MAX_LINES = 800


def _modules() -> dict[str, Path]:
    out = {}
    for path in sorted((SRC / "suanli").rglob("*.py")):
        parts = path.relative_to(SRC).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        out[name] = path
    return out


MODULES = _modules()


def _imports(name: str, path: Path) -> list[tuple[str, str]]:
    """(imported module, imported name or '') for every import, lazy ones included."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: list[tuple[str, str]] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            found += [(module, alias.name) for alias in node.names]
        elif isinstance(node, ast.Import):
            found += [(alias.name, "") for alias in node.names]
    return [(m, n) for m, n in found if m == "suanli" or m.startswith("suanli.")]


def _target(module: str, name: str) -> str:
    """The module an import lands in (``from pkg import submodule`` is the submodule)."""
    full = f"{module}.{name}" if name else module
    return full if full in MODULES else module


EDGES = {
    name: {_target(m, n) for m, n in _imports(name, path)} - {name}
    for name, path in MODULES.items()
}


def test_the_checker_sees_the_package() -> None:
    assert "suanli.answers.memory" in MODULES and "suanli.cli.main" in MODULES
    assert "suanli.answers.request" in EDGES["suanli.answers.memory"]


@pytest.mark.parametrize("layer", ["cli", "web"])
def test_front_ends_do_not_import_each_other(layer: str) -> None:
    other = "web" if layer == "cli" else "cli"
    bad = [
        (name, target)
        for name, targets in EDGES.items()
        if name.startswith(f"suanli.{layer}")
        for target in targets
        if target.startswith(f"suanli.{other}")
    ]
    assert bad == []


def test_only_the_cli_imports_the_cli() -> None:
    bad = [
        (name, target)
        for name, targets in EDGES.items()
        if not name.startswith("suanli.cli") and name != "suanli.__main__"
        for target in targets
        if target.startswith("suanli.cli")
    ]
    assert bad == []


def test_answers_use_no_front_end_library() -> None:
    for name, path in MODULES.items():
        if not name.startswith("suanli.answers"):
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                roots = (
                    [a.name.split(".")[0] for a in node.names]
                    if isinstance(node, ast.Import)
                    else [(node.module or "").split(".")[0]]
                )
                assert not {"click", "rich", "fastapi", "starlette"} & set(roots), name
        assert not any(t.startswith(("suanli.cli", "suanli.web")) for t in EDGES[name]), name


def test_no_private_name_crosses_a_module() -> None:
    bad = [
        (name, module, imported)
        for name, path in MODULES.items()
        for module, imported in _imports(name, path)
        if imported.startswith("_")
        and not imported.startswith("__")
        and module != name
        # gettext's convention: suanli.i18n._ is the public "translate this" function.
        and (module, imported) != ("suanli.i18n", "_")
    ]
    assert bad == []


def test_no_import_cycle() -> None:
    # Tarjan's strongly connected components over every import, lazy ones included.
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in EDGES.get(v, ()):
            if w not in MODULES:
                continue
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for module in MODULES:
        if module not in index:
            visit(module)
    assert cycles == []


def test_no_module_is_too_long() -> None:
    long = {
        name: n
        for name, path in MODULES.items()
        if (n := len(path.read_text(encoding="utf-8").splitlines())) > MAX_LINES
    }
    assert long == {}
