"""``suanli doctor scaling``: the same DDP step on 1 and N processes of this machine, or on 1 node
and N nodes (``--nnodes``) with the all-reduce bus bandwidth of each tier."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

import click

from suanli.cli.render import print_json, print_line, print_table
from suanli.cli.types import IntRange
from suanli.i18n import N_, _, sentence
from suanli.units import MiB, fmt_bytes, fmt_rate

if TYPE_CHECKING:
    from suanli.answers.scaling import NodesScalingAnswer, ScalingAnswer

#: Tier names as shown (translated when shown).
_TIER = {"intra-node": N_("intra-node"), "inter-node": N_("inter-node"), "all": N_("all ranks")}


def _sizes(text: str | None) -> tuple[int, ...] | None:
    """``--sizes 0.0625,1,16`` (MiB) as bytes; ValueError (exit 2) for anything else."""
    if text is None:
        return None
    try:
        values = [float(part) for part in text.split(",") if part.strip()]
    except ValueError:
        values = []
    if not values or any(not v == v or v <= 0 for v in values):  # v != v: NaN
        raise ValueError(
            N_("--sizes takes 1 to 8 message sizes from 4 bytes to 1 GiB, e.g. 0.0625,1,16 (MiB)")
        )
    return tuple(int(min(v, 2**31) * MiB) for v in values)


@click.command(
    "scaling",
    help=N_(
        "The same DDP training step on 1 and N processes: speed-up, efficiency, communication "
        "share and its cause, next to what the speed model predicts from the measured all-reduce."
        "\n\nWith --nnodes N, 1 node against N: all-reduce bus bandwidth inside a node, between "
        "nodes and over every rank, each next to the speed model's figure for its link. Launch "
        "it like training (torchrun --nnodes N --nproc-per-node G -m suanli doctor scaling "
        "--nnodes N, or srun python -m suanli doctor scaling --nnodes N); rank 0 prints. "
        "Without a launcher it simulates N nodes with local processes over loopback."
    ),
)
@click.option(
    "--procs",
    type=IntRange(min=2, max=64),
    default=2,
    show_default=True,
    help=N_("Ranks in the multi-process run (gloo on the CPU, NCCL on GPUs)."),
)
@click.option(
    "--nnodes",
    type=IntRange(min=2, max=1024),
    default=None,
    help=N_("Compare 1 node against this many (under torchrun or srun, or simulated)."),
)
@click.option(
    "--procs-per-node",
    type=IntRange(min=1, max=16),
    default=2,
    show_default=True,
    help=N_("Local processes per simulated node (without a launcher)."),
)
@click.option(
    "--sizes",
    default=None,
    metavar="MIB,...",
    help=N_("All-reduce message sizes in MiB, comma-separated (default 0.0625,1,16)."),
)
@click.option(
    "--backend",
    type=click.Choice(["auto", "gloo", "nccl"]),
    default="auto",
    show_default=True,
    help=N_("Process-group backend: NCCL with GPUs, else gloo."),
)
@click.option(
    "--inter-node",
    default=None,
    help=N_("Link between nodes the speed model assumes: ib-ndr, ib-hdr, roce-200g, ..."),
)
@click.option("--hidden", type=IntRange(min=8, max=16384), default=1024, show_default=True)
@click.option("--layers", type=IntRange(min=1, max=64), default=4, show_default=True)
@click.option("--batch", type=IntRange(min=1, max=4096), default=16, show_default=True)
@click.option("--json", "as_json", is_flag=True, help=N_("Print one JSON document."))
def scaling_cmd(
    procs: int,
    nnodes: int | None,
    procs_per_node: int,
    sizes: str | None,
    backend: str,
    inter_node: str | None,
    hidden: int,
    layers: int,
    batch: int,
    as_json: bool,
) -> None:
    """``suanli doctor scaling``: its help is the ``help=`` above (translated with --lang zh)."""
    if nnodes is not None:
        _nodes(nnodes, procs_per_node, sizes, backend, inter_node, hidden, layers, batch, as_json)
        return
    from suanli.answers.scaling import ScalingRequest, scaling

    answer = scaling(ScalingRequest(procs=procs, hidden=hidden, layers=layers, batch=batch))
    if as_json:
        print_json(answer.to_json())
        return
    rows = _step_rows(
        [_("step, 1 process"), f"{answer.step_1_s * 1e3:.1f} ms"],
        [_("step, {procs} processes").format(procs=procs), f"{answer.step_n_s * 1e3:.1f} ms"],
        answer,
    )
    print_table(
        _("scaling over {procs} {backend} processes ({params} params)").format(
            procs=procs, backend=answer.backend, params=f"{answer.params:,}"
        ),
        ["", ""],
        rows,
    )
    print_line(_("cause: {cause}").format(cause=sentence(answer.cause)))


def _step_rows(
    one: list[str], many: list[str], answer: ScalingAnswer | NodesScalingAnswer
) -> list[list[str]]:
    """The step table of both views: the two measured steps, then the prediction, the bare
    all-reduce, the speed-up and the communication share (the answer's numbers)."""
    return [
        one,
        many,
        [
            _("predicted (speed model)"),
            f"{answer.predicted_step_n_s * 1e3:.1f} ms ({answer.prediction_error:+.0%})",
        ],
        [_("bare all-reduce of the gradients"), f"{answer.allreduce_s * 1e3:.1f} ms"],
        [
            _("speed-up"),
            _("{speedup}x ({efficiency} efficiency)").format(
                speedup=f"{answer.speedup:.2f}", efficiency=f"{answer.efficiency:.0%}"
            ),
        ],
        [_("communication share"), f"{answer.communication_share:.0%}"],
    ]


def _nodes(
    nnodes: int,
    procs_per_node: int,
    sizes: str | None,
    backend: str,
    inter_node: str | None,
    hidden: int,
    layers: int,
    batch: int,
    as_json: bool,
) -> None:
    from suanli.answers.scaling import NodesScalingRequest, scaling_nodes

    req = NodesScalingRequest(
        nnodes=nnodes,
        procs_per_node=procs_per_node,
        backend=backend,
        inter_node=inter_node,
        hidden=hidden,
        layers=layers,
        batch=batch,
    )
    parsed = _sizes(sizes)
    if parsed is not None:
        from dataclasses import replace

        req = replace(req, sizes_bytes=parsed)
    answer = scaling_nodes(req)
    if answer is None:  # not rank 0: rank 0 prints
        sys.exit(0)
    if as_json:
        print_json(answer.to_json())
        return
    _print_nodes(answer)


def _gbps(value: float | None) -> str:
    return "N/A" if value is None else fmt_rate(value, "B/s")


def _print_nodes(answer: NodesScalingAnswer) -> None:
    # The speed model's columns only where it has a figure (NCCL on a catalog GPU).
    modelled = any(tier.link for tier in answer.tiers)
    rows = []
    for tier in answer.tiers:
        label = _("{tier} ({ranks})").format(tier=_(_TIER[tier.name]), ranks=tier.ranks)
        for i, point in enumerate(tier.points):
            row = [
                label if i == 0 else "",
                fmt_bytes(point.nbytes),
                f"{point.seconds * 1e3:.3f} ms",
                _gbps(point.bus_bytes_per_s),
            ]
            if modelled:
                ratio = point.measured_over_predicted
                row += [
                    _gbps(point.predicted_bus_bytes_per_s),
                    "N/A" if ratio is None else f"{ratio:.0%}",
                ]
            rows.append(row)
    title = _("all-reduce on {nnodes} nodes x {per} ranks ({launcher}, {backend})").format(
        nnodes=answer.nnodes,
        per=answer.ranks_per_node,
        launcher=answer.launcher,
        backend=answer.backend,
    )
    headers = [_("tier (ranks)"), _("message size"), _("time"), _("bus bandwidth")]
    if modelled:
        headers += [_("speed model"), _("measured/model")]
    print_table(title, headers, rows)
    for tier in answer.tiers:
        if tier.link:
            print_line(
                _("{tier}: the speed model's link is {link}").format(
                    tier=_(_TIER[tier.name]), link=sentence(tier.link)
                )
            )
    if answer.prediction_note:
        print_line(sentence(answer.prediction_note))
    step_rows = _step_rows(
        [_("step, node 0 alone"), f"{answer.step_1_node_s * 1e3:.1f} ms"],
        [
            _("step, {nnodes} nodes").format(nnodes=answer.nnodes),
            f"{answer.step_n_nodes_s * 1e3:.1f} ms",
        ],
        answer,
    )
    print_table(
        _("training step: 1 node against {nnodes} ({params} params)").format(
            nnodes=answer.nnodes, params=f"{answer.params:,}"
        ),
        ["", ""],
        step_rows,
    )
    if answer.launcher == "simulated":
        print_line(_("simulated nodes: local processes over loopback, not your network"))
    print_line(_("cause: {cause}").format(cause=sentence(answer.cause)))
