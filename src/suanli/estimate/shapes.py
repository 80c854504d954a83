"""The linear layers of a model as shapes: what LoRA adapts, QLoRA quantizes, Adafactor factors."""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from suanli.models.spec import ModelSpec

#: Kinds of linear layers inside the transformer blocks.
LINEAR_KINDS = (
    "q",
    "k",
    "v",
    "qkv",
    "o",
    "gate",
    "up",
    "gate_up",
    "down",
    "q_a",
    "q_b",
    "kv_a",
    "kv_b",
    "experts",
    "shared",
)


@dataclass(frozen=True, kw_only=True)
class LinearShape:
    """``count`` linear layers of ``n_in x n_out`` weights of one kind, over the whole model."""

    kind: str
    n_in: int
    n_out: int
    count: int

    @property
    def weights(self) -> int:
        """Weights in one of these layers."""
        return self.n_in * self.n_out

    def targeted_by(self, targets: tuple[str, ...]) -> bool:
        """Whether LoRA targets (``q k v o gate up down``) adapt this kind (fused kinds count
        when any of their parts is targeted)."""
        if self.kind == "qkv":
            return any(t in targets for t in ("q", "k", "v"))
        if self.kind == "gate_up":
            return any(t in targets for t in ("gate", "up"))
        if self.kind == "q_b":
            return "q" in targets
        if self.kind == "kv_b":
            return "k" in targets or "v" in targets
        return self.kind in targets


@lru_cache(maxsize=256)
def linear_shapes(spec: ModelSpec) -> tuple[LinearShape, ...]:
    """Every linear weight inside the layers (embeddings and LM head excluded)."""
    h, layers = spec.hidden_size, spec.num_layers
    att = spec.attention
    shapes: list[LinearShape] = []
    if att.kind == "mla":
        nh = att.num_heads
        if att.q_lora_rank:
            shapes += [
                LinearShape(kind="q_a", n_in=h, n_out=att.q_lora_rank, count=layers),
                LinearShape(
                    kind="q_b", n_in=att.q_lora_rank, n_out=nh * att.head_dim, count=layers
                ),
            ]
        else:
            shapes.append(LinearShape(kind="q", n_in=h, n_out=nh * att.head_dim, count=layers))
        shapes += [
            LinearShape(
                kind="kv_a", n_in=h, n_out=att.kv_lora_rank + att.qk_rope_head_dim, count=layers
            ),
            LinearShape(
                kind="kv_b",
                n_in=att.kv_lora_rank,
                n_out=nh * (att.qk_nope_head_dim + att.v_head_dim),
                count=layers,
            ),
        ]
    else:
        q_out = att.num_heads * att.head_dim
        kv_out = att.num_kv_heads * att.head_dim
        if att.fused_qkv:
            shapes.append(LinearShape(kind="qkv", n_in=h, n_out=q_out + 2 * kv_out, count=layers))
        else:
            shapes += [
                LinearShape(kind="q", n_in=h, n_out=q_out, count=layers),
                LinearShape(kind="k", n_in=h, n_out=kv_out, count=layers),
                LinearShape(kind="v", n_in=h, n_out=kv_out, count=layers),
            ]
    shapes.append(LinearShape(kind="o", n_in=att.num_heads * att.v_head_dim, n_out=h, count=layers))
    dense = spec.num_dense_layers
    if spec.mlp is not None and dense:
        width = spec.mlp.intermediate_size
        if spec.mlp.gated and spec.architecture == "phi3":
            shapes.append(LinearShape(kind="gate_up", n_in=h, n_out=2 * width, count=dense))
        elif spec.mlp.gated:
            shapes += [
                LinearShape(kind="gate", n_in=h, n_out=width, count=dense),
                LinearShape(kind="up", n_in=h, n_out=width, count=dense),
            ]
        else:
            shapes.append(LinearShape(kind="up", n_in=h, n_out=width, count=dense))
        shapes.append(LinearShape(kind="down", n_in=width, n_out=h, count=dense))
    if spec.moe is not None and spec.moe_layers:
        moe = spec.moe
        n_moe = len(spec.moe_layers)
        width = moe.expert.intermediate_size
        shapes += [
            LinearShape(kind="experts", n_in=h, n_out=width, count=2 * moe.num_experts * n_moe),
            LinearShape(kind="experts", n_in=width, n_out=h, count=moe.num_experts * n_moe),
        ]
        if moe.shared_expert is not None:
            sw = moe.shared_expert.intermediate_size
            shapes += [
                LinearShape(kind="shared", n_in=h, n_out=sw, count=2 * n_moe),
                LinearShape(kind="shared", n_in=sw, n_out=h, count=n_moe),
            ]
    return tuple(shapes)


@lru_cache(maxsize=256)
def serving_shapes(spec: ModelSpec, projections: str = "fused") -> tuple[LinearShape, ...]:
    """The GEMMs a serving engine launches for the layers' linear weights (for timing; LoRA,
    quantization and memory read :func:`linear_shapes`). ``fused``: q, k and v as one ``qkv``
    GEMM and the gated MLP's gate and up as one ``gate_up`` GEMM, the experts' too (vLLM's
    ``QKVParallelLinear`` and ``MergedColumnParallelLinear``, its fused-MoE ``w13``); ``qkv``:
    only q, k and v fused (gpt-fast's ``wqkv``); ``separate``: one GEMM per weight, as the
    model's modules are (transformers, llama.cpp). Same weights and FLOPs either way; fewer,
    wider GEMMs."""
    shapes = list(linear_shapes(spec))
    if projections == "separate":
        return tuple(shapes)
    out: list[LinearShape] = []
    parts = {s.kind: s for s in shapes}
    q, k, v = parts.get("q"), parts.get("k"), parts.get("v")
    fuse_qkv = q is not None and k is not None and v is not None
    fuse_mlp = projections == "fused"
    for s in shapes:
        if fuse_qkv and s.kind == "q" and k is not None and v is not None:
            out.append(
                LinearShape(
                    kind="qkv", n_in=s.n_in, n_out=s.n_out + k.n_out + v.n_out, count=s.count
                )
            )
        elif fuse_qkv and s.kind in ("k", "v"):
            continue
        elif fuse_mlp and s.kind == "gate" and "up" in parts:
            out.append(LinearShape(kind="gate_up", n_in=s.n_in, n_out=2 * s.n_out, count=s.count))
        elif fuse_mlp and s.kind == "up" and "gate" in parts:
            continue
        elif fuse_mlp and s.kind in ("experts", "shared") and s.n_in == spec.hidden_size:
            # The gate and up projections, counted twice per expert: one grouped GEMM of both.
            out.append(LinearShape(kind=s.kind, n_in=s.n_in, n_out=2 * s.n_out, count=s.count // 2))
        else:
            out.append(s)
    return tuple(out)
