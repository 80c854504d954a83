"""Model arguments: presets, local paths, hub ids (the hub is faked: no network in tests)."""

from __future__ import annotations

from pathlib import Path

import pytest

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
        # no transformers class gives the original Falcon-40B type defaults to fall back on
        ('{"model_type": "RefinedWeb"}', "is missing hidden_size"),
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


# Hub ids (revisions, offline mode, each failure's sentence): tests/models/test_hub.py.
