"""Issue 40: every workload option is declared once (suanli.answers.options) and every view
takes it from there: WorkRequest's defaults, the click options, the web's request bodies (and so
--help, the OpenAPI document and the JSON Schemas) agree on name, default, bounds and choices,
and no view declares a default of its own."""

from __future__ import annotations

import ast
import dataclasses
import functools
import math
from pathlib import Path
from typing import Any, get_type_hints

import click
import pytest

from suanli.answers.option_type import Option
from suanli.answers.options import OPTIONS, PUE, WORK_OPTIONS
from suanli.answers.request import WorkRequest, build_work
from suanli.estimate.workload import TASKS, TRAIN_TASKS, InferWork, TrainWork

SRC = Path(__file__).resolve().parent.parent / "src" / "suanli"
NUMBERS = [o for o in OPTIONS if o.kind in (int, float)]
CHOICES = [o for o in OPTIONS if o.choices]


def test_every_work_request_field_has_exactly_one_declaration() -> None:
    names = [o.name for o in OPTIONS]
    assert len(names) == len(set(names)), "an option is declared twice"
    fields = {f.name: f for f in dataclasses.fields(WorkRequest)}
    assert set(fields) - {"explicit"} == set(names)
    hints = get_type_hints(WorkRequest)
    for option in OPTIONS:
        assert fields[option.name].default == option.default, option.name
        allowed = option.kind | None if option.optional else option.kind
        assert hints[option.name] == allowed, option.name


def test_the_declarations_are_whole() -> None:
    """Every number is bounded on both sides, every default lies within its own bounds and
    choices, and every option applies to at least one real task."""
    for option in OPTIONS:
        assert option.help.strip(), option.name
        assert option.tasks and set(option.tasks) <= set(TASKS), option.name
        if option.kind in (int, float):
            assert option.minimum is not None and option.maximum is not None, option.name
            assert option.minimum < option.maximum, option.name
        if option.choices:
            assert option.default in option.choices, option.name
        elif option.kind in (int, float) and option.default is not None:
            assert option.minimum is not None and option.maximum is not None
            assert option.minimum <= option.default <= option.maximum, option.name


# -- the command line -------------------------------------------------------------------------


def _commands() -> dict[str, click.Command]:
    from suanli.cli.compare import compare_cmd
    from suanli.cli.mem import mem_cmd
    from suanli.cli.perf import perf_cmd
    from suanli.cli.plan import fit_cmd, plan_cmd
    from suanli.cli.verify import verify_cmd

    return {
        "mem": mem_cmd,
        "perf": perf_cmd,
        "fit": fit_cmd,
        "verify": verify_cmd,
        "compare": compare_cmd,
        "plan": plan_cmd,
    }


def _check_click(param: click.Parameter, option: Option) -> None:
    assert isinstance(param, click.Option), option.name
    assert param.opts == [option.cli_name], option.name
    assert param.default == option.default, option.name
    if option.flag:
        assert param.is_flag, option.name
        return
    kind = param.type
    if option.choices:
        assert isinstance(kind, click.Choice), option.name
        assert tuple(kind.choices) == (*option.choices, *option.cli_choices), option.name
    elif option.kind in (int, float):
        assert isinstance(kind, (click.IntRange, click.FloatRange)), option.name
        assert isinstance(kind, click.IntRange) == (option.kind is int), option.name
        assert (kind.min, kind.max) == (option.minimum, option.maximum), option.name
        assert (kind.min_open, kind.max_open) == (option.min_open, option.max_open), option.name
    else:
        assert getattr(kind, "max_length", None) == option.max_length, option.name
    if option.metavar:
        assert param.metavar == option.metavar, option.name


@pytest.mark.parametrize("command", ["mem", "perf", "fit", "verify", "compare", "plan"])
def test_the_click_options_are_the_declarations(command: str) -> None:
    params = {opt: p for p in _commands()[command].params for opt in p.opts}
    expected = [o for o in OPTIONS if command != "plan" or not o.layout]
    for option in expected:
        assert option.cli_name in params, f"{command} lacks {option.cli_name}"
        _check_click(params[option.cli_name], option)
    if command == "perf":
        _check_click(params["--pue"], PUE)


