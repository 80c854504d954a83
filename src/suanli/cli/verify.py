"""``suanli verify MODEL --task T``: real steps on this device against the estimate."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from suanli.cli.options import work_from_options, workload_options
from suanli.cli.render import print_json, print_table
from suanli.estimate.workload import TrainWork

#: Above this many parameters a CPU run takes too long to be useful.
CPU_PARAM_LIMIT = 1.5e9


def _fmt(key: str, value: float) -> str:
    if key.endswith("_s"):
        return f"{value * 1e3:,.2f} ms"
    return f"{value / 2**30:,.3f} GiB"


@click.command("verify")
@click.argument("model")
@workload_options
@click.option(
    "--prompt",
    type=click.IntRange(min=1),
    default=128,
    show_default=True,
    help="Inference: prompt tokens.",
)
@click.option(
    "--output",
    "output_tokens",
    type=click.IntRange(min=2),
    default=16,
    show_default=True,
    help="Inference: generated tokens.",
)
@click.option("--steps", type=click.IntRange(min=1), default=3, show_default=True)
@click.option(
    "--save/--no-save",
    default=True,
    show_default=True,
    help="Save the result beside the local calibration profile.",
)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document.")
def verify_cmd(
    model: str, prompt: int, output_tokens: int, steps: int, save: bool, as_json: bool, **opts: Any
) -> None:
    """Build MODEL with random weights on this device (CUDA if present, else the CPU), run real
    steps of --task, and print estimate vs measured per component with the error."""
    try:
        import torch  # noqa: F401
        import transformers  # noqa: F401
    except ImportError:
        from suanli.cli.main import MissingExtra

        raise MissingExtra(
            "suanli verify needs PyTorch and transformers: pip install 'suanli[torch]' transformers"
        ) from None
    from suanli.live.verify import _device, verify_inference, verify_training
    from suanli.models.params import count_params
    from suanli.models.resolve import load_model

    if opts["task"] in ("lora", "qlora"):
        raise ValueError(
            "verify runs full training steps and inference; LoRA/QLoRA steps need "
            "peft and bitsandbytes, not supported yet: use --task full or infer"
        )
    if opts["task"] == "infer":
        opts["context"] = prompt + output_tokens
    work = work_from_options(opts)
    loaded = load_model(model)
    cfg = (
        loaded.preset.config()
        if loaded.preset is not None
        else json.loads(Path(loaded.location, "config.json").read_text())
        if Path(loaded.location).is_dir()
        else json.loads(Path(loaded.location).read_text())
    )
    if _device() == "cpu" and count_params(loaded.spec).total > CPU_PARAM_LIMIT:
        raise ValueError(
            f"{model} has {count_params(loaded.spec).total / 1e9:.1f}B parameters: "
            "too slow on the CPU; use a smaller preset or a GPU"
        )
    if isinstance(work, TrainWork):
        result = verify_training(loaded.spec, cfg, work, steps)
    else:
        result = verify_inference(loaded.spec, cfg, work, prompt, output_tokens)
    doc = {"model": model, "task": opts["task"], **result.as_dict()}
    if save:
        from suanli.live.bench import local_calibration_path

        path = local_calibration_path(f"verify-{result.device}").with_suffix(".json")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(doc, indent=1))
        doc["saved_to"] = str(path)
    if as_json:
        print_json(doc)
        return
    rows = []
    for key, measured in result.measured.items():
        est = result.estimate.get(key)
        err = result.error.get(key)
        rows.append(
            [
                key,
                _fmt(key, est) if est is not None else "-",
                _fmt(key, measured),
                f"{err:+.1%}" if err is not None else "-",
            ]
        )
    print_table(
        f"{model} {opts['task']} on {result.device}: estimate vs measured",
        ["component", "estimate", "measured", "error"],
        rows,
        right_align=["estimate", "measured", "error"],
    )
    for note in result.notes:
        click.echo(f"note: {note}")
