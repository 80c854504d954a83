"""The layering rules of docs/architecture.md, checked on the source itself.

Layers only look down (:data:`LAYERS`: leaf modules -> models, catalog -> diffusion -> estimate
-> plan -> live -> answers -> views -> cli | web | API): no import, lazy ones inside functions
included, goes from a module to a higher layer. No module outside ``cli/`` imports
``suanli.cli``; ``web/`` and ``cli/`` never import each other; the answers import neither; no
private name crosses a module boundary; no import cycle; no module grows past the size a reader
can hold. The results and answers of the estimators, the plan and the answers are built by keyword.
"""

from __future__ import annotations

import ast
import dataclasses
import importlib
import pkgutil
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
    return _imports_in(name, path.read_text(encoding="utf-8"), path.name == "__init__.py")


def _imports_in(name: str, source: str, is_package: bool = False) -> list[tuple[str, str]]:
    """:func:`_imports` of the source text of module ``name``."""
    package = name if is_package else name.rpartition(".")[0]
    found: list[tuple[str, str]] = []
    for node in ast.walk(ast.parse(source)):
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


#: The layers, lowest first. A module belongs to the layer of the longest prefix that names it
#: (``suanli`` itself, the Python API, only by its own name) and may import modules of its own
#: layer and of those below, never of one above (docs/architecture.md draws them).
LAYERS: list[tuple[str, tuple[str, ...]]] = [
    (
        "leaf modules",
        (
            "suanli.units",
            "suanli.errors",
            "suanli.limits",
            "suanli.i18n",
            "suanli.paths",
            "suanli.printable",
            "suanli.safe_files",
            "suanli.hashing",
            "suanli.log",
        ),
    ),
    ("models and catalog: data, read and validated", ("suanli.models", "suanli.catalog")),
    # Pipelines are walked from model configs (models.hub); models/ never asks for them.
    ("diffusion: text-to-image pipelines", ("suanli.diffusion",)),
    # estimate/device.py assembles the estimators' Device from catalog rows.
    ("estimators", ("suanli.estimate",)),
    ("planning", ("suanli.plan",)),
    # The impure edge: devices, runs, measurements; it compares them with the estimators and the
    # plan's remedy chain (live/autopsy), and only the answers import it.
    ("live", ("suanli.live",)),
    ("answers", ("suanli.answers",)),
    ("views of answers", ("suanli.views",)),
    ("front-ends", ("suanli.cli", "suanli.web", "suanli", "suanli.__main__")),
]


def layer_of(module: str) -> int | None:
    """The index in :data:`LAYERS` of ``module``'s layer, None when no layer names it."""
    best: tuple[int, int] | None = None
    for index, (_, prefixes) in enumerate(LAYERS):
        for prefix in prefixes:
            named = module == prefix or (prefix != "suanli" and module.startswith(prefix + "."))
            if named and (best is None or len(prefix) > best[1]):
                best = (index, len(prefix))
    return None if best is None else best[0]


def upward_imports(edges: dict[str, set[str]]) -> list[tuple[str, str]]:
    """(importer, imported) for every import from a module into a higher layer than its own."""
    bad = []
    for name, targets in sorted(edges.items()):
        for target in sorted(targets):
            low, high = layer_of(name), layer_of(target)
            if low is not None and high is not None and high > low:
                bad.append((name, target))
    return bad


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


def test_every_module_has_a_layer() -> None:
    # A new package or top-level module must be placed in LAYERS before the check covers it.
    assert [name for name in MODULES if layer_of(name) is None] == []
    assert [t for ts in EDGES.values() for t in ts if layer_of(t) is None] == []


def test_layers_only_look_down() -> None:
    assert upward_imports(EDGES) == []