def test_plan_takes_the_shape_and_no_layout() -> None:
    names = {opt for p in _commands()["plan"].params for opt in p.opts}
    for option in OPTIONS:
        if option.layout and option.name not in ("gpus", "global_batch"):
            assert option.cli_name not in names, option.name


def _help_page(*args: str) -> str:
    from click.testing import CliRunner

    from suanli.cli.main import cli

    result = CliRunner().invoke(cli, [*args, "--help"], env={"SUANLI_LANG": "en"})
    assert result.exit_code == 0, result.output
    return "".join(result.output.split())  # words wrapped at a hyphen join again


def test_the_framework_help_lists_every_framework_in_the_catalog() -> None:
    from suanli.catalog.frameworks import frameworks

    ids = [fw.id for fw in frameworks()]
    assert len(ids) >= 10 and "ollama" in ids
    for command in ("mem", "perf", "plan"):
        page = _help_page(command)
        missing = [i for i in ids if i not in page]
        assert missing == [], (command, missing)
    from suanli.web.schemas import Workload

    description = Workload.model_fields["framework"].description or ""
    assert [i for i in ids if i not in description] == []


def test_the_quant_help_lists_every_weight_format() -> None:
    from suanli.catalog.formats import weight_formats

    page = _help_page("mem")
    assert [f for f in weight_formats() if f not in page] == []


def test_the_helps_quick_reading_of_the_catalog_is_the_loaders() -> None:
    """--help reads the ids from the files' text (fast); the loaders parse and validate them."""
    from suanli.answers.option_type import catalog_ids
    from suanli.catalog.formats import weight_formats
    from suanli.catalog.frameworks import frameworks

    assert catalog_ids("frameworks.toml", "framework") == tuple(fw.id for fw in frameworks())
    assert catalog_ids("quant.toml", "format") == tuple(weight_formats())


def test_a_value_outside_the_declared_bounds_is_one_sentence_and_exit_2() -> None:
    from click.testing import CliRunner

    from suanli.cli.main import cli

    runner = CliRunner()
    for args in (["--tp", "1025"], ["--lora-rank", "0"], ["--framework", "x" * 41]):
        result = runner.invoke(cli, ["mem", "llama-3.1-8b", *args])
        assert result.exit_code == 2, (args, result.output)
        assert "Traceback" not in result.output


# -- the web's request bodies -----------------------------------------------------------------


@functools.cache
def _properties(model: Any) -> dict[str, Any]:
    properties: dict[str, Any] = model.model_json_schema()["properties"]
    return properties


def _schema_of(model: Any, name: str) -> dict[str, Any]:
    prop: dict[str, Any] = _properties(model)[name]
    return prop


def _typed(prop: dict[str, Any]) -> dict[str, Any]:
    """The non-null branch of an optional field's schema."""
    branches = [b for b in prop.get("anyOf", [prop]) if b.get("type") != "null"]
    assert len(branches) == 1
    return branches[0]


def _check_field(model: Any, option: Option) -> None:
    field = model.model_fields[option.name]
    assert field.default == option.default, option.name
    assert field.description == option.help_text(), option.name
    prop = _schema_of(model, option.name)
    assert prop["default"] == option.default, option.name
    typed = _typed(prop)
    if option.optional:
        assert {"type": "null"} in prop["anyOf"], option.name
    kind = {bool: "boolean", int: "integer", float: "number", str: "string"}[option.kind]
    assert typed["type"] == kind, option.name
    if option.choices:
        assert typed["enum"] == list(option.choices), option.name
    if option.kind in (int, float):
        low = "exclusiveMinimum" if option.min_open else "minimum"
        high = "exclusiveMaximum" if option.max_open else "maximum"
        assert (typed[low], typed[high]) == (option.minimum, option.maximum), option.name
    if option.max_length:
        assert typed["maxLength"] == option.max_length, option.name


