"""The command line as a user runs it: tables, one JSON document, one-line errors with exit 2."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import click
import pytest

FIXTURES = Path(__file__).parent.parent / "fixtures" / "configs"


def run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    full_env = {**os.environ, "HF_HUB_OFFLINE": "1", "COLUMNS": "160", **(env or {})}
    return subprocess.run(
        [sys.executable, "-m", "suanli", *args],
        capture_output=True,
        text=True,
        env=full_env,
        timeout=120,
        check=False,
    )


def test_model_json_has_the_contract_keys() -> None:
    out = run("model", "llama-3.1-8b", "--json")
    assert out.returncode == 0, out.stderr
    info = json.loads(out.stdout)
    for key in [
        "name",
        "architecture",
        "params_total",
        "params_active",
        "layers",
        "hidden_size",
        "heads",
        "kv_heads",
        "head_dim",
        "vocab_size",
        "params_by_component",
    ]:
        assert key in info
    assert info["params_total"] == 8_030_261_248  # HF safetensors total, Llama-3.1-8B
    assert info["kv_heads"] == 8 and info["head_dim"] == 128


def test_model_table_from_a_config_path() -> None:
    out = run("model", str(FIXTURES / "mixtral-8x7b-v0.1.json"))
    assert out.returncode == 0, out.stderr
    assert "46,702,792,704" in out.stdout and "12,879,925,248" in out.stdout


def test_models_lists_at_least_30_presets() -> None:
    out = run("models", "--json")
    assert out.returncode == 0, out.stderr
    assert len(json.loads(out.stdout)["models"]) >= 30


def test_gpus_filters_and_sorts() -> None:
    out = run("gpus", "--vendor", "amd", "--sort", "memory", "--json")
    assert out.returncode == 0, out.stderr
    rows = json.loads(out.stdout)["gpus"]
    assert rows and all(r["vendor"] == "amd" for r in rows)
    memory = [r["memory_bytes"] for r in rows]
    assert memory == sorted(memory, reverse=True)
    big = json.loads(run("gpus", "--min-memory", "100", "--json").stdout)["gpus"]
    assert big and all(r["memory_bytes"] >= 100 * 2**30 for r in big)


def test_gpus_table_and_gpu_detail() -> None:
    out = run("gpus")
    assert out.returncode == 0 and "h100-sxm-80gb" in out.stdout
    detail = run("gpu", "rtx4090")
    assert detail.returncode == 0 and "sources" in detail.stdout
    assert json.loads(run("gpu", "H100 SXM", "--json").stdout)["id"] == "h100-sxm-80gb"


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["model", "llama-9"], "unknown model"),
        (["model", "./missing/config.json"], "no such file"),
        (["model", "someone/model"], "offline"),
        (["gpu", "H1000"], "unknown GPU"),
        (["gpu", "6000"], "ambiguous"),
        (["gpus", "--sort", "speed"], "cannot sort by"),
        (["gpus", "--vendor", "acme"], "Invalid value"),
        (["gpus", "--min-memory", "-3"], "Invalid value"),
        (["gpus", "--catalog", "/nonexistent.toml"], "cannot read catalog file"),
        (["model"], "Missing argument"),
        (["model", "llama-3.1-8b", "--frobnicate"], "No such option"),
        (["nosuchverb"], "No such command"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(args: list[str], fragment: str) -> None:
    out = run(*args)
    assert out.returncode == 2, out.stderr
    assert fragment in out.stderr
    assert "Traceback" not in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1
    assert out.stdout == ""


def test_bad_config_files_exit_2(tmp_path: Path) -> None:
    cases = {
        "malformed.json": "{oops",
        "unsupported.json": json.dumps({"model_type": "rwkv"}),
        "negative.json": json.dumps({"model_type": "llama", "vocab_size": -1}),
    }
    for name, text in cases.items():
        path = tmp_path / name
        path.write_text(text)
        out = run("model", str(path))
        assert out.returncode == 2 and "Traceback" not in out.stderr, name
        assert len(out.stderr.strip().splitlines()) == 1


def test_bad_user_catalog_names_key_and_file(tmp_path: Path) -> None:
    path = tmp_path / "mine.toml"
    path.write_text('[[gpu]]\nid = "x"\nmemroy_bytes = 1\n')
    out = run("gpus", "--catalog", str(path))
    assert out.returncode == 2
    assert "memroy_bytes" in out.stderr and "mine.toml" in out.stderr


def test_planning_commands_do_not_import_heavy_stacks() -> None:
    code = (
        "import sys, suanli.cli.main as m\n"
        "heavy = [x for x in ('torch', 'numpy', 'pynvml', 'transformers') if x in sys.modules]\n"
        "print(heavy)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


#: What `suanli plan` (the README's first command) must never load: the deep-learning, web and
#: device stacks, the live layer, numpy's masked arrays (np.unique imported them: 10 ms) and the
#: other commands' modules (the command group imports a command's module when it runs).
NOT_FOR_PLAN = (
    "torch",
    "transformers",
    "pydantic",
    "fastapi",
    "pynvml",
    "psutil",
    "prometheus_client",
    "yaml",
    "huggingface_hub",
    "numpy.ma",
    "suanli.live",
    "suanli.web",
    "suanli.cli.bench",
    "suanli.cli.capacity",
    "suanli.cli.live",
    "suanli.cli.serve",
)


def test_the_first_command_loads_only_what_it_uses(tmp_path: Path) -> None:
    """`suanli plan` with no arguments imports none of the heavy stacks (it searches with numpy,
    which it does load). Structure only: tests/cli does not time anything;
    benchmarks/bench_startup.py measures the CPU seconds."""
    code = (
        "import contextlib, io, sys\n"
        "from suanli.cli.main import main\n"
        "with contextlib.redirect_stdout(io.StringIO()) as shown:\n"
        "    try:\n"
        "        main(['plan'])\n"
        "    except SystemExit as exit:\n"
        "        assert not exit.code, exit.code\n"
        "assert 'rtx-4090-24gb' in shown.getvalue()\n"
        f"banned = {NOT_FOR_PLAN!r}\n"
        "print(sorted(m for m in sys.modules if m.startswith(banned) and"
        " (m in banned or m.startswith(tuple(b + '.' for b in banned)))))\n"
    )
    env = {**os.environ, "SUANLI_CACHE": str(tmp_path), "SUANLI_LANG": "en", "COLUMNS": "160"}
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, check=False
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


def test_every_command_is_registered_under_its_own_name() -> None:
    """The command group imports each command's module on first use, from a table of names:
    each name gives the command of that name, and listing them loads them all."""
    from suanli.cli.main import COMMANDS, cli

    names = [name for name, _module, _attribute in COMMANDS]
    assert len(set(names)) == len(names) > 20
    assert {name: command.name for name, command in cli.commands.items()} == {n: n for n in names}
    assert cli.list_commands(click.Context(cli)) == sorted(names)


def test_a_caller_in_process_keeps_its_garbage_collector(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The console script freezes the collector as the process ends (its last full collection
    cost 30-40 ms of a plan); main() called with arguments, as here, leaves it alone."""
    import gc

    from suanli.cli.main import main

    frozen = gc.get_freeze_count()
    main(["--version"])
    assert "suanli" in capsys.readouterr().out
    assert gc.get_freeze_count() == frozen
