"""Adding a framework preset is a data row only (issue 40): no module names a framework of
catalog/data/frameworks.toml in its code, so nothing but the data needs to change for a new one.
``hf`` is the exception: it is the declared default of ``--framework``."""

from __future__ import annotations

import ast
from pathlib import Path

import tomllib

SRC = Path(__file__).resolve().parents[2] / "src" / "suanli"


def _framework_ids() -> set[str]:
    data = tomllib.loads((SRC / "catalog" / "data" / "frameworks.toml").read_text("utf-8"))
    return {str(fw["id"]) for fw in data["framework"]}


#: Modules that name frameworks for another reason than listing the presets, and why.
ALLOWED = {
    "live/monitor.py": "process names that recognise a running job (deepspeed, vllm, ollama)",
    "views/emit_serve.py": "the engines the Kubernetes emitter writes a launch command for",
    "estimate/workload.py": "--saved-tensors hf|megatron: whose kernels' saved tensors count",
}


def _lists(path: Path, ids: set[str]) -> list[str]:
    """The hand lists in ``path``: a tuple, list, set or dict literal naming two frameworks or
    more (a single name can be an option's value, e.g. ``--saved-tensors megatron``)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text("utf-8"))):
        items = node.keys if isinstance(node, ast.Dict) else getattr(node, "elts", None)
        if not isinstance(node, (ast.Tuple, ast.List, ast.Set, ast.Dict)) or items is None:
            continue
        named = [
            item.value
            for item in items
            if isinstance(item, ast.Constant) and isinstance(item.value, str) and item.value in ids
        ]
        if len(named) >= 2:
            found.append(f"{path.name}:{node.lineno}: {named}")
    return found


def test_the_checker_finds_a_planted_list(tmp_path: Path) -> None:
    planted = tmp_path / "planted.py"
    planted.write_text(
        'CUDA_FIRST = ("unsloth", "torchtune")\nSAVED = "megatron"\n', encoding="utf-8"
    )
    assert len(_lists(planted, _framework_ids())) == 1


def test_no_module_lists_the_frameworks() -> None:
    ids = _framework_ids()
    found = [
        hit
        for path in sorted(SRC.rglob("*.py"))
        if path.relative_to(SRC).as_posix() not in ALLOWED
        for hit in _lists(path, ids)
    ]
    assert found == []


def test_the_hugging_face_family_is_a_data_flag() -> None:
    """plan ranks other software stacks after CUDA for the frameworks whose row says
    cuda_first, and only for those."""
    from suanli.answers.plan_policy import stack_demotions
    from suanli.catalog import load_catalog
    from suanli.catalog.frameworks import frameworks

    gpus = list(load_catalog())
    assert any(g.software_stack != "cuda" for g in gpus)
    for fw in frameworks():
        demoted = stack_demotions(fw.id, gpus, stack_ok=False)
        assert bool(demoted) is fw.cuda_first, fw.id
        assert stack_demotions(fw.id, gpus, stack_ok=True) == {}
    assert {fw.id for fw in frameworks() if fw.cuda_first} >= {"hf", "unsloth"}
