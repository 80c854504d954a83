"""The Hugging Face and Lightning callbacks on real (tiny) training runs, and the OOM autopsy
against a simulated memory limit, on the CPU."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from suanli.live.autopsy import autopsy, format_autopsy, measured_states  # noqa: E402

TINY = {
    "model_type": "qwen2",
    "vocab_size": 256,
    "hidden_size": 64,
    "intermediate_size": 128,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
}


def _model() -> object:
    conf = transformers.AutoConfig.for_model(
        "qwen2", **{k: v for k, v in TINY.items() if k != "model_type"}
    )
    torch.manual_seed(0)
    return transformers.AutoModelForCausalLM.from_config(conf)


class _Tokens(torch.utils.data.Dataset):  # type: ignore[type-arg,name-defined]
    def __len__(self) -> int:
        return 64

    def __getitem__(self, i: int) -> dict[str, object]:
        ids = torch.randint(0, 256, (32,))
        return {"input_ids": ids, "labels": ids}


def test_hugging_face_trainer_callback(tmp_path: object) -> None:
    pytest.importorskip("accelerate")
    from suanli.live.callbacks import hf_callback

    callback = hf_callback(warmup=1, echo=False)
    args = transformers.TrainingArguments(
        output_dir=str(tmp_path),
        max_steps=8,
        per_device_train_batch_size=4,
        report_to=[],
        use_cpu=True,
        save_strategy="no",
        logging_steps=100,
        dataloader_num_workers=0,
    )
    trainer = transformers.Trainer(
        model=_model(), args=args, train_dataset=_Tokens(), callbacks=[callback]
    )
    trainer.train()
    report = callback.session.report
    assert report is not None and report.steps >= 5
    assert report.verdict in ("compute-bound", "launch-bound", "input-bound")
    assert report.shares["forward"] > 0 and report.shares["backward"] > 0


@pytest.mark.filterwarnings("ignore::FutureWarning")
@pytest.mark.filterwarnings("ignore::DeprecationWarning")
@pytest.mark.filterwarnings("ignore::UserWarning")
def test_lightning_callback() -> None:
    pl = pytest.importorskip("pytorch_lightning")
    from suanli.live.callbacks import lightning_callback

    class Tiny(pl.LightningModule):  # type: ignore[misc,name-defined]
        def __init__(self) -> None:
            super().__init__()
            self.net = torch.nn.Linear(16, 1)

        def training_step(self, batch: object, batch_idx: int) -> object:
            x, y = batch  # type: ignore[misc]
            return torch.nn.functional.mse_loss(self.net(x), y)

        def configure_optimizers(self) -> object:
            return torch.optim.SGD(self.parameters(), lr=0.1)

    data = torch.utils.data.TensorDataset(torch.randn(256, 16), torch.randn(256, 1))
    loader = torch.utils.data.DataLoader(data, batch_size=8)
    callback = lightning_callback(warmup=1, echo=False)
    trainer = pl.Trainer(
        max_steps=12,
        accelerator="cpu",
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        callbacks=[callback],
    )
    trainer.fit(Tiny(), loader)
    report = callback.session.report
    assert report is not None and report.steps >= 8


def test_autopsy_against_a_simulated_limit() -> None:
    model = _model()
    optimizer = torch.optim.AdamW(model.parameters())
    ids = torch.randint(0, 256, (4, 32))
    model(input_ids=ids, labels=ids).loss.backward()
    optimizer.step()
    states = measured_states(model, optimizer)
    params = sum(p.numel() * p.element_size() for p in model.parameters())
    assert states["weights"] == params and states["gradients"] == params
    assert states["optimizer"] >= 2 * params
    limit = 0.5 * sum(states.values())  # the simulated card is too small
    doc = autopsy(model, optimizer, batch=4, seq=32, limit_bytes=limit)
    assert doc["estimate"] is not None
    # The estimator's model states agree with what was measured (pure fp32 AdamW).
    est = doc["estimate"]["breakdown"]
    assert est["weights"] == pytest.approx(states["weights"], rel=0.03)
    assert est["optimizer"] == pytest.approx(states["optimizer"], rel=0.03)
    assert doc["remedies"], "the remedy chain runs against the limit"
    assert "out of memory" in format_autopsy(doc)