def test_the_layer_check_catches_a_planted_upward_import() -> None:
    # The catalog building an estimator object: the edge this check was written against.
    planted = {
        **EDGES,
        "suanli.catalog.gpu": EDGES["suanli.catalog.gpu"] | {"suanli.estimate.perf"},
    }
    assert upward_imports(planted) == [("suanli.catalog.gpu", "suanli.estimate.perf")]
    # A lazy import inside a function counts as much as one at the top.
    lazy = "def emit():\n    from suanli.answers.plan import PlanAnswer\n    return PlanAnswer\n"
    targets = {_target(m, n) for m, n in _imports_in("suanli.plan.search", lazy)}
    assert upward_imports({"suanli.plan.search": targets}) == [
        ("suanli.plan.search", "suanli.answers.plan")
    ]
    # Down and sideways are fine: answers -> live, models <-> catalog, cli -> the API package.
    allowed = {
        "suanli.answers.doctor": {"suanli.live.diagnosis"},
        "suanli.models.resolve": {"suanli.catalog.formats"},
        "suanli.catalog.formats": {"suanli.models.spec"},
        "suanli.cli.main": {"suanli"},
    }
    assert upward_imports(allowed) == []
    # The API package is a front-end: a module below it importing it is caught.
    assert upward_imports({"suanli.estimate.perf": {"suanli"}}) == [
        ("suanli.estimate.perf", "suanli")
    ]


#: The layers whose dataclasses are results, answers or the estimators' inputs.
KEYWORD_PACKAGES = ("suanli.answers", "suanli.estimate", "suanli.plan")

#: Dataclasses of those layers that may be built positionally, with the reason. Besides these,
#: the requests of the answers (``*Request`` in ``suanli.answers``): the public API's entry
#: points, written ``suanli.MemoryRequest("llama-3.1-8b", work, gpu="4090")`` in docs/api.md
#: and the README, so a user's script keeps working.
POSITIONAL_ALLOWED = {
    # docs/stencil.md builds the grid as StencilWork(1024, 1024, 1024, time_steps=..., gpus=...).
    "suanli.estimate.stencil.StencilWork": "the grid's nx, ny, nz, in that order",
}


def _dataclasses_of(packages: tuple[str, ...]) -> dict[str, type]:
    """Every dataclass defined in ``packages`` and their submodules, by qualified name."""
    found: dict[str, type] = {}
    for package in packages:
        root = importlib.import_module(package)
        names = [package] + [m.name for m in pkgutil.walk_packages(root.__path__, package + ".")]
        for name in names:
            for obj in vars(importlib.import_module(name)).values():
                if (
                    isinstance(obj, type)
                    and dataclasses.is_dataclass(obj)
                    and obj.__module__ == name
                ):
                    found[f"{name}.{obj.__qualname__}"] = obj
    return found


def positional_dataclasses(classes: dict[str, type]) -> list[str]:
    """The dataclasses with a field that can be passed by position (``kw_only`` not set)."""
    return sorted(
        name
        for name, cls in classes.items()
        if any(f.init and not f.kw_only for f in dataclasses.fields(cls))
    )


def test_results_and_answers_are_built_by_keyword() -> None:
    """A result or an answer built positionally breaks silently when a field is added or moved
    (two floats swapped still type-check); by keyword, it fails where it is built."""
    classes = _dataclasses_of(KEYWORD_PACKAGES)
    assert len(classes) > 100  # the walk sees the layers
    requests = {
        name
        for name, cls in classes.items()
        if name.startswith("suanli.answers.") and cls.__name__.endswith("Request")
    }
    # The exemption is for the questions only: nothing named a request is an answer.
    from suanli.answers.base import Answer

    assert not [name for name in requests if issubclass(classes[name], Answer)]
    assert set(POSITIONAL_ALLOWED) <= set(classes)
    allowed = requests | set(POSITIONAL_ALLOWED)
    assert [name for name in positional_dataclasses(classes) if name not in allowed] == []


def test_the_keyword_check_catches_a_positional_dataclass() -> None:
    @dataclasses.dataclass(frozen=True)
    class Loose:
        seconds: float

    @dataclasses.dataclass(frozen=True, kw_only=True)
    class Strict:
        seconds: float

    # A kw_only subclass of a positional dataclass still takes the base's fields by position.
    @dataclasses.dataclass(frozen=True, kw_only=True)
    class Derived(Loose):
        bytes_per_s: float

    found = positional_dataclasses({"loose": Loose, "strict": Strict, "derived": Derived})
    assert found == ["derived", "loose"]
