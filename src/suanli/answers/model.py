"""What is this model? Its architecture and exact parameter counts (``suanli model``), and the
bundled presets (``suanli models``, ``GET /api/presets``)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import lru_cache

from suanli.answers.base import NOT_IN_JSON, OMIT_NONE, Answer
from suanli.answers.model_source import load_model
from suanli.models.config import spec_from_config
from suanli.models.params import count_params
from suanli.models.presets import DEFAULT_MODEL, presets
from suanli.models.resolve import LoadedModel


@dataclass(frozen=True, kw_only=True)
class MoeInfo:
    """The mixture-of-experts layout."""

    experts: int
    experts_per_token: int
    expert_intermediate_size: int
    shared_expert_intermediate_size: int
    """0 when the model has no shared expert."""
    moe_layers: int
    """Layers whose MLP is a mixture of experts."""
    shared_expert: bool = field(default=False, metadata=NOT_IN_JSON)
    """Whether the model has a shared expert."""


@dataclass(frozen=True, kw_only=True)
class MlaInfo:
    """Multi-head latent attention ranks and head sizes (DeepSeek-V2/V3)."""

    q_lora_rank: int
    kv_lora_rank: int
    qk_rope_head_dim: int
    qk_nope_head_dim: int
    v_head_dim: int


@dataclass(frozen=True, kw_only=True)
class PublishedParams:
    """The parameter count the model's authors publish, with its source."""

    params_total: int
    params_active: int | None
    exact: bool
    """Whether the published figure is exact (False: rounded, such as "671B")."""
    buffers_in_total: int
    """Buffers the published total includes."""
    active_excludes_embeddings: bool
    source: str


@dataclass(frozen=True, kw_only=True)
class StoredInfo:
    """What the checkpoint's safetensors headers hold (never the weights)."""

    params_total: int
    by_dtype: dict[str, int]
    """Elements per stored dtype (BF16, F32, ...)."""
    files: int


@dataclass(frozen=True)
class ModelRequest:
    """The model question."""

    model: str = DEFAULT_MODEL
    """A preset name, a config.json path or folder, or a hub id (org/name)."""


@dataclass(frozen=True, kw_only=True)
class ModelAnswer(Answer):
    """Architecture facts and exact parameter counts (total, active per token, by component)."""

    schema_name = "model"

    name: str
    """Preset name, file path or hub id."""
    source: str
    """preset, path or hub."""
    architecture: str
    params_total: int
    params_active: int
    """Parameters a token passes through (the total less the routed experts it skips)."""
    params_by_component: dict[str, int]
    layers: int
    hidden_size: int
    heads: int
    kv_heads: int
    head_dim: int
    attention: str
    """mha, gqa, mqa or mla."""
    vocab_size: int
    intermediate_size: int | None
    """The dense MLP's width; None when every layer is a mixture of experts."""
    tie_word_embeddings: bool
    max_position_embeddings: int
    """0 when the config does not say."""
    sliding_window: int | None
    sliding_window_layers: int
    """Layers that use the sliding window."""
    torch_dtype: str | None
    notes: tuple[str, ...]
    moe: MoeInfo | None = field(default=None, metadata=OMIT_NONE)
    mla: MlaInfo | None = field(default=None, metadata=OMIT_NONE)
    published: PublishedParams | None = field(default=None, metadata=OMIT_NONE)
    """The authors' figure, for presets that have one."""
    stored: StoredInfo | None = field(default=None, metadata=OMIT_NONE)
    """The checkpoint's count, when its safetensors headers were read."""
    mlp_gated: bool | None = field(default=None, metadata=NOT_IN_JSON)
    """Whether the dense MLP is gated (None: no dense MLP)."""
    mlp_activation: str | None = field(default=None, metadata=NOT_IN_JSON)


