"""The generic path counts exactly on the meta device where transformers ships the family."""

from __future__ import annotations

import logging
import warnings
from pathlib import Path

import pytest

from suanli.models.config import spec_from_config
from suanli.models.params import count_params

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from tests.transformers_generations import shipped, skip_on_4x  # noqa: E402


def _tiny(model_type: str) -> tuple[dict, int]:  # type: ignore[type-arg]
    cfg = transformers.AutoConfig.for_model(
        model_type,
        hidden_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        intermediate_size=128,
        vocab_size=256,
        pad_token_id=0,
    )
    logging.disable(logging.WARNING)
    with warnings.catch_warnings(), torch.device("meta"):
        warnings.simplefilter("ignore")
        model = transformers.AutoModelForCausalLM.from_config(cfg)
    doc = cfg.to_dict()
    doc["model_type"] = model_type
    return doc, sum(p.numel() for p in model.parameters())


#: Families suanli has no reader for, as the installed transformers ships them.
TRACED = shipped(["internlm3", "jetmoe", "doge"])


@pytest.mark.parametrize("model_type", TRACED)
def test_unknown_family_counted_on_meta(
    model_type: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SUANLI_CACHE", str(tmp_path))
    doc, expected = _tiny(model_type)
    spec = spec_from_config(doc, model_type)
    assert count_params(spec).total == expected
    assert any("meta device" in note for note in spec.notes)
    assert any(tmp_path.glob("traced/*.json"))  # cached: the second call reads it
    again = spec_from_config(doc, model_type)
    assert count_params(again).total == expected


def test_tracing_can_be_turned_off(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("SUANLI_CACHE", str(tmp_path))
    monkeypatch.setenv("SUANLI_NO_TRACE", "1")
    doc, _ = _tiny(TRACED[0])
    spec = spec_from_config(doc, TRACED[0])
    assert not any("meta device" in note for note in spec.notes)
    assert not any(tmp_path.glob("traced/*.json"))


def _saved_on_cpu(model_type: str, doc: dict, seq: int) -> int:  # type: ignore[type-arg]
    from suanli.live.measure import saved_for_backward

    cfg = transformers.AutoConfig.for_model(
        model_type, **{k: v for k, v in doc.items() if k != "model_type"}
    )
    logging.disable(logging.WARNING)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.manual_seed(0)
        model = transformers.AutoModelForCausalLM.from_config(
            cfg, attn_implementation="eager", dtype=torch.bfloat16
        )
    model.train()
    ids = torch.randint(1, 256, (1, seq))
    measured, _ = saved_for_backward(model, lambda: model(ids, labels=ids).loss)
    return measured.saved_bytes


@pytest.mark.parametrize("model_type", shipped(["internlm3", "doge"]))
def test_traced_saved_bytes_match_autograd_on_real_tensors(
    model_type: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The meta trace's layer bytes, plus suanli's terms outside the layers, against what
    autograd saves on real bf16 tensors on the CPU (eager attention, 48 tokens: a length the
    trace never ran)."""
    from suanli.estimate.memory import activation_bytes
    from suanli.estimate.workload import TrainWork

    skip_on_4x("trace", model_type)
    monkeypatch.setenv("SUANLI_CACHE", str(tmp_path))
    doc, _ = _tiny(model_type)
    spec = spec_from_config(doc, model_type)
    assert spec.traced_layer_bytes is not None
    assert any("saved-tensor hooks" in note for note in spec.notes)
    work = TrainWork(
        task="full", batch=1, seq=48, dtype="bf16", attention="eager", device="cpu", dropout=0.0
    )
    estimate = sum(line.bytes for line in activation_bytes(spec, work)[0])
    assert estimate == pytest.approx(_saved_on_cpu(model_type, doc, 48), rel=0.05)
