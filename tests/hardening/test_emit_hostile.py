"""``suanli plan --emit`` writes data, never code (issue 39): a hostile model path or name can
neither run a command when the script runs, nor split an argument, nor add a YAML document.

The plans are made once; each hostile name replaces the model of the typed answer (the emitter
reads nothing else the user typed), so the fuzz costs milliseconds a case. One case goes through
the real command line with a model folder whose name is a command substitution.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from dataclasses import replace
from pathlib import Path

import pytest
import yaml

from suanli.answers.plan import PlanAnswer, PlanRequest, plan
from suanli.answers.request import WorkRequest
from suanli.views.emit import emit

from ..cli.test_cli import run

#: Names an attacker or an unlucky user could give a model folder (no control characters: those
#: are refused, below).
HOSTILE = [
    "m$(touch PWNED)",
    "m`touch PWNED`",
    "m'; touch PWNED; '",
    'm"; touch PWNED; "',
    "m && touch PWNED",
    "m | touch PWNED",
    "m; touch PWNED",
    "$(touch${IFS}PWNED)",
    "m $HOME *",
    "--help",
    "-rf /",
    "m\\",
    "m\\$(touch PWNED)",
    "models/with space/and'quote",
    "kind: Secret",
    "--- kind: Secret",
    "a: b: c",
    "- item",
    "{flow: map}",
    "[1, 2]",
    "&anchor *alias",
    "!!python/object:os.system",
    "# comment",
    "%YAML 1.1",
    "yes",
    "null",
    "0x1F",
    "名字/模型 ✓",
    "emoji 🚀 model",
    "m" * 500,
]
#: Control characters and line breaks: refused with one sentence.
REFUSED = [
    "m\n$(touch PWNED)",
    "m\r\nkind: Secret",
    "m\n---\nkind: Secret\n",
    "m\x1b]0;title\x07",
    "m\x00nul",
    "m\u2028line",
    "m\x85next",
]


@pytest.fixture(scope="module")
def plans() -> dict[str, PlanAnswer]:
    """A two-node training plan and a serving plan of one GPU per replica."""
    train = plan(
        PlanRequest(
            model="llama-3.1-8b", work=WorkRequest(), task="full", max_gpus=16, gpus=("h100-sxm",)
        )
    )
    serve = plan(
        PlanRequest(
            model="llama-3.1-8b", work=WorkRequest(), rps=2.0, task="infer", gpus=("h100-sxm",)
        )
    )
    assert isinstance(train, PlanAnswer) and isinstance(serve, PlanAnswer)
    return {"train": train, "serve": serve}


def _stubs(folder: Path) -> dict[str, str]:
    """An environment whose schedulers and engines only print their arguments, one a line."""
    folder.mkdir(exist_ok=True)
    for name in ("srun", "scontrol", "torchrun", "vllm", "python3"):
        stub = folder / name
        stub.write_text('#!/bin/sh\nfor a in "$@"; do printf "%s\\n" "$a"; done\n')
        stub.chmod(0o755)
    env = dict(os.environ)
    env["PATH"] = f"{folder}:{env['PATH']}"
    env["SLURM_JOB_NODELIST"] = "node1"
    env["SLURM_JOB_ID"] = "1"
    env["SLURM_ARRAY_TASK_ID"] = "0"
    return env


def _run_script(script: str, tmp_path: Path) -> list[str]:
    """Run the script with the stubs in a fresh folder; the words srun and the engine got."""
    work = tmp_path / "work"
    work.mkdir()
    (work / "job.sh").write_text(script)
    done = subprocess.run(
        ["bash", "job.sh"],
        cwd=work,
        env=_stubs(tmp_path / "bin"),
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in work.iterdir()) == ["job.sh"], "the script created a file"
    return done.stdout.splitlines()


@pytest.mark.parametrize("name", HOSTILE)
def test_a_hostile_model_name_is_one_word_and_runs_nothing(
    name: str, plans: dict[str, PlanAnswer], tmp_path: Path
) -> None:
    serve = replace(plans["serve"], model=name)
    words = _run_script(emit(serve, "slurm"), tmp_path)
    start = words.index("vllm")  # after the script's own "replica 0 serves on ..." line
    assert words[start : start + 3] == ["vllm", "serve", name]  # the path is one argument
    train = replace(plans["train"], model=name)
    script = emit(train, "slurm")
    subprocess.run(["bash", "-n"], input=script, text=True, check=True)
    assert name.split("\n")[0] not in script.replace("# ", "").split("srun", 1)[1]


@pytest.mark.parametrize("name", HOSTILE)
@pytest.mark.parametrize(
    ("which", "kind"), [("train", "k8s"), ("train", "kubeflow"), ("serve", "k8s")]
)
def test_a_hostile_model_name_adds_no_yaml_document(
    name: str, which: str, kind: str, plans: dict[str, PlanAnswer]
) -> None:
    answer = replace(plans[which], model=name)
    text = emit(answer, kind)
    docs = list(yaml.safe_load_all(text))
    expected = {
        ("train", "k8s"): ["Service", "Job"],
        ("train", "kubeflow"): ["PyTorchJob"],
        ("serve", "k8s"): ["Deployment", "Service"],
    }[(which, kind)]
    assert [d["kind"] for d in docs] == expected
    if which == "serve":  # the engine is started without a shell: the name is one list item
        assert docs[0]["spec"]["template"]["spec"]["containers"][0]["command"][2] == name


@pytest.mark.parametrize("name", REFUSED)
@pytest.mark.parametrize(
    ("which", "kind"), [("train", "slurm"), ("train", "k8s"), ("serve", "slurm")]
)
def test_control_characters_are_refused_with_one_sentence(
    name: str, which: str, kind: str, plans: dict[str, PlanAnswer]
) -> None:
    with pytest.raises(ValueError, match="control character or a line break") as caught:
        emit(replace(plans[which], model=name), kind)
    assert "\n" not in str(caught.value)


@pytest.mark.skipif(
    shutil.which("shellcheck") is None, reason="Debian's shellcheck is not installed"
)
@pytest.mark.parametrize("name", ["m$(touch PWNED)", "models/with space/and'quote", "llama-3.1-8b"])
def test_emitted_scripts_pass_shellcheck(name: str, plans: dict[str, PlanAnswer]) -> None:
    for which in ("train", "serve"):
        script = emit(replace(plans[which], model=name), "slurm")
        done = subprocess.run(
            # warnings and errors; SC2016 (info) is the point: a quoted $( ) stays text
            ["shellcheck", "-s", "bash", "-S", "warning", "-"],
            input=script,
            capture_output=True,
            text=True,
        )
        assert done.returncode == 0, done.stdout


def test_the_command_line_with_a_planted_folder_runs_nothing(tmp_path: Path) -> None:
    """The issue's reproduction: a folder named m$(touch PWNED) holding a config.json."""
    from suanli.models.presets import find_preset

    preset = find_preset("llama-3.1-8b")
    assert preset is not None
    folder = tmp_path / "m$(touch PWNED)"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(preset.config()))
    out = run("plan", str(folder), "--task", "infer", "--gpu", "h100-sxm", "--emit", "slurm")
    assert out.returncode == 0, out.stderr
    words = _run_script(out.stdout, tmp_path)
    assert words[words.index("serve") + 1] == str(folder)
    bad = tmp_path / "m\nx"
    bad.mkdir()
    (bad / "config.json").write_text(json.dumps(preset.config()))
    out = run("plan", str(bad), "--task", "infer", "--gpu", "h100-sxm", "--emit", "slurm")
    assert out.returncode == 2 and out.stdout == ""
    assert "line break" in out.stderr and "Traceback" not in out.stderr