def model_info(loaded: LoadedModel) -> ModelAnswer:
    """The answer for a model already loaded (the web page loads uploads its own way)."""
    spec = loaded.spec
    att = spec.attention
    moe = None
    if spec.moe is not None:
        shared = spec.moe.shared_expert
        moe = MoeInfo(
            experts=spec.moe.num_experts,
            experts_per_token=spec.moe.experts_per_token,
            expert_intermediate_size=spec.moe.expert.intermediate_size,
            shared_expert_intermediate_size=shared.intermediate_size if shared else 0,
            moe_layers=len(spec.moe_layers),
            shared_expert=shared is not None,
        )
    mla = None
    if att.kind == "mla":
        mla = MlaInfo(
            q_lora_rank=att.q_lora_rank,
            kv_lora_rank=att.kv_lora_rank,
            qk_rope_head_dim=att.qk_rope_head_dim,
            qk_nope_head_dim=att.qk_nope_head_dim,
            v_head_dim=att.v_head_dim,
        )
    published = None
    p = loaded.preset
    if p is not None and p.published_params_total:
        published = PublishedParams(
            params_total=p.published_params_total,
            params_active=p.published_params_active,
            exact=p.params_exact,
            buffers_in_total=p.published_buffers,
            active_excludes_embeddings=p.active_excludes_embeddings,
            source=p.params_source,
        )
    stored = None
    if loaded.stored is not None:
        stored = StoredInfo(
            params_total=loaded.stored.total,
            by_dtype=loaded.stored.by_dtype,
            files=loaded.stored.files,
        )
    return ModelAnswer(
        name=loaded.location,
        source=loaded.source,
        architecture=spec.architecture,
        params_total=loaded.params.total,
        params_active=loaded.params.active,
        params_by_component=loaded.params.by_component,
        layers=spec.num_layers,
        hidden_size=spec.hidden_size,
        heads=att.num_heads,
        kv_heads=att.num_kv_heads,
        head_dim=att.head_dim,
        attention=att.kind,
        vocab_size=spec.vocab_size,
        intermediate_size=spec.mlp.intermediate_size if spec.mlp else None,
        tie_word_embeddings=spec.tie_word_embeddings,
        max_position_embeddings=spec.max_position_embeddings,
        sliding_window=att.sliding_window,
        sliding_window_layers=len(spec.sliding_window_layers),
        torch_dtype=spec.torch_dtype or None,
        notes=tuple(spec.notes),
        moe=moe,
        mla=mla,
        published=published,
        stored=stored,
        mlp_gated=spec.mlp.gated if spec.mlp else None,
        mlp_activation=spec.mlp.activation if spec.mlp else None,
    )


def model(req: ModelRequest, *, loader: Callable[[str], LoadedModel] = load_model) -> ModelAnswer:
    """Architecture and parameter counts of ``req.model``.

    ``loader`` turns the model string into a model (the web page passes its own, which refuses
    paths). Raises ``ValueError`` with one sentence on a model it cannot read.
    """
    return model_info(loader(req.model))


# --- the presets ------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class PresetRow:
    """One bundled model preset (an item of ``models`` in ``suanli models --json``)."""

    name: str
    family: str
    hf_id: str
    """The Hugging Face id its config.json was copied from."""
    params_total: int
    params_active: int
    published_params_total: int | None
    api_priced: bool
    """Whether an API price per token is known for it (``suanli cost --api``)."""


@lru_cache(maxsize=1)
def preset_rows() -> tuple[PresetRow, ...]:
    """Every bundled preset with its exact counts and whether an API price is known for it."""
    from suanli.plan.cost import cost_data

    priced = {r.id for r in cost_data().api}
    out = []
    for p in presets().values():
        counts = count_params(spec_from_config(p.config(), p.name))
        out.append(
            PresetRow(
                name=p.name,
                family=p.family,
                hf_id=p.hf_id,
                params_total=counts.total,
                params_active=counts.active,
                published_params_total=p.published_params_total,
                api_priced=p.name in priced,
            )
        )
    return tuple(out)


@dataclass(frozen=True, kw_only=True)
class PresetListAnswer(Answer):
    """The bundled model presets (``suanli models --json``, ``GET /api/presets``)."""

    schema_name = "models"

    models: tuple[PresetRow, ...]
    """One object per preset, in the order ``suanli models`` lists them."""


def preset_list() -> PresetListAnswer:
    """Every bundled preset (:func:`preset_rows`) as one versioned document."""
    return PresetListAnswer(models=preset_rows())