def test_the_web_fields_are_the_declarations() -> None:
    pytest.importorskip("pydantic")
    from suanli.web.schemas import MemoryRequest, PerfRequest, PlanRequest, Workload

    for option in OPTIONS:
        _check_field(Workload, option)
        _check_field(MemoryRequest, option)
    _check_field(PerfRequest, PUE)
    for option in OPTIONS:
        if option.layout and option.name not in ("gpus", "global_batch"):
            assert option.name not in PlanRequest.model_fields, option.name
        elif not option.layout and option.name not in ("task", "quant"):
            _check_field(PlanRequest, option)
    _check_field(PlanRequest, WORK_OPTIONS["global_batch"])
    for name in ("task", "quant"):  # plan's: null follows the scenario
        assert PlanRequest.model_fields[name].default is None


def _inside(option: Option) -> list[Any]:
    """Values at or next to the option's bounds, or its choices."""
    if option.choices:
        return list(option.choices)
    assert option.minimum is not None and option.maximum is not None
    step = 1 if option.kind is int else 1e-9 * max(1.0, abs(option.maximum))
    low = option.minimum + step if option.min_open else option.minimum
    high = option.maximum - step if option.max_open else option.maximum
    return [option.kind(low), option.kind(high)]


def _outside(option: Option) -> list[Any]:
    """Values just outside the option's bounds or choices."""
    if option.choices:
        return ["no-such-" + option.name]
    assert option.minimum is not None and option.maximum is not None
    step = 1 if option.kind is int else 1e-9 * max(1.0, abs(option.maximum))
    low = option.minimum if option.min_open else option.minimum - step
    high = option.maximum if option.max_open else option.maximum + step
    return [option.kind(low), option.kind(high)]


@pytest.mark.parametrize("option", NUMBERS + CHOICES, ids=lambda o: o.name)
def test_the_command_line_and_the_web_refuse_the_same_values(option: Option) -> None:
    """Just outside the declared bounds or choices: click refuses it (exit 2), the web too
    (422); just inside, both take it."""
    pytest.importorskip("pydantic")
    from pydantic import ValidationError

    from suanli.cli.options import click_type
    from suanli.web.schemas import Workload

    kind = click_type(option)
    assert kind is not None
    for value in _outside(option):
        with pytest.raises(click.BadParameter):
            kind.convert(str(value), None, None)
        with pytest.raises(ValidationError):
            Workload(**{option.name: value})
    for value in _inside(option):
        assert kind.convert(str(value), None, None) == value
        assert getattr(Workload(**{option.name: value}), option.name) == value


def test_the_python_api_takes_the_command_lines_generate_image_task() -> None:
    with pytest.raises(ValueError, match="generate-image works with suanli perf"):
        build_work(WorkRequest(task="generate-image"))


# -- no view declares a default of its own ----------------------------------------------------

NAMES = {*WORK_OPTIONS, PUE.name}
CLI_NAMES = {o.cli_name for o in (*OPTIONS, PUE)}
#: Fields of another question that share a name with a workload option and mean something else:
#: cost's GPUs bought, card's cards in the machine, plan's exact GPU count, images per prompt.
OTHER_MEANINGS = {
    ("CostRequest", "gpus"),
    ("CardRequest", "gpus"),
    ("PlanRequest", "gpus"),
    ("ImageRequest", "batch"),
}


def _literal(node: ast.expr | None) -> bool:
    """A written-out value (``2048``, ``"bf16"``, ``Field(2048, ...)``), None excepted."""
    if isinstance(node, ast.Constant):
        return node.value is not None
    if isinstance(node, ast.Call) and node.args:
        return _literal(node.args[0])
    if isinstance(node, ast.Call):
        return any(k.arg == "default" and _literal(k.value) for k in node.keywords)
    return isinstance(node, (ast.Tuple, ast.List)) and any(_literal(e) for e in node.elts)


def _own_defaults(path: Path) -> list[str]:
    found = []
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef):
            for stmt in node.body:
                if (
                    isinstance(stmt, ast.AnnAssign)
                    and isinstance(stmt.target, ast.Name)
                    and stmt.target.id in NAMES
                    and (node.name, stmt.target.id) not in OTHER_MEANINGS
                    and (
                        _literal(stmt.value)
                        or (node.name in WORKLOAD_CLASSES and stmt.target.id in WORK_OPTIONS)
                    )
                ):
                    found.append(f"{node.name}.{stmt.target.id} (line {stmt.lineno})")
        elif isinstance(node, ast.Constant) and node.value in CLI_NAMES:
            found.append(f"{node.value} (line {node.lineno})")
        elif isinstance(node, ast.keyword) and node.arg in NAMES and _literal(node.value):
            found.append(f"{node.arg}= (line {node.value.lineno})")
        elif isinstance(node, ast.keyword) and node.arg == "default" and _literal(node.value):
            found.append(f"default= (line {node.value.lineno})")
        elif isinstance(node, ast.Dict):
            for key, value in zip(node.keys, node.values, strict=True):
                if isinstance(key, ast.Constant) and key.value in NAMES and _literal(value):
                    found.append(f"{key.value!r}: (line {key.lineno})")
    return found


