"""What differs between the two transformers generations the suite passes on (4.x and 5.x).

Tests that compare suanli with a model transformers builds read the installed version's
behaviour where suanli can (Falcon's KV layout, config defaults, tied embeddings). Where
transformers 4.x runs a different implementation from the one suanli models (suanli follows the
5.x code and the training frameworks, not the 4.x loops), or cannot build the model at all, the
case is skipped on 4.x with the measured reason, through :func:`skip_on_4x`.
"""

from __future__ import annotations

import pytest


def transformers_major() -> int:
    """The installed transformers' major version."""
    import transformers

    return int(transformers.__version__.split(".")[0])


#: (what, model type or family) -> why transformers 4.x is not compared there.
ON_4X: dict[tuple[str, str], str] = {
    ("build", "stablelm"): (
        "transformers 4.x cannot build StableLM from a config: its _init_weights zeroes the "
        "bias of a LayerNorm that has none"
    ),
    ("activations", "bloom"): (
        "transformers 4.x's Bloom attention saves 2.1x the bytes of 5.x's at these sizes "
        "(its fused alibi baddbmm keeps fp32 scores); suanli models the 5.x attention"
    ),
    ("activations", "phimoe"): (
        "transformers 4.x runs PhiMoE's experts as a per-expert Python loop that keeps each "
        "expert's gathered tokens (+6% at these sizes); suanli models grouped experts"
    ),
    ("trace", "doge"): (
        "transformers 4.x's Doge opens torch.autocast on the model's device, which the meta "
        "device refuses (unsupported scalarType): suanli's meta trace of its saved bytes cannot run"
    ),
    ("activations", "mixtral"): (
        "transformers 4.x runs Mixtral's experts as a per-expert Python loop that keeps each "
        "expert's gathered tokens (+6% at these sizes); suanli models grouped experts"
    ),
}


def shipped(model_types: list[str]) -> list[str]:
    """The model types the installed transformers has a configuration class for (InternLM 3
    arrived in 5.x)."""
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING

    return [t for t in model_types if t in CONFIG_MAPPING]


def skip_on_4x(what: str, name: str) -> None:
    """Skip this case when transformers 4.x is installed and ``(what, name)`` is listed."""
    reason = ON_4X.get((what, name))
    if reason is not None and transformers_major() < 5:
        pytest.skip(reason)
