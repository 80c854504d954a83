"""``suanli verify MODEL --task T``: real steps on this device against the estimate."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click

from suanli.cli.options import work_request, workload_options
from suanli.cli.render import print_json, print_table
from suanli.cli.types import IntRange
from suanli.i18n import C_, N_, _, sentence

if TYPE_CHECKING:
    pass

#: The components measured (English keys in the JSON) that read as words, shown translated; the
#: others (step_time_s, kv_cache, peak_reserved...) are the JSON's keys as they are.
COMPONENT_WORDS = (N_("weights"), N_("gradients"), N_("optimizer"), N_("activations"))


def _fmt(key: str, value: float) -> str:
    if key.endswith("_s"):
        return f"{value * 1e3:,.2f} ms"
    return f"{value / 2**30:,.3f} GiB"


@click.command(
    "verify",
    help=N_(
        "Build MODEL with random weights on this device (CUDA if present, else the CPU), run real "
        "steps of --task, and print estimate vs measured per component with the error."
    ),
)
@click.argument("model")
@workload_options
@click.option(
    "--prompt",
    type=IntRange(min=1),
    default=128,
    show_default=True,
    help=N_("Inference: prompt tokens."),
)
@click.option(
    "--output",
    "output_tokens",
    type=IntRange(min=2),
    default=16,
    show_default=True,
    help=N_("Inference: generated tokens."),
)
@click.option("--steps", type=IntRange(min=1), default=3, show_default=True)
@click.option(
    "--save/--no-save",
    default=True,
    show_default=True,
    help=N_("Save the result beside the local calibration profile."),
)
@click.option("--json", "as_json", is_flag=True, help=N_("Print one JSON document."))
def verify_cmd(
    model: str, prompt: int, output_tokens: int, steps: int, save: bool, as_json: bool, **opts: Any
) -> None:
    """``suanli verify``: its help is the ``help=`` above (translated with --lang zh)."""
    from suanli.answers.verify import VerifyRequest, verify

    answer = verify(
        VerifyRequest(
            model=model,
            work=work_request(opts),
            prompt=prompt,
            output_tokens=output_tokens,
            steps=steps,
            save=save,
        )
    )
    if as_json:
        print_json(answer.to_json())
        return
    rows = []
    for key, measured in answer.measured.items():
        est = answer.estimate.get(key)
        err = answer.error.get(key)
        rows.append(
            [
                _(key),
                _fmt(key, est) if est is not None else "-",
                _fmt(key, measured),
                f"{err:+.1%}" if err is not None else "-",
            ]
        )
    figures = [_("estimate"), _("measured"), C_("measurement", "error")]
    print_table(
        _("{model} {task} on {device}: estimate vs measured").format(
            model=model, task=answer.task, device=answer.device
        ),
        [_("component"), *figures],
        rows,
        right_align=figures,
    )
    for note in answer.notes:
        click.echo(_("note: {note}").format(note=sentence(note)))
