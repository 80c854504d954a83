"""The decode-attention table loads, validates, and interpolates as documented."""

from __future__ import annotations

import copy
import math
import sys
from importlib import resources
from typing import Any

import pytest

from suanli.catalog import CatalogError, bundled_gpus
from suanli.catalog.decode_attention import (
    DEFAULT_KERNEL,
    DecodePoint,
    _efficiency,
    decode_attention_efficiency,
    decode_attention_points,
    parse_decode_attention,
    reference_for,
)
from suanli.catalog.gpu import GPU
from suanli.catalog.loader import NON_GPU_DATA_FILES

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

H100 = "h100-sxm-80gb"
A100 = "a100-pcie-80gb"


def card(gpu_id: str) -> GPU:
    return {g.id: g for g in bundled_gpus()}[gpu_id]


def raw_table() -> dict[str, Any]:
    text = (resources.files("suanli.catalog") / "data" / "decode_attention.toml").read_text("utf-8")
    return tomllib.loads(text)


def rows(**match: Any) -> list[DecodePoint]:
    return [
        p for p in decode_attention_points() if all(getattr(p, k) == v for k, v in match.items())
    ]


def eff(gpu_id: str, batch: int, context: int, kernel: str | None = None) -> float:
    return decode_attention_efficiency(card(gpu_id), batch=batch, context=context, kernel=kernel)[0]


def test_every_row_loads_with_a_dated_source() -> None:
    points = decode_attention_points()
    assert len(points) == len(raw_table()["decode"]) >= 100
    ids = {g.id for g in bundled_gpus()}
    for p in points:
        assert p.gpu_id in ids
        assert p.source and p.note.strip() and p.date[:4] in ("2023", "2024"), p
        assert 0 < p.bandwidth_utilization < 0.95, p
    assert "decode_attention.toml" in NON_GPU_DATA_FILES
    assert {p.gpu_id for p in points} >= {H100, A100}
    assert len({p.kernel for p in points}) >= 2


def test_interpolation_is_exact_at_every_measured_point() -> None:
    for p in decode_attention_points():
        got = _efficiency(
            decode_attention_points(),
            card(p.gpu_id),
            batch=p.batch,
            context=p.context,
            kernel=p.kernel,
        )[0]
        assert got == pytest.approx(p.bandwidth_utilization), p


def test_between_neighbours_in_log_context_and_log_batch() -> None:
    at = {
        p.context: p.bandwidth_utilization
        for p in rows(kernel=DEFAULT_KERNEL, gpu_id=H100, batch=1)
    }
    mid = eff(H100, 1, 1448)  # ~ geometric mean of 1,024 and 2,048
    assert min(at[1024], at[2048]) < mid < max(at[1024], at[2048])
    w = math.log(1448 / 1024) / math.log(2)
    assert mid == pytest.approx(at[1024] + w * (at[2048] - at[1024]))
    b1, b16 = eff(H100, 1, 512), eff(H100, 16, 512)
    b4 = eff(H100, 4, 512)
    assert b4 == pytest.approx(b1 + 0.5 * (b16 - b1))  # log 4 is half-way from log 1 to log 16


def test_clamped_at_the_measured_ends() -> None:
    assert eff(H100, 1, 8) == eff(H100, 1, 32)
    assert eff(H100, 1, 1 << 20) == eff(H100, 1, 65536)
    assert eff(H100, 512, 1024) == eff(H100, 64, 1024)
    source = decode_attention_efficiency(card(H100), batch=512, context=1 << 16)[1]
    assert "held at batch 64" in source and "held at context 1,024" in source


def test_small_batch_and_short_context_run_lower_as_the_sources_show() -> None:
    for gpu_id in (H100, A100):
        # FlashInfer blog Fig. 6: batch 1 at 32 tokens is a few percent, long contexts 85-90%.
        assert eff(gpu_id, 1, 32) < 0.05
        assert eff(gpu_id, 1, 65536) > 0.8
        for ctx in (32, 256, 1024):
            assert eff(gpu_id, 1, ctx) < eff(gpu_id, 16, ctx) < eff(gpu_id, 64, ctx)
        curve = [eff(gpu_id, 1, 1 << k) for k in range(5, 17)]
        assert curve == sorted(curve)
        # Everything stays below the ~0.79-0.89 streaming efficiency the GEMM model assumes.
        assert max(p.bandwidth_utilization for p in rows(gpu_id=gpu_id)) <= 0.9


