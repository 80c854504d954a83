"""Every environment variable suanli reads is in the README's table (and the Chinese one's).

The reads are found in the source: ``os.environ.get(K)``, ``os.environ[K]``, ``os.getenv(K)``,
``K in os.environ`` and the same on a name bound to ``os.environ`` (``env.get(K)``), where ``K``
is a string, a module constant, a loop over strings, or a parameter every caller passes a string.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SRC = ROOT / "src" / "suanli"
#: A table row's first cell holding only `NAME`s (several: `A`, `B` or `A`、`B`).
_ROW = re.compile(r"^\|\s*(`[A-Z_][A-Z0-9_]*`(?:\s*[,、]\s*`[A-Z_][A-Z0-9_]*`)*)\s*\|")


def _module_constants() -> dict[str, set[str]]:
    """Every module-level ``NAME = "TEXT"`` in the package, by name."""
    out: dict[str, set[str]] = {}
    for path in SRC.rglob("*.py"):
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            target = node.target if isinstance(node, ast.AnnAssign) else None
            if isinstance(node, ast.Assign) and len(node.targets) == 1:
                target = node.targets[0]
            value = getattr(node, "value", None)
            if (
                isinstance(target, ast.Name)
                and isinstance(value, ast.Constant)
                and isinstance(value.value, str)
            ):
                out.setdefault(target.id, set()).add(value.value)
    return out


CONSTANTS = _module_constants()


def _is_environ(node: ast.AST, env_names: set[str]) -> bool:
    if isinstance(node, ast.Attribute) and node.attr == "environ":
        return True
    return isinstance(node, ast.Name) and node.id in env_names


def _parents(tree: ast.AST) -> dict[ast.AST, ast.AST]:
    return {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}


def _strings(node: ast.AST) -> set[str] | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return {node.value}
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        found = [_strings(e) for e in node.elts]
        if all(f is not None for f in found):
            return set().union(*found)  # type: ignore[arg-type]
    return None


def _resolve(key: ast.AST, tree: ast.AST, parents: dict[ast.AST, ast.AST]) -> set[str] | None:
    """The names ``key`` can hold, or None when the source does not say."""
    direct = _strings(key)
    if direct is not None or not isinstance(key, ast.Name):
        return direct
    node: ast.AST | None = key
    while node is not None:  # a loop over strings, or a parameter of the enclosing function
        node = parents.get(node)
        if (
            isinstance(node, ast.For)
            and isinstance(node.target, ast.Name)
            and node.target.id == key.id
        ):
            return _strings(node.iter)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            names = [a.arg for a in node.args.args]
            if key.id in names:
                return _callers_pass(node.name, names.index(key.id), tree)
    if key.id in CONSTANTS:
        return CONSTANTS[key.id]
    return None


def _callers_pass(function: str, index: int, tree: ast.AST) -> set[str] | None:
    found: set[str] = set()
    for call in ast.walk(tree):
        if isinstance(call, ast.Call) and getattr(call.func, "id", None) == function:
            if len(call.args) <= index:
                return None
            value = _strings(call.args[index])
            if value is None:
                return None
            found |= value
    return found or None


def environment_reads() -> tuple[dict[str, set[str]], list[str]]:
    """(variable -> modules reading it, reads whose variable the source does not name)."""
    reads: dict[str, set[str]] = {}
    unknown: list[str] = []
    for path in sorted(SRC.rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        if "environ" not in text and "getenv" not in text:
            continue
        tree = ast.parse(text)
        parents = _parents(tree)
        # Names bound to os.environ (``env = os.environ if environ is None else environ``); a
        # WSGI ``environ`` argument is a request, not the process environment.
        env_names = {
            t.id
            for node in ast.walk(tree)
            if isinstance(node, ast.Assign)
            and any(_is_environ(n, set()) for n in ast.walk(node.value))
            for t in node.targets
            if isinstance(t, ast.Name)
        }
        keys: list[ast.AST] = []
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and node.args:
                func = node.func
                if isinstance(func, ast.Attribute) and (
                    (
                        func.attr in ("get", "pop", "setdefault")
                        and _is_environ(func.value, env_names)
                    )
                    or func.attr == "getenv"
                ):
                    keys.append(node.args[0])
            elif isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Load):
                if _is_environ(node.value, env_names):
                    keys.append(node.slice)
            elif (
                isinstance(node, ast.Compare)
                and len(node.ops) == 1
                and isinstance(node.ops[0], (ast.In, ast.NotIn))
                and _is_environ(node.comparators[0], env_names)
            ):
                keys.append(node.left)
        rel = str(path.relative_to(ROOT))
        for key in keys:
            names = _resolve(key, tree, parents)
            if names is None:
                unknown.append(f"{rel}:{getattr(key, 'lineno', '?')}")
            else:
                for name in names:
                    reads.setdefault(name, set()).add(rel)
    return reads, unknown


def table_names(readme: Path) -> set[str]:
    """The variables named in the first column of the README's environment table."""
    names: set[str] = set()
    for line in readme.read_text(encoding="utf-8").splitlines():
        row = _ROW.match(line)
        if row:
            names |= set(re.findall(r"`([A-Z_][A-Z0-9_]*)`", row.group(1)))
    return names


def test_the_scanner_finds_reads_it_should() -> None:
    reads, _ = environment_reads()
    for name in ("SUANLI_LANG", "SUANLI_LOG", "SUANLI_CONFIG", "SUANLI_CATALOG", "LC_ALL"):
        assert name in reads, name


def test_every_variable_read_is_named_by_the_source() -> None:
    _, unknown = environment_reads()
    assert not unknown, "use a constant or a string for the variable's name: " + ", ".join(unknown)


def test_every_variable_read_is_in_the_readme_table() -> None:
    reads, _ = environment_reads()
    documented = table_names(ROOT / "README.md")
    missing = {name: sorted(where) for name, where in reads.items() if name not in documented}
    assert not missing, f"add these to the README's environment table: {missing}"


def test_the_chinese_readme_lists_the_same_variables() -> None:
    assert table_names(ROOT / "README.zh.md") == table_names(ROOT / "README.md")
