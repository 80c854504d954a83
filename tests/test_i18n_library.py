"""The library's English sentences (errors, reasons, verdicts, remedy steps) come back in Chinese
through ``suanli.i18n.sentence``, from their message ids and the values they were written with."""

from __future__ import annotations

import pytest

from suanli import PerfRequest, WorkRequest, perf
from suanli.i18n import N_, message_of, sentence
from suanli.plan.cost.result import CostTotals, cost_verdict


def zh(text: str) -> str:
    return sentence(text, "zh")


def test_a_ranking_reason_keeps_its_values() -> None:
    reason = N_("does not fit in {gib:.0f} GiB at up to {gpus} GPUs").format(gib=24.0, gpus=8)
    assert reason == "does not fit in 24 GiB at up to 8 GPUs"
    assert zh(reason) == "每卡 24 GiB，最多 8 张 GPU 也放不下"


def test_a_serving_reason_with_its_optional_parts() -> None:
    reason = N_(
        "cannot serve within {gpus} GPUs at {rps:g} requests/s with TPOT <= {tpot:g} ms"
    ).format(gpus=4, rps=2.5, tpot=50.0)
    assert "2.5" in zh(reason) and "50" in zh(reason) and "无法" in zh(reason)


def test_a_remedy_step_and_a_budget() -> None:
    step = N_("micro-batch {batch}, gradient accumulation {accum}").format(batch=2, accum=8)
    assert zh(step) == "微批次 2，梯度累积 8"
    over = N_("over the budget (${cost:,.0f} > ${budget:,.0f})").format(cost=12345, budget=1000)
    assert zh(over) == "超出预算（$12,345 > $1,000）"


def test_a_cost_verdict_is_translated_part_by_part() -> None:
    totals = CostTotals(
        buy_usd=100_000.0,
        rent_usd=150_000.0,
        api_usd=None,
        spot_usd=None,
        reserved_usd=None,
        capex_usd=90_000.0,
        resale_usd=0.0,
        electricity_usd=8_000.0,
        facility_usd=2_000.0,
        energy_kwh=1.0,
        it_power_kw=1.0,
        busy_gpu_hours=1.0,
        cheapest="buy",
    )
    verdict = cost_verdict(3.0, 0.6, totals, 0.4, 3504.0, 0.4, 10.0, 1.0)
    assert verdict.startswith("buying is cheaper above 40% utilisation")
    text = zh(verdict)
    assert "3 年内" in text and "40%" in text and "3,504" in text and "$50,000" in text
    assert "buying" not in text


def test_a_real_error_from_the_api_has_a_chinese_rendering() -> None:
    with pytest.raises(ValueError) as caught:
        perf(PerfRequest("llama-3.1-70b", WorkRequest(task="full"), gpu="4090"))
    message = message_of(caught.value)
    assert message.startswith("llama-3.1-70b full needs ")  # the answer stays English
    text = zh(message)
    assert text != message
    assert "每张 GPU 需要" in text and "--ignore-fit 仍会给出速度" in text
    assert "rtx-4090-24gb" in text and "suanli fit llama-3.1-70b" in text


def test_two_problems_are_both_translated() -> None:
    with pytest.raises(ValueError) as caught:
        perf(PerfRequest("llama-3.1-70b", WorkRequest(task="full", dtype="bf16"), gpu="v100"))
    text = zh(message_of(caught.value))
    assert "没有 bf16 张量核心" in text and "此外" in text and "每张 GPU 需要" in text