def test_default_kernel_beats_vllm_paged_attention_where_measured() -> None:
    for p in rows(kernel="vllm-paged-v2"):
        fi = rows(kernel="flashinfer", gpu_id=p.gpu_id, batch=p.batch, context=p.context)
        assert len(fi) == 1
        assert fi[0].bandwidth_utilization >= p.bandwidth_utilization - 0.02, p
    # GQA on tensor cores is ~3x vLLM at batch 64 (blog text), read off Fig. 9.
    for gpu_id in (H100, A100):
        assert eff(gpu_id, 64, 8192, "flashinfer-gqa-tc") > 2.5 * eff(
            gpu_id, 64, 8192, "vllm-paged-v2-gqa"
        )


def test_generation_reference_and_flag() -> None:
    assert reference_for(card("h200-sxm-141gb"), DEFAULT_KERNEL) == (H100, True)
    assert reference_for(card("b200-sxm-180gb"), DEFAULT_KERNEL) == (H100, True)
    assert reference_for(card("a100-sxm-80gb"), DEFAULT_KERNEL) == (A100, True)
    assert reference_for(card("a100-sxm-80gb"), "flash-decoding") == ("a100-sxm-80gb", True)
    assert reference_for(card("l40s-48gb"), DEFAULT_KERNEL) == (A100, False)
    _, source = decode_attention_efficiency(card("l40s-48gb"), batch=1, context=1024)
    assert "no decode-attention measurement of this generation" in source
    assert eff("h200-sxm-141gb", 16, 2048) == eff(H100, 16, 2048)
    with pytest.raises(ValueError, match="flash2-paged"):
        eff("a100-sxm-80gb", 64, 128, "flash2-paged")
    with pytest.raises(ValueError, match="unknown"):
        eff(H100, 1, 1024, "xqa")
    with pytest.raises(ValueError):
        eff(H100, 0, 1024)


def test_flash_decoding_rows_are_the_blog_times_converted() -> None:
    (p,) = rows(kernel="flash-decoding", batch=32, context=2048)
    kv_bytes = 2 * 32 * 2048 * 2 * 128 * 2
    assert p.bandwidth_utilization == pytest.approx(kv_bytes / 58.5e-6 / 2.039e12, abs=1e-3)


def _bad(mutate: Any) -> dict[str, Any]:
    data = copy.deepcopy(raw_table())
    mutate(data["decode"])
    return data


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda r: r[0].update(colour="red"), "unknown key"),
        (lambda r: r[0].pop("source"), "missing field"),
        (lambda r: r[0].update(bandwidth_utilization=1.3), "bandwidth_utilization"),
        (lambda r: r[0].update(gpu_id="h100-nope"), "not a catalog id"),
        (lambda r: r[0].update(dtype="int3"), "dtype"),
        (lambda r: r[0].update(date="Feb 2024"), "date"),
        (lambda r: r[0].update(batch=0), "batch"),
        (lambda r: r[0].update(num_kv_heads=3), "multiple"),
        (lambda r: r[1].update(num_kv_heads=8), "layout"),
        (lambda r: r.append(dict(r[0])), "duplicate"),
    ],
)
def test_bad_rows_raise_catalog_error_naming_the_row(mutate: Any, message: str) -> None:
    with pytest.raises(CatalogError, match=message) as info:
        parse_decode_attention(_bad(mutate))
    assert "row " in str(info.value)


def test_bad_file_shape_raises() -> None:
    with pytest.raises(CatalogError, match="non-empty"):
        parse_decode_attention({"decode": []})
    with pytest.raises(CatalogError, match="top-level"):
        parse_decode_attention({"decode": raw_table()["decode"], "extra": 1})


def test_kept_answers_are_the_answers_and_follow_the_cards_architecture() -> None:
    """decode_attention_efficiency keeps its answers (the serving search asks each about five
    times); a kept answer is the computed one, and a user's card with a measured card's id but
    another architecture gets its own generation's rows, not the kept answer."""
    import dataclasses

    gpus = {g.id: g for g in bundled_gpus()}
    l40s = gpus["l40s-48gb"]
    first = decode_attention_efficiency(l40s, batch=48, context=3000, token_bytes=2048)
    again = decode_attention_efficiency(l40s, batch=48, context=3000, token_bytes=2048)
    assert again == first
    assert first == _efficiency(
        decode_attention_points(), l40s, batch=48, context=3000, kernel=None, token_bytes=2048
    )
    h100 = gpus["h100-sxm-80gb"]
    renamed = dataclasses.replace(
        h100, id="l40s-48gb", figures={**h100.figures, "architecture": "Hopper"}
    )
    assert l40s.get("architecture") != "Hopper"
    hopper = decode_attention_efficiency(renamed, batch=48, context=3000, token_bytes=2048)
    assert hopper == _efficiency(
        decode_attention_points(), renamed, batch=48, context=3000, kernel=None, token_bytes=2048
    )
