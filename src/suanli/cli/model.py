"""``suanli model MODEL`` (architecture and exact parameter counts) and ``suanli models``."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from suanli.cli.render import print_json, print_table
from suanli.units import fmt_count

if TYPE_CHECKING:
    pass


@click.command("model")
@click.argument("model")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document.")
def model_cmd(model: str, as_json: bool) -> None:
    """Parameters (total, active, by component) and architecture facts of MODEL.

    MODEL is a preset name ('suanli models'), a config.json or a folder holding one, or a
    Hugging Face id org/name (only config.json and safetensors headers are fetched).
    """
    from suanli.answers.model import ModelRequest
    from suanli.answers.model import model as model_answer

    info = model_answer(ModelRequest(model=model))
    if as_json:
        print_json(info.to_json())
        return
    facts = [
        ["architecture", info.architecture],
        ["layers", str(info.layers)],
        ["hidden size", str(info.hidden_size)],
        [
            "attention",
            f"{info.attention.upper()}: {info.heads} heads, {info.kv_heads} KV heads, "
            f"head dim {info.head_dim}",
        ],
        ["vocabulary", f"{info.vocab_size:,}"],
        ["tied embeddings", "yes" if info.tie_word_embeddings else "no"],
    ]
    if info.mlp_gated is not None:
        kind = "gated" if info.mlp_gated else "plain"
        facts.append(
            ["MLP", f"{kind} {info.mlp_activation}, intermediate {info.intermediate_size}"]
        )
    if info.moe is not None:
        m = info.moe
        shared = f", shared width {m.shared_expert_intermediate_size}" if m.shared_expert else ""
        facts.append(
            [
                "MoE",
                f"{m.experts} experts, top-{m.experts_per_token}, expert width "
                f"{m.expert_intermediate_size}{shared}, {m.moe_layers} MoE layers",
            ]
        )
    if info.sliding_window:
        facts.append(
            ["sliding window", f"{info.sliding_window} on {info.sliding_window_layers} layers"]
        )
    if info.max_position_embeddings:
        facts.append(["max positions", f"{info.max_position_embeddings:,}"])
    print_table(f"{info.name} ({info.source})", ["fact", "value"], facts)

    total = info.params_total
    rows = [
        [name, f"{n:,}", f"{100 * n / total:.1f}%"]
        for name, n in info.params_by_component.items()
        if n
    ]
    rows.append(["total", f"{total:,}", fmt_count(total)])
    if info.params_active != total:
        rows.append(["active per token", f"{info.params_active:,}", fmt_count(info.params_active)])
    if info.published is not None:
        pub = info.published
        kind = "exact" if pub.exact else "rounded"
        rows.append([f"published ({kind})", f"{pub.params_total:,}", pub.source])
    if info.stored is not None:
        rows.append(
            [
                "stored in the GGUF file"
                if info.location.endswith(".gguf")
                else "stored in safetensors",
                f"{info.stored.params_total:,}",
                ", ".join(info.stored.by_dtype),
            ]
        )
    print_table("parameters", ["component", "count", "share"], rows, right_align=["count"])
    for note in info.notes:
        click.echo(f"note: {note}")


@click.command("models")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document.")
def models_cmd(as_json: bool) -> None:
    """List the bundled model presets (they work offline by name)."""
    from suanli.answers.base import jsonable
    from suanli.answers.model import preset_rows

    out = preset_rows()
    if as_json:
        print_json(jsonable(out))
        return
    rows = [
        [
            m.name,
            m.family,
            fmt_count(m.params_total),
            fmt_count(m.params_active),
            m.hf_id,
        ]
        for m in out
    ]
    print_table(
        f"{len(out)} presets",
        ["name", "family", "params", "active", "Hugging Face id"],
        rows,
        right_align=["params", "active"],
    )
