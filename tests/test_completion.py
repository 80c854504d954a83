"""Shell completion (click's _SUANLI_COMPLETE protocol): model arguments complete preset names,
GPU arguments and options complete catalog ids."""

from __future__ import annotations

import subprocess
import sys

import click
import pytest
from click.testing import CliRunner

from suanli.cli.main import cli
from suanli.cli.types import GpuName, ModelName


def complete(line: str) -> list[tuple[str, str]]:
    """(type, value) pairs bash would be offered for the last word of ``line``."""
    words = line.split()
    cword = len(words) if line.endswith(" ") else len(words) - 1
    result = CliRunner().invoke(
        cli,
        prog_name="suanli",
        env={
            "_SUANLI_COMPLETE": "bash_complete",
            "COMP_WORDS": line,
            "COMP_CWORD": str(cword),
        },
    )
    assert result.exit_code == 0, result.output
    pairs = [row.split(",", 1) for row in result.output.splitlines()]
    return [(kind, value) for kind, value in pairs]


@pytest.mark.parametrize("command", ["model", "mem", "perf", "plan", "fit", "capacity"])
def test_a_model_argument_completes_presets(command: str) -> None:
    values = [v for _, v in complete(f"suanli {command} llama-3")]
    assert "llama-3.1-8b" in values and "llama-3-70b" in values
    assert all(v.startswith("llama-3") for v in values)
    assert "llama-2-7b" not in values


def test_a_model_option_completes_presets() -> None:
    assert [v for _, v in complete("suanli card 4090 --model qwen3-3")] == [
        "qwen3-30b-a3b",
        "qwen3-32b",
    ]


def test_a_path_completes_as_files() -> None:
    assert complete("suanli mem ./conf") == [("file", "./conf")]


@pytest.mark.parametrize(
    "line",
    [
        "suanli card 4090",
        "suanli gpu 4090",
        "suanli cost 4090",
        "suanli perf llama-3.1-8b --gpu 4090",
        "suanli plan llama-3.1-8b --gpu 4090",
        "suanli mem llama-3.1-8b --card 4090",
    ],
)
def test_gpu_arguments_and_options_complete_catalog_ids(line: str) -> None:
    values = [v for _, v in complete(line)]
    assert values[0] == "rtx-4090-24gb"
    assert "rtx-4090d-24gb" in values
    assert "rtx-4080-16gb" not in values


def test_ids_starting_with_the_word_come_first_in_order() -> None:
    values = [v for _, v in complete("suanli card h100")]
    assert values and all(v.startswith("h100") for v in values)
    assert values == sorted(values)
    # "rtx 40" starts no id: ids whose names contain it follow, squashed ("rtx-4090" ~ "rtx40").
    assert "rtx-4090-24gb" in [v for _, v in complete("suanli card rtx40")]


def test_other_options_keep_their_own_completion() -> None:
    assert ("plain", "lora") in complete("suanli mem llama-3.1-8b --task lo")


def test_completion_types_convert_like_plain_text() -> None:
    assert ModelName().convert("anything/at-all", None, None) == "anything/at-all"
    assert GpuName().convert("rtx 4090", None, None) == "rtx 4090"
    params = {p.name: p for p in cli.commands["mem"].params}
    assert isinstance(params["model"].type, ModelName)
    assert isinstance(params["gpu_name"].type, GpuName)
    assert params["model"].type.name == click.STRING.name  # help still says TEXT


def test_completing_imports_no_heavy_stack() -> None:
    """A shell asks on every <Tab>: no torch, numpy, NVML or transformers for a completion."""
    code = (
        "import os, sys\n"
        "os.environ.update(_SUANLI_COMPLETE='bash_complete', COMP_WORDS='suanli perf llama-3 "
        "--gpu 4090', COMP_CWORD='4')\n"
        "from suanli.cli.main import main\n"
        "try:\n    main([])\nexcept SystemExit:\n    pass\n"
        "heavy = [x for x in ('torch', 'numpy', 'pynvml', 'transformers') if x in sys.modules]\n"
        "print('heavy', heavy)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert "plain,rtx-4090-24gb" in out.stdout
    assert out.stdout.strip().endswith("heavy []")
