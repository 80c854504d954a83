"""The live machine's sentences in Chinese: the `suanli explain` catalog (every entry has its
title, cause and fix in Chinese, and `--lang zh explain` shows them while the JSON stays English)
and the doctor's / monitor's / training-loop sentences, shown through ``sentence()``."""

from __future__ import annotations

import json
import re

import pytest

from suanli.i18n import message_of, sentence
from suanli.live.devices import DriverInfo
from suanli.live.diagnosis import StepRecord, diagnose_steps
from suanli.live.env import diagnose
from suanli.live.environment import Environment
from suanli.live.errors import bundled_entry, bundled_errors, parse_errors

from .cli.test_cli import run

CJK = re.compile(r"[\u4e00-\u9fff]")
MESSAGE = "RuntimeError: CUDA error: out of memory"


@pytest.mark.parametrize("entry", bundled_errors(), ids=lambda e: e.id)
def test_every_explain_entry_has_its_words_in_chinese(entry: object) -> None:
    for field in ("title", "cause", "fix"):
        english = getattr(entry, field)
        chinese = getattr(entry, f"{field}_zh")
        assert chinese and CJK.search(chinese), f"{field}_zh is missing or not Chinese"
        assert entry.text(field, "zh") == chinese and entry.text(field) == english  # type: ignore[attr-defined]
        # commands are typed as they are: every `command` of the English is in the Chinese
        for command in re.findall(r"`[^`]+`", english):
            assert command in chinese, f"{field}_zh lacks {command}"


def test_chinese_keys_are_optional_in_a_users_errors_file() -> None:
    text = (
        '[[error]]\nid = "x-error"\ntitle = "X failed"\npatterns = ["X failed"]\n'
        'samples = ["X failed here"]\ncause = "c"\nfix = "f"\nsource = "s"\ndate = "2026-11"\n'
    )
    (entry,) = parse_errors(text)
    assert entry.text("cause", "zh") == "c"  # no Chinese: the English


def test_explain_shows_the_cause_and_fix_in_chinese() -> None:
    entry = bundled_entry("cuda-error-out-of-memory")
    assert entry is not None
    out = run("--lang", "zh", "explain", MESSAGE)
    assert out.returncode == 0, out.stderr
    text = out.stdout
    assert entry.title_zh[:12] in text
    assert entry.cause_zh[:12] in text and entry.fix_zh[:12] in text
    assert entry.cause[:30] not in text and entry.fix[:30] not in text
    english = run("explain", MESSAGE).stdout
    assert entry.cause[:30] in english and not CJK.search(english)


def test_explain_json_is_english_in_both_languages() -> None:
    en = run("explain", MESSAGE, "--json")
    zh = run("--lang", "zh", "explain", MESSAGE, "--json")
    assert en.returncode == 0 and zh.returncode == 0, zh.stderr
    assert en.stdout == zh.stdout
    (match,) = json.loads(en.stdout)["matches"]
    assert not CJK.search(json.dumps(match, ensure_ascii=False))


def test_doctor_check_names_details_and_fixes_render_in_chinese() -> None:
    env = Environment(
        driver=DriverInfo("nvml", driver_version="550.54", cuda_driver_version="12.4"),
        gpu_names=("NVIDIA H100 80GB HBM3",),
        gpu_vendors=("nvidia",),
        torch_version="2.5.1",
        torch_build_tag="cpu",
    )
    verdicts = {v.check: v for v in diagnose(env)}
    driver = verdicts["driver"]
    assert driver.detail.startswith("nvml driver 550.54 (supports CUDA up to 12.4)")
    assert sentence(driver.check, "zh") == "驱动"
    assert sentence(driver.detail, "zh") == (
        "nvml 驱动 550.54（最高支持 CUDA 12.4），1 块 GPU：NVIDIA H100 80GB HBM3"
    )
    cpu_only = verdicts["cpu-only-build"]
    shown = sentence(cpu_only.detail, "zh")
    assert CJK.search(shown) and "NVIDIA H100 80GB HBM3" in shown and "torch 2.5.1+cpu" in shown
    assert sentence(cpu_only.check, "zh") == "仅 CPU 构建"
    no_gpu = {v.check: v for v in diagnose(Environment())}["driver"]
    assert sentence(no_gpu.fix, "zh").startswith("如果这台机器有 NVIDIA GPU")


def test_training_loop_verdict_and_fixes_render_in_chinese() -> None:
    steps = [StepRecord(data=0.05, forward=0.02, backward=0.03, optimizer=0.01)] * 6
    report = diagnose_steps(steps)
    assert report.verdict == "input-bound"
    assert report.explanation.startswith("the loop waits 45% of each step")
    shown = sentence(report.explanation, "zh")
    assert shown.startswith("每步有 45% 的时间在等下一个批次")
    assert all(CJK.search(sentence(f.action, "zh")) for f in report.fixes)
    assert all(CJK.search(sentence(f.basis, "zh")) for f in report.fixes)


def test_library_errors_render_in_chinese() -> None:
    from suanli.live.bench.collectives import parse_sizes
    from suanli.live.monitor import parse_fields

    with pytest.raises(ValueError) as bad_size:
        parse_sizes("12Q")
    assert str(bad_size.value) == "bad message size '12Q'; use bytes or K/M/G, e.g. 1M,64M"
    assert sentence(message_of(bad_size.value), "zh").startswith("消息大小 '12Q' 无效")
    with pytest.raises(ValueError) as bad_field:
        parse_fields("gpu.bogus")
    assert sentence(message_of(bad_field.value), "zh").startswith("未知的查询字段 gpu.bogus")