#: The web bodies built on the workload's generated fields: none may declare one by hand.
WORKLOAD_CLASSES = {"Workload", "MemoryRequest", "PerfRequest", "PlanRequest"}


@pytest.mark.parametrize("view", ["cli/options.py", "web/schemas.py"])
def test_no_view_declares_a_workload_default(view: str) -> None:
    assert _own_defaults(SRC / view) == []


def test_the_checker_finds_a_hand_written_default(tmp_path: Path) -> None:
    written = tmp_path / "view.py"
    written.write_text(
        "import click\n"
        "from pydantic import BaseModel, Field\n"
        'opt = click.option("--seq", default=4096)\n'
        "class Workload(BaseModel):\n"
        "    tp: int | None = None\n"
        "class Other(BaseModel):\n"
        "    context: int = Field(8192, ge=1)\n"
        "    gpus: int = 8\n",
        encoding="utf-8",
    )
    found = _own_defaults(written)
    assert len(found) == 5, found  # --seq, default=, Workload.tp, Other.context, Other.gpus


# -- the estimators' own defaults agree -------------------------------------------------------


def _estimator_default(cls: type, name: str) -> Any:
    field = {f.name: f for f in dataclasses.fields(cls)}[name]
    return field.default


#: Declared options whose estimator field keeps another default, and why.
ESTIMATOR_OWN = {
    "task": "an estimator has no LoRA default: it computes the task it is given",
    "recompute": "auto is settled to a setting by answers/recompute.py before an estimator runs",
}


def test_the_estimators_defaults_are_the_declared_ones() -> None:
    """TrainWork and InferWork are the estimators' own types (below the answers, so they cannot
    read the declaration): their defaults must still be the declared ones, but for
    :data:`ESTIMATOR_OWN`."""
    renamed = {"quant": "weight_format"}
    checked = 0
    for cls, tasks in ((TrainWork, TRAIN_TASKS), (InferWork, ("infer",))):
        names = {f.name for f in dataclasses.fields(cls)}
        for option in OPTIONS:
            name = renamed.get(option.name, option.name)
            if name not in names or name in ESTIMATOR_OWN or not set(tasks) & set(option.tasks):
                continue
            value = _estimator_default(cls, name)
            declared = option.default
            if name == "batch":
                declared = 1  # the help: "default 1"
            if name in ("lora_targets", "recompute_modules"):
                value = ",".join(value)
            assert value == declared, (cls.__name__, name)
            checked += 1
    assert checked >= 25


def test_one_table_of_bytes_per_dtype() -> None:
    """Bytes per element are units.DTYPE_BYTES; no other module writes a table of them."""
    from suanli.units import DTYPE_BYTES

    dtypes = set(DTYPE_BYTES)
    found = []
    for path in sorted(SRC.rglob("*.py")):
        if path == SRC / "units.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Dict):
                keys = [k.value for k in node.keys if isinstance(k, ast.Constant)]
                numbers = [
                    v
                    for v in node.values
                    if isinstance(v, ast.Constant) and type(v.value) in (int, float)
                ]
                if len(set(keys) & dtypes) >= 2 and len(numbers) == len(node.values):
                    found.append(f"{path.relative_to(SRC)}:{node.lineno}")
    assert found == []
    assert TrainWork(dtype="bf16").dtype_bytes == DTYPE_BYTES["bf16"] == 2
    assert InferWork(kv_dtype="fp8").kv_bytes == DTYPE_BYTES["fp8"] == 1
    assert math.isclose(DTYPE_BYTES["int4"], 0.5)
