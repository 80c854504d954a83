"""``suanli model MODEL`` (architecture and exact parameter counts) and ``suanli models``."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from suanli.cli.options import revision_option
from suanli.cli.render import print_json, print_table
from suanli.i18n import N_, _, sentence
from suanli.units import fmt_count

if TYPE_CHECKING:
    pass

#: The parameter groups of an answer (English keys in the JSON), shown translated.
COMPONENT_WORDS = (
    N_("embeddings"),
    N_("attention"),
    N_("mlp"),
    N_("experts"),
    N_("shared_experts"),
    N_("router"),
    N_("norms"),
    N_("lm_head"),
)


@click.command(
    "model",
    help=N_(
        "Parameters (total, active, by component) and architecture facts of MODEL.\n"
        "\n"
        "MODEL is a preset name ('suanli models'), a config.json or a folder holding one, or a "
        "Hugging Face id org/name (only config.json and safetensors headers are fetched)."
    ),
)
@click.argument("model")
@revision_option
@click.option("--json", "as_json", is_flag=True, help=N_("Print one JSON document."))
def model_cmd(model: str, as_json: bool) -> None:
    """``suanli model``: its help is the ``help=`` above (translated with --lang zh)."""
    from suanli.answers.model import ModelRequest
    from suanli.answers.model import model as model_answer

    info = model_answer(ModelRequest(model=model))
    if as_json:
        print_json(info.to_json())
        return
    facts = [
        [_("architecture"), info.architecture],
        [_("layers"), str(info.layers)],
        [_("hidden size"), str(info.hidden_size)],
        [
            _("attention"),
            _("{kind}: {heads} heads, {kv_heads} KV heads, head dim {head_dim}").format(
                kind=info.attention.upper(),
                heads=info.heads,
                kv_heads=info.kv_heads,
                head_dim=info.head_dim,
            ),
        ],
        [_("vocabulary"), f"{info.vocab_size:,}"],
        [_("tied embeddings"), _("yes") if info.tie_word_embeddings else _("no")],
    ]
    if info.mlp_gated is not None:
        mlp = (
            _("gated {activation}, intermediate {size}")
            if info.mlp_gated
            else _("plain {activation}, intermediate {size}")
        )
        facts.append(
            [_("MLP"), mlp.format(activation=info.mlp_activation, size=info.intermediate_size)]
        )
    if info.moe is not None:
        m = info.moe
        values = {
            "experts": m.experts,
            "top": m.experts_per_token,
            "width": m.expert_intermediate_size,
            "layers": m.moe_layers,
        }
        if m.shared_expert:
            moe = _(
                "{experts} experts, top-{top}, expert width {width}, shared width {shared}, "
                "{layers} MoE layers"
            ).format(shared=m.shared_expert_intermediate_size, **values)
        else:
            moe = _(
                "{experts} experts, top-{top}, expert width {width}, {layers} MoE layers"
            ).format(**values)
        facts.append([_("MoE"), moe])
    if info.sliding_window:
        facts.append(
            [
                _("sliding window"),
                _("{window} on {layers} layers").format(
                    window=info.sliding_window, layers=info.sliding_window_layers
                ),
            ]
        )
    if info.max_position_embeddings:
        facts.append([_("max positions"), f"{info.max_position_embeddings:,}"])
    print_table(f"{info.name} ({info.source})", [_("fact"), _("value")], facts)

    total = info.params_total
    rows = [
        [_(name), f"{n:,}", f"{100 * n / total:.1f}%"]
        for name, n in info.params_by_component.items()
        if n
    ]
    rows.append([_("total"), f"{total:,}", fmt_count(total)])
    if info.params_active != total:
        rows.append(
            [_("active per token"), f"{info.params_active:,}", fmt_count(info.params_active)]
        )
    if info.published is not None:
        pub = info.published
        published = _("published (exact)") if pub.exact else _("published (rounded)")
        rows.append([published, f"{pub.params_total:,}", pub.source])
    if info.stored is not None:
        rows.append(
            [
                _("stored in the GGUF file")
                if info.name.endswith(".gguf")
                else _("stored in safetensors"),
                f"{info.stored.params_total:,}",
                ", ".join(info.stored.by_dtype),
            ]
        )
    count = _("count")
    print_table(_("parameters"), [_("component"), count, _("share")], rows, right_align=[count])
    for note in info.notes:
        click.echo(_("note: {note}").format(note=sentence(note)))


@click.command("models", help=N_("List the bundled model presets (they work offline by name)."))
@click.option("--json", "as_json", is_flag=True, help=N_("Print one JSON document."))
def models_cmd(as_json: bool) -> None:
    """``suanli models``: its help is the ``help=`` above (translated with --lang zh)."""
    from suanli.answers.model import preset_list

    answer = preset_list()
    if as_json:
        print_json(answer.to_json())
        return
    out = answer.models
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
    params, active = _("params"), _("active")
    print_table(
        _("{count} presets").format(count=len(out)),
        [_("name"), _("family"), params, active, _("Hugging Face id")],
        rows,
        right_align=[params, active],
    )
