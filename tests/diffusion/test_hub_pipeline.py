"""Text-to-image pipelines from the hub through huggingface_hub's cache (faked: no network)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from suanli.answers.image import ImageRequest, generate_image
from suanli.diffusion.hub import hub_pipeline
from suanli.diffusion.pipeline import PipelineError, find_pipeline
from suanli.models.hub import HubGatedError, HubOfflineError, hub_revision
from tests.models.fake_hub import FakeHub, hub_exception

COMPONENT_FILES = {"tokenizer/vocab.json": "{}", "transformer/model.safetensors": "weights"}


def pipeline_files(name: str) -> dict[str, str]:
    """A preset pipeline's model_index.json and component configs, as a hub repo holds them."""
    pipe = find_pipeline(name)
    assert pipe is not None
    index: dict[str, object] = {
        "_class_name": pipe.pipeline_class,
        "scheduler": ["diffusers", "EulerDiscreteScheduler"],
        "tokenizer": ["transformers", "CLIPTokenizer"],
    }
    files = {}
    for comp in pipe.components:
        diffusers = comp.cls.startswith(("UNet", "SD3", "Flux", "Auto"))
        lib = "diffusers" if diffusers else "transformers"
        index[comp.name] = [lib, comp.cls]
        files[f"{comp.name}/config.json"] = json.dumps(comp.config)
    return {"model_index.json": json.dumps(index), **files, **COMPONENT_FILES}


@pytest.fixture
def fake(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> FakeHub:
    monkeypatch.setenv("SUANLI_LANG", "en")
    return FakeHub(tmp_path / "hf-cache").install(monkeypatch)


def test_configs_only_at_the_revision_from_one_commit(fake: FakeHub) -> None:
    commit = fake.add("someone/my-sd3", pipeline_files("sd3-medium"), "v2")
    with hub_revision("v2"):
        first = generate_image(ImageRequest("someone/my-sd3", "h100-sxm-80gb"))
    assert first.model == "someone/my-sd3"
    fetched = sorted(c[1] for c in fake.calls)
    assert fetched == sorted(
        [
            "model_index.json",
            "text_encoder/config.json",
            "text_encoder_2/config.json",
            "text_encoder_3/config.json",
            "transformer/config.json",
            "vae/config.json",
        ]
    )  # no tokenizer, no weights
    assert fake.calls[0][2] == "v2"  # the index at the revision ...
    assert {c[2] for c in fake.calls[1:]} == {commit}  # ... the components at its commit
    preset = generate_image(ImageRequest("sd3-medium", "h100-sxm-80gb"))
    assert first.seconds_per_image == pytest.approx(preset.seconds_per_image)


def test_revision_argument_and_pipeline_name(fake: FakeHub) -> None:
    fake.add("someone/my-sdxl", pipeline_files("sdxl"), "refs/pr/3")
    pipe = hub_pipeline("someone/my-sdxl", revision="refs/pr/3")
    assert pipe.name == "someone/my-sdxl" and pipe.source == "hub"
    assert fake.calls[0] == ("someone/my-sdxl", "model_index.json", "refs/pr/3", False)


def test_an_unread_pipeline_class_is_refused_before_its_components(fake: FakeHub) -> None:
    fake.add("someone/video", {"model_index.json": {"_class_name": "WanPipeline"}})
    with pytest.raises(PipelineError, match=r"someone/video is a WanPipeline pipeline"):
        hub_pipeline("someone/video")
    assert [c[1] for c in fake.calls] == ["model_index.json"]


def test_a_repo_without_model_index_is_not_a_pipeline(fake: FakeHub) -> None:
    fake.add("someone/llm", {"config.json": "{}"})
    with pytest.raises(PipelineError, match=r"has no model_index\.json at main, so it is not a"):
        hub_pipeline("someone/llm")


def test_gated_and_offline_are_typed(fake: FakeHub, monkeypatch: pytest.MonkeyPatch) -> None:
    fake.fail = hub_exception("GatedRepoError")
    with pytest.raises(PipelineError, match="gated model") as err:
        hub_pipeline("someone/flux")
    assert isinstance(err.value.__cause__, HubGatedError)
    fake.fail = None
    monkeypatch.setenv("HF_HUB_OFFLINE", "on")
    with pytest.raises(ValueError, match=r"offline mode is on \(HF_HUB_OFFLINE\)"):
        generate_image(ImageRequest("someone/not-cached", "h100-sxm-80gb"))
    with pytest.raises(PipelineError) as offline:
        hub_pipeline("someone/not-cached")
    assert isinstance(offline.value.__cause__, HubOfflineError)


def test_offline_reads_a_cached_pipeline(fake: FakeHub, monkeypatch: pytest.MonkeyPatch) -> None:
    fake.add("someone/my-sdxl", pipeline_files("sdxl"))
    online = hub_pipeline("someone/my-sdxl")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    offline = hub_pipeline("someone/my-sdxl")
    assert offline.components == online.components
    assert all(c[3] for c in fake.calls[len(fake.calls) // 2 :])  # the cache only
