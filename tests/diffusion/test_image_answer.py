"""Image generation as a user asks for it: the answer's behaviour, local diffusers folders, the
CLI contract and its bad inputs, and the published runs it is validated against."""

from __future__ import annotations

import csv
import json
import statistics
from pathlib import Path

import pytest

from suanli.answers.base import SCHEMA_VERSION
from suanli.answers.image import ImageRequest, generate_image
from suanli.diffusion.pipeline import find_pipeline
from tests.cli.test_cli import run

RUNS = Path(__file__).parent.parent / "fixtures" / "image-generation-runs.csv"


def _answer(model: str, gpu: str = "h100-sxm-80gb", **kw: object) -> object:
    return generate_image(ImageRequest(model, gpu, **kw))  # type: ignore[arg-type]


def test_guidance_runs_the_denoiser_on_twice_the_batch() -> None:
    on = generate_image(ImageRequest("sdxl", "a100-sxm-80gb", guidance=True))
    off = generate_image(ImageRequest("sdxl", "a100-sxm-80gb", guidance=False))
    unet_on = next(c for c in on.components if c.role == "denoise")
    unet_off = next(c for c in off.components if c.role == "denoise")
    assert unet_on.flops_per_call == pytest.approx(2 * unet_off.flops_per_call, rel=1e-6)
    assert 1.6 < on.denoise_step_s / off.denoise_step_s <= 2.05


def test_larger_images_cost_more_than_their_pixels() -> None:
    small = generate_image(ImageRequest("sd-1.5", "rtx-4090-24gb", width=512, height=512))
    large = generate_image(ImageRequest("sd-1.5", "rtx-4090-24gb", width=1024, height=1024))
    # 4x the pixels; self-attention grows with the square of the tokens
    assert large.flops_per_image > 4.2 * small.flops_per_image
    assert large.seconds_per_image > 4 * small.seconds_per_image


def test_defaults_follow_the_pipeline() -> None:
    sd15 = generate_image(ImageRequest("sd-1.5", "rtx-4090-24gb"))
    flux = generate_image(ImageRequest("flux.1-schnell", "h100-sxm-80gb"))
    assert (sd15.width, sd15.steps, sd15.guidance, sd15.dtype) == (512, 50, True, "fp16")
    assert (flux.width, flux.steps, flux.guidance, flux.dtype) == (1024, 4, False, "bf16")


def test_flux_dev_does_not_fit_a_24_gib_card_and_says_what_to_try() -> None:
    with pytest.raises(ValueError, match="--cpu-offload model"):
        generate_image(ImageRequest("flux.1-dev", "rtx-4090-24gb"))
    forced = generate_image(ImageRequest("flux.1-dev", "rtx-4090-24gb", ignore_fit=True))
    assert not forced.fits and forced.warnings
    # 12B transformer + 4.8B T5 in bf16 alone are 31.4 GiB
    assert forced.memory_breakdown["weights"] > 31 * 2**30


def test_offload_trades_memory_for_pcie_time() -> None:
    plain = generate_image(ImageRequest("sdxl", "rtx-4090-24gb"))
    model = generate_image(ImageRequest("sdxl", "rtx-4090-24gb", offload="model"))
    seq = generate_image(ImageRequest("sdxl", "rtx-4090-24gb", offload="sequential"))
    assert plain.transfer_s == 0
    assert seq.memory_bytes < model.memory_bytes < plain.memory_bytes
    assert plain.seconds_per_image < model.seconds_per_image < seq.seconds_per_image
    # model offload moves every component once per call: all weights over PCIe
    weights = sum(c.weight_bytes for c in plain.components)
    assert model.transfer_s == pytest.approx(weights / 25e9, rel=0.5)


def test_fp16_t5_keeps_its_wo_projections_in_fp32() -> None:
    fp16 = generate_image(ImageRequest("sd3-medium", "a100-sxm-80gb", dtype="fp16"))
    bf16 = generate_image(ImageRequest("sd3-medium", "a100-sxm-80gb", dtype="bf16"))
    t5_16 = next(c for c in fp16.components if c.cls == "T5EncoderModel")
    t5_bf = next(c for c in bf16.components if c.cls == "T5EncoderModel")
    assert t5_bf.weight_bytes == 2 * t5_bf.params
    assert t5_16.weight_bytes - t5_bf.weight_bytes == 2 * 24 * 4096 * 10240


def test_sdxl_decodes_in_fp32_when_run_in_fp16() -> None:
    fp16 = generate_image(ImageRequest("sdxl", "a100-sxm-80gb", dtype="fp16"))
    bf16 = generate_image(ImageRequest("sdxl", "a100-sxm-80gb", dtype="bf16"))
    assert fp16.decode_s > 1.3 * bf16.decode_s
    vae16 = next(c for c in fp16.components if c.role == "decode")
    vae_bf = next(c for c in bf16.components if c.role == "decode")
    assert vae16.activation_bytes == 2 * vae_bf.activation_bytes


def _write_folder(root: Path, name: str) -> Path:
    pipe = find_pipeline(name)
    assert pipe is not None
    index = {
        "_class_name": pipe.pipeline_class,
        "_diffusers_version": "0.30.0",
        "scheduler": ["diffusers", "EulerDiscreteScheduler"],
        "tokenizer": ["transformers", "CLIPTokenizer"],
    }
    for comp in pipe.components:
        library = (
            "diffusers"
            if comp.cls.startswith(("UNet", "SD3", "Flux", "Auto"))
            else ("transformers")
        )
        index[comp.name] = [library, comp.cls]
        (root / comp.name).mkdir(parents=True)
        (root / comp.name / "config.json").write_text(json.dumps(comp.config))
    (root / "model_index.json").write_text(json.dumps(index))
    return root


