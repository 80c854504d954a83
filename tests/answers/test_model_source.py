"""A text-to-image pipeline's name given where a language model is expected: the answers' model
resolver refuses it with a pointer to ``--task generate-image``, without asking the hub; the
models layer underneath does not know pipelines (suanli.diffusion sits above it)."""

from __future__ import annotations

import pytest

import suanli
from suanli.answers import model_source
from suanli.answers.memory import MemoryRequest, memory
from suanli.models import resolve
from suanli.models.resolve import ModelSourceError


@pytest.fixture
def no_hub(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(repo_id: str, revision: str | None = None) -> resolve.LoadedModel:
        raise AssertionError(f"the hub was asked for {repo_id}")

    monkeypatch.setattr(resolve, "load_from_hub", refuse)


@pytest.mark.parametrize(
    "name", ["sdxl", "FLUX.1-dev", "black-forest-labs/FLUX.1-dev", "sd3-medium"]
)
def test_a_pipeline_name_is_refused_with_the_image_task(no_hub: None, name: str) -> None:
    with pytest.raises(ModelSourceError, match="--task generate-image") as caught:
        model_source.load_model(name)
    assert str(caught.value).startswith(f"{name} is a text-to-image pipeline")


def test_every_answer_and_the_python_api_use_that_resolver(no_hub: None) -> None:
    assert suanli.load_model is model_source.load_model
    with pytest.raises(ValueError, match="text-to-image pipeline"):
        memory(MemoryRequest(model="sdxl"))


def test_the_models_layer_alone_does_not_know_pipelines() -> None:
    with pytest.raises(ModelSourceError, match="unknown model 'sdxl'"):
        resolve.load_model("sdxl")
    # A hook it is given is asked only for a name that is no preset, path or Ollama model.
    asked: list[str] = []

    def not_a_model(name: str) -> str | None:
        asked.append(name)
        return None

    assert resolve.load_model("llama-3.1-8b", not_a_model=not_a_model).spec.name == "llama-3.1-8b"
    assert asked == []
    with pytest.raises(ModelSourceError, match="unknown model"):
        resolve.load_model("no-such-model-anywhere", not_a_model=not_a_model)
    assert asked == ["no-such-model-anywhere"]


def test_a_language_model_still_resolves_through_the_answers() -> None:
    loaded = model_source.load_model("qwen2.5-0.5b")
    assert loaded.source == "preset" and loaded.params.total > 1e8
