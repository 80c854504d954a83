"""Model arguments: presets, local paths, hub ids (the hub is faked: no network in tests)."""

from __future__ import annotations

import json
import sys
import types
from pathlib import Path

import pytest

from suanli.models import resolve
from suanli.models.resolve import ModelSourceError, load_model

FIXTURES = Path(__file__).parent.parent / "fixtures" / "configs"


def test_preset_by_name_and_by_hf_id() -> None:
    a = load_model("llama-3.1-8b")
    b = load_model("meta-llama/Llama-3.1-8B")
    assert a.source == b.source == "preset"
    assert a.params.total == b.params.total == 8_030_261_248


def test_config_path_and_folder(tmp_path: Path) -> None:
    src = FIXTURES / "mistral-7b-v0.1.json"
    assert load_model(str(src)).params.total == 7_241_732_096
    (tmp_path / "config.json").write_text(src.read_text())
    loaded = load_model(str(tmp_path))
    assert loaded.source == "path" and loaded.stored is None


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{not json", "not valid JSON (line 1"),
        ("[1]", "JSON object"),
        ('{"model_type": "llama"}', "missing the required field"),
    ],
)
def test_bad_local_config(tmp_path: Path, content: str, message: str) -> None:
    path = tmp_path / "config.json"
    path.write_text(content)
    with pytest.raises(ModelSourceError, match=message.replace("(", r"\(")):
        load_model(str(path))


def test_folder_without_config(tmp_path: Path) -> None:
    with pytest.raises(ModelSourceError, match=r"holds no config\.json"):
        load_model(str(tmp_path))


def test_unknown_name_points_to_presets() -> None:
    with pytest.raises(ModelSourceError, match="suanli models"):
        load_model("llama-9")


def test_missing_file() -> None:
    with pytest.raises(ModelSourceError, match="no such file"):
        load_model("./nope/config.json")


def _fake_hub(monkeypatch: pytest.MonkeyPatch, config: Path, calls: list[str]) -> None:
    fake = types.ModuleType("huggingface_hub")

    def hf_hub_download(repo_id: str, filename: str) -> str:
        calls.append(f"{repo_id}:{filename}")
        return str(config)

    def get_safetensors_metadata(repo_id: str) -> object:
        calls.append(f"{repo_id}:safetensors")
        return types.SimpleNamespace(
            parameter_count={"BF16": 8_030_261_248}, files_metadata={"a": 1, "b": 2, "c": 3, "d": 4}
        )

    fake.hf_hub_download = hf_hub_download  # type: ignore[attr-defined]
    fake.get_safetensors_metadata = get_safetensors_metadata  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "huggingface_hub", fake)


def test_hub_id_fetches_config_only_once_and_caches(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SUANLI_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    calls: list[str] = []
    _fake_hub(monkeypatch, FIXTURES / "llama-3-8b.json", calls)
    first = load_model("someone/my-llama")
    assert calls == ["someone/my-llama:config.json", "someone/my-llama:safetensors"]
    assert first.source == "hub" and first.params.total == 8_030_261_248
    assert first.stored is not None and first.stored.total == 8_030_261_248
    second = load_model("someone/my-llama")
    assert len(calls) == 2  # served from the cache
    assert second.params == first.params
    assert (resolve.cache_dir() / "someone--my-llama" / "config.json").is_file()


def test_hub_failure_is_one_sentence(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SUANLI_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    fake = types.ModuleType("huggingface_hub")

    def fail(*args: object, **kwargs: object) -> str:
        raise OSError("connection refused")

    fake.hf_hub_download = fail  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "huggingface_hub", fake)
    with pytest.raises(ModelSourceError, match="use a preset") as err:
        load_model("someone/absent")
    assert "local path" in str(err.value)


def test_offline_mode_never_calls_the_hub(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SUANLI_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    calls: list[str] = []
    _fake_hub(monkeypatch, FIXTURES / "llama-3-8b.json", calls)
    with pytest.raises(ModelSourceError, match="offline"):
        load_model("someone/my-llama")
    assert calls == []


def test_hub_config_with_remote_code_is_read_as_json_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A config that asks for custom code (auto_map) is still read as plain JSON."""
    monkeypatch.setenv("SUANLI_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    cfg = json.loads((FIXTURES / "qwen2.5-0.5b.json").read_text())
    cfg["auto_map"] = {"AutoModelForCausalLM": "evil.EvilModel"}
    path = tmp_path / "config.json"
    path.write_text(json.dumps(cfg))
    _fake_hub(monkeypatch, path, [])
    assert load_model("someone/custom").params.total == 494_032_768
    assert "evil" not in sys.modules
