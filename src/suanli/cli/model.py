"""``suanli model MODEL`` (architecture and exact parameter counts) and ``suanli models``."""

from __future__ import annotations

from typing import Any

import click

from suanli.cli.render import print_json, print_table
from suanli.models.presets import presets
from suanli.models.resolve import LoadedModel, load_model
from suanli.models.spec import ModelSpec
from suanli.units import fmt_count


def model_summary(loaded: LoadedModel) -> dict[str, Any]:
    """The JSON object of ``suanli model --json`` (counts are plain integers)."""
    spec: ModelSpec = loaded.spec
    att = spec.attention
    out: dict[str, Any] = {
        "name": loaded.location,
        "source": loaded.source,
        "architecture": spec.architecture,
        "params_total": loaded.params.total,
        "params_active": loaded.params.active,
        "params_by_component": loaded.params.by_component,
        "layers": spec.num_layers,
        "hidden_size": spec.hidden_size,
        "heads": att.num_heads,
        "kv_heads": att.num_kv_heads,
        "head_dim": att.head_dim,
        "attention": att.kind,
        "vocab_size": spec.vocab_size,
        "intermediate_size": spec.mlp.intermediate_size if spec.mlp else None,
        "tie_word_embeddings": spec.tie_word_embeddings,
        "max_position_embeddings": spec.max_position_embeddings,
        "sliding_window": att.sliding_window,
        "sliding_window_layers": len(spec.sliding_window_layers),
        "torch_dtype": spec.torch_dtype or None,
        "notes": list(spec.notes),
    }
    if spec.moe is not None:
        out["moe"] = {
            "experts": spec.moe.num_experts,
            "experts_per_token": spec.moe.experts_per_token,
            "expert_intermediate_size": spec.moe.expert.intermediate_size,
            "shared_expert_intermediate_size": (
                spec.moe.shared_expert.intermediate_size if spec.moe.shared_expert else 0
            ),
            "moe_layers": len(spec.moe_layers),
        }
    if att.kind == "mla":
        out["mla"] = {
            "q_lora_rank": att.q_lora_rank,
            "kv_lora_rank": att.kv_lora_rank,
            "qk_rope_head_dim": att.qk_rope_head_dim,
            "qk_nope_head_dim": att.qk_nope_head_dim,
            "v_head_dim": att.v_head_dim,
        }
    if loaded.preset is not None and loaded.preset.published_params_total:
        p = loaded.preset
        out["published"] = {
            "params_total": p.published_params_total,
            "params_active": p.published_params_active,
            "exact": p.params_exact,
            "buffers_in_total": p.published_buffers,
            "active_excludes_embeddings": p.active_excludes_embeddings,
            "source": p.params_source,
        }
    if loaded.stored is not None:
        out["stored"] = {
            "params_total": loaded.stored.total,
            "by_dtype": loaded.stored.by_dtype,
            "files": loaded.stored.files,
        }
    return out


@click.command("model")
@click.argument("model")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document.")
def model_cmd(model: str, as_json: bool) -> None:
    """Parameters (total, active, by component) and architecture facts of MODEL.

    MODEL is a preset name ('suanli models'), a config.json or a folder holding one, or a
    Hugging Face id org/name (only config.json and safetensors headers are fetched).
    """
    loaded = load_model(model)
    info = model_summary(loaded)
    if as_json:
        print_json(info)
        return
    spec = loaded.spec
    att = spec.attention
    facts = [
        ["architecture", spec.architecture],
        ["layers", str(spec.num_layers)],
        ["hidden size", str(spec.hidden_size)],
        [
            "attention",
            f"{att.kind.upper()}: {att.num_heads} heads, {att.num_kv_heads} KV heads, "
            f"head dim {att.head_dim}",
        ],
        ["vocabulary", f"{spec.vocab_size:,}"],
        ["tied embeddings", "yes" if spec.tie_word_embeddings else "no"],
    ]
    if spec.mlp is not None:
        kind = "gated" if spec.mlp.gated else "plain"
        facts.append(
            ["MLP", f"{kind} {spec.mlp.activation}, intermediate {spec.mlp.intermediate_size}"]
        )
    if spec.moe is not None:
        m = spec.moe
        shared = f", shared width {m.shared_expert.intermediate_size}" if m.shared_expert else ""
        facts.append(
            [
                "MoE",
                f"{m.num_experts} experts, top-{m.experts_per_token}, expert width "
                f"{m.expert.intermediate_size}{shared}, {len(spec.moe_layers)} MoE layers",
            ]
        )
    if att.sliding_window:
        facts.append(
            ["sliding window", f"{att.sliding_window} on {len(spec.sliding_window_layers)} layers"]
        )
    if spec.max_position_embeddings:
        facts.append(["max positions", f"{spec.max_position_embeddings:,}"])
    print_table(f"{loaded.location} ({loaded.source})", ["fact", "value"], facts)

    total = loaded.params.total
    rows = [
        [name, f"{n:,}", f"{100 * n / total:.1f}%"]
        for name, n in loaded.params.by_component.items()
        if n
    ]
    rows.append(["total", f"{total:,}", fmt_count(total)])
    if loaded.params.active != total:
        rows.append(
            ["active per token", f"{loaded.params.active:,}", fmt_count(loaded.params.active)]
        )
    if "published" in info:
        pub = info["published"]
        kind = "exact" if pub["exact"] else "rounded"
        rows.append([f"published ({kind})", f"{pub['params_total']:,}", pub["source"]])
    if "stored" in info:
        rows.append(
            [
                "stored in safetensors",
                f"{info['stored']['params_total']:,}",
                ", ".join(info["stored"]["by_dtype"]),
            ]
        )
    print_table("parameters", ["component", "count", "share"], rows, right_align=["count"])
    for note in spec.notes:
        click.echo(f"note: {note}")


@click.command("models")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document.")
def models_cmd(as_json: bool) -> None:
    """List the bundled model presets (they work offline by name)."""
    from suanli.models.config import spec_from_config
    from suanli.models.params import count_params

    out = []
    for p in presets().values():
        counts = count_params(spec_from_config(p.config(), p.name))
        out.append(
            {
                "name": p.name,
                "family": p.family,
                "hf_id": p.hf_id,
                "params_total": counts.total,
                "params_active": counts.active,
                "published_params_total": p.published_params_total,
            }
        )
    if as_json:
        print_json(out)
        return
    rows = [
        [
            m["name"],
            m["family"],
            fmt_count(m["params_total"]),
            fmt_count(m["params_active"]),
            m["hf_id"],
        ]
        for m in out
    ]
    print_table(
        f"{len(out)} presets",
        ["name", "family", "params", "active", "Hugging Face id"],
        rows,
        right_align=["params", "active"],
    )