def test_a_local_diffusers_folder_reads_like_its_preset(tmp_path: Path) -> None:
    folder = _write_folder(tmp_path / "my-sdxl", "sdxl")
    local = generate_image(ImageRequest(str(folder), "rtx-4090-24gb", width=1024, height=1024))
    preset = generate_image(ImageRequest("sdxl", "rtx-4090-24gb"))
    assert [c.params for c in local.components] == [c.params for c in preset.components]
    assert local.seconds_per_image == pytest.approx(preset.seconds_per_image)


def test_broken_diffusers_folders_are_one_sentence(tmp_path: Path) -> None:
    folder = _write_folder(tmp_path / "p", "sd-1.5")
    (folder / "unet" / "config.json").unlink()
    with pytest.raises(ValueError, match=r"unet/config\.json is missing"):
        generate_image(ImageRequest(str(folder), "rtx-4090-24gb"))
    index = json.loads((folder / "model_index.json").read_text())
    index["_class_name"] = "KandinskyPipeline"
    (folder / "model_index.json").write_text(json.dumps(index))
    with pytest.raises(ValueError, match="KandinskyPipeline pipeline; suanli reads"):
        generate_image(ImageRequest(str(folder), "rtx-4090-24gb"))


def test_cli_perf_json_and_table() -> None:
    out = run(
        "perf",
        "sdxl",
        "--task",
        "generate-image",
        "--steps",
        "30",
        "--size",
        "1024x1024",
        "--gpu",
        "4090",
        "--json",
    )
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    assert doc["schema_version"] == SCHEMA_VERSION and doc["task"] == "generate-image"
    assert doc["steps"] == 30 and doc["fits"] is True
    assert doc["seconds_per_image"] == pytest.approx(doc["seconds_per_batch"])
    assert {c["role"] for c in doc["components"]} == {"encode", "denoise", "decode"}
    table = run(
        "mem", "flux.1-dev", "--task", "generate-image", "--gpu", "h100", "--cpu-offload", "model"
    )
    assert table.returncode == 0, table.stderr
    assert "fits in 79" in table.stdout or "fits in 80" in table.stdout


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (
            ["perf", "sdxl", "--task", "generate-image", "--gpu", "4090", "--size", "1000x1000"],
            "multiples of 16",
        ),
        (
            ["perf", "sdxl", "--task", "generate-image", "--gpu", "4090", "--size", "big"],
            "WIDTHxHEIGHT",
        ),
        (["mem", "sdxl", "--task", "generate-image"], "needs --gpu"),
        (
            ["perf", "llama-3.1-8b", "--task", "generate-image", "--gpu", "4090"],
            "not a text-to-image pipeline",
        ),
        (["plan", "llama-3.1-8b", "--task", "generate-image"], "works with suanli perf"),
        (["perf", "sdxl", "--gpu", "4090"], "--task generate-image"),
        (["perf", "flux.1-dev", "--task", "generate-image", "--gpu", "4090"], "--cpu-offload"),
        (
            ["perf", "sdxl", "--task", "generate-image", "--gpu", "4090", "--dtype", "fp8"],
            "fp16, bf16 or fp32",
        ),
    ],
)
def test_cli_bad_input_is_one_sentence_and_exit_2(args: list[str], needle: str) -> None:
    out = run(*args)
    assert out.returncode == 2, out.stdout + out.stderr
    assert needle in out.stderr
    assert "Traceback" not in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1


def published_rows() -> list[dict[str, str]]:
    """The published runs of tests/fixtures/image-generation-runs.csv."""
    with RUNS.open(encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def estimate_row(row: dict[str, str]) -> float:
    """suanli's figure for a published row's metric (memory: weights + activations, GiB)."""
    answer = generate_image(
        ImageRequest(
            row["model"],
            row["gpu"],
            int(row["width"]),
            int(row["height"]),
            int(row["steps"]),
            int(row["batch"]),
            row["dtype"],
            ignore_fit=True,
        )
    )
    if row["metric"] == "allocated_gib":
        kept = answer.memory_breakdown["weights"] + answer.memory_breakdown["activations"]
        return kept / 2**30
    return float(getattr(answer, row["metric"]))


def test_published_peak_memory_within_ten_percent() -> None:
    """max_memory_allocated of published diffusers runs (SDXL, SD3, Flux at batch 1-16) against
    weights + the largest call's live activations: nothing here was fitted to them."""
    rows = [r for r in published_rows() if r["metric"] == "allocated_gib"]
    assert len(rows) >= 6
    for row in rows:
        error = estimate_row(row) / float(row["measured"]) - 1
        assert abs(error) < 0.10, (row["id"], error)


def test_published_speed_median_error() -> None:
    """Seconds per call and per denoising step of published eager runs: the median error is
    bounded (docs/image-generation.md lists every row; the model is known to be optimistic)."""
    errors = [
        estimate_row(r) / float(r["measured"]) - 1
        for r in published_rows()
        if r["metric"] != "allocated_gib"
    ]
    assert len(errors) >= 20
    assert statistics.median(abs(e) for e in errors) < 0.25
    assert max(errors) < 0.10  # never pessimistic by more than 10%


# Pipelines from the hub (revisions, offline, typed failures): tests/diffusion/test_hub_pipeline.py.
