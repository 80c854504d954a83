"""``suanli plan`` and ``suanli fit`` as a user runs them."""

from __future__ import annotations

import json

import pytest

from .test_cli import run


def test_plan_with_no_arguments_is_a_meaningful_demo() -> None:
    out = run("plan")
    assert out.returncode == 0, out.stderr
    assert "llama-3.1-8b lora" in out.stdout
    # A LoRA user sees what they can buy or rent first, datacenter cards after.
    first, second = out.stdout.index("cards to buy or rent"), out.stdout.index("datacenter cards")
    assert first < out.stdout.index("rtx-4090-24gb") < second
    assert "fastest to buy or rent:" in out.stdout and "fastest datacenter card:" in out.stdout
    assert "cheapest per token:" in out.stdout


def _forms() -> dict[str, str]:
    out = run("gpus", "--json")
    return {g["id"]: g["form_factor"] for g in json.loads(out.stdout)["gpus"]}


def test_plan_json_has_all_rows_ranked() -> None:
    out = run("plan", "llama-3.1-8b", "--task", "lora", "--max-gpus", "2", "--json")
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    rows = doc["rows"]
    assert len(rows) >= 80  # every catalog GPU is accounted for
    assert all("software_stack" in r for r in rows)
    assert all(r["reason"] for r in rows if not r["fits"])
    forms = _forms()
    fitting = [r for r in rows if r["fits"]]
    # Consumer and workstation cards first, then the rest; within each, CUDA cards by speed,
    # then the other stacks by speed (the Hugging Face default framework).
    groups = [r["group"] for r in fitting]
    assert groups == sorted(groups, key=["buy-or-rent", "datacenter"].index)
    assert all(
        (forms[r["gpu"]] in ("consumer", "workstation")) == (r["group"] == "buy-or-rent")
        for r in rows
    )
    after = doc["ranked_after_cuda"]
    for group in ("buy-or-rent", "datacenter"):
        members = [r for r in fitting if r["group"] == group]
        cuda = [r for r in members if r["gpu"] not in after]
        other = [r for r in members if r["gpu"] in after]
        assert members == cuda + other
        for part in (cuda, other):
            speeds = [r["tokens_per_s"] for r in part]
            assert speeds == sorted(speeds, reverse=True)
    assert all(not r["software_stack"].startswith("cuda") for r in fitting if r["gpu"] in after)


def test_stack_ok_ranks_by_speed_alone() -> None:
    out = run("plan", "llama-3.1-8b", "--task", "lora", "--stack-ok", "--form-factor", "sxm",
              "--form-factor", "oam", "--json")  # fmt: skip
    doc = json.loads(out.stdout)
    speeds = [r["tokens_per_s"] for r in doc["rows"] if r["fits"]]
    assert speeds == sorted(speeds, reverse=True) and "ranked_after_cuda" not in doc
    assert not any("group" in r for r in doc["rows"])  # a form-factor filter: one group


def test_personal_finetune_uses_a_second_card_only_when_it_saves() -> None:
    args = ("plan", "llama-3.1-8b", "--scenario", "personal-finetune", "--json")
    two = json.loads(run(*args).stdout)["rows"]
    one = {r["gpu"]: r for r in json.loads(run(*args, "--max-gpus", "1").stdout)["rows"]}
    # QLoRA of an 8B model: two cards only where one is not enough, or where the pair is at
    # least 5% cheaper per token (sharding frees the memory recomputation was paying for); a
    # second card at the same cost per token is not recommended.
    for row in two:
        if not row["fits"] or row["gpus"] == 1:
            continue
        alone = one[row["gpu"]]
        if not alone["fits"]:
            continue
        if row["usd_per_million_tokens"] is not None:
            assert row["usd_per_million_tokens"] <= 0.95 * alone["usd_per_million_tokens"]
        else:
            assert row["tokens_per_s"] / 2 >= 1.05 * alone["tokens_per_s"], row["gpu"]
    assert two[0]["gpus"] == 1  # the winner, a 4090, runs it alone


def test_rendering_ranks_gpus_with_rt_units_and_encoders_and_never_cpus() -> None:
    doc = json.loads(run("plan", "--scenario", "rendering-video", "--json").stdout)
    ranked = [r for r in doc["rows"] if r["fits"]]
    forms = _forms()
    assert all(forms[r["gpu"]] != "cpu" for r in ranked)
    assert all(not r["fits"] for r in doc["rows"] if forms[r["gpu"]] == "cpu")
    complete = [bool(r["rt_cores"]) and bool(r["nvenc_engines"]) for r in ranked]
    assert complete == sorted(complete, reverse=True) and complete[0]
    head = [r for r in ranked if r["rt_cores"] and r["nvenc_engines"]]
    memory = [r["memory_bytes"] for r in head]
    assert memory == sorted(memory, reverse=True)
    assert not any(r["reason"] for r in head[:3])  # the top cards lack nothing


def test_plan_serving_and_scenarios() -> None:
    out = run(
        "plan",
        "llama-3.1-8b",
        "--task",
        "infer",
        "--rps",
        "50",
        "--json",
        "--gpu",
        "h100",
        "--gpu",
        "l40s",
        "--max-gpus",
        "16",
    )
    assert out.returncode == 0, out.stderr
    rows = json.loads(out.stdout)["rows"]
    assert {r["gpu"] for r in rows} == {"h100-sxm-80gb", "l40s-48gb"}
    assert all(r["requests_per_s"] >= 50 for r in rows if r["fits"])
    for scenario in ("pretraining", "production-inference", "personal-finetune", "rendering-video"):
        args = ["plan", "llama-3.2-1b", "--scenario", scenario, "--json"]
        if scenario == "pretraining":
            args += ["--max-gpus", "16"]
        res = run(*args)
        assert res.returncode == 0, (scenario, res.stderr)
        assert json.loads(res.stdout)["reasoning"]


def test_fit_json_steps_and_pasteable_options() -> None:
    out = run("fit", "llama-3.1-8b", "--task", "full", "--gpu", "4090", "--batch", "8", "--json")
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    assert doc["fits"] and doc["steps"][-1]["fits"]
    check = run("mem", "llama-3.1-8b", "--gpu", "4090", *doc["final_options"].split(), "--json")
    assert check.returncode == 0, check.stderr
    assert json.loads(check.stdout)["fit"]["fits"] is True


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["plan", "llama-3.1-8b", "--objective", "vibes"], "Invalid value"),
        (["plan", "llama-3.1-8b", "--vendor", "apple", "--min-memory", "1000"], "no GPU matches"),
        (["plan", "nosuchmodel"], "unknown model"),
        (["fit", "llama-3.1-8b"], "Missing option '--gpu'"),
        (["fit", "llama-3.1-8b", "--gpu", "4090", "--task", "infer"], "suanli mem"),
    ],
)
def test_plan_and_fit_bad_input(args: list[str], fragment: str) -> None:
    out = run(*args)
    assert out.returncode == 2, out.stderr
    assert fragment in out.stderr and "Traceback" not in out.stderr


@pytest.mark.parametrize(
    "args",
    [
        ("llama-3.1-70b", "--task", "pretrain", "--max-gpus", "256", "--gpu", "h100",
         "--gpu", "b200", "--gpu", "a100-sxm-80gb", "--tokens", "1e11"),
        ("llama-3.1-8b", "--task", "infer", "--rps", "20", "--gpu", "h100", "--gpu", "4090"),
    ],
)  # fmt: skip
def test_plan_shows_the_best_rows_band_within_80_columns(args: tuple[str, ...]) -> None:
    """Ranked by the estimate, the best row's likely range under the table (issue 41): its
    numbers are the JSON's (the answer computes the band; the view only renders it)."""
    from rich.cells import cell_len

    out = run("plan", *args, env={"COLUMNS": "80"})
    assert out.returncode == 0, out.stderr
    # (the command to paste stays whole on its own line, by design)
    lines = [ln for ln in out.stdout.splitlines() if not ln.startswith("  suanli perf ")]
    assert max(cell_len(line) for line in lines) <= 80
    doc = json.loads(run("plan", *args, "--json").stdout)
    best = next(r for r in doc["rows"] if r["fits"] and not r["reason"])
    text = " ".join(out.stdout.split())
    if best["band"] is None:
        assert best["unvalidated"] and f"{best['gpu']}: {best['unvalidated']}" in text
    else:
        low, high = best["band"]["tokens_per_s"]
        assert f"likely for {best['gpu']} (published runs): {low:,.0f}-{high:,.0f} tokens/s" in text
        assert f"{best['band_basis']['rows']} published runs" in text


def test_plan_on_an_exact_gpu_count_says_so_in_its_title_and_json() -> None:
    """--gpus holds the search to that count: the title must not claim "up to 8 GPUs" (the
    default ceiling) over rows that use 64."""
    out = run("plan", "llama-3.1-8b", "--task", "pretrain", "--gpu", "h100", "--gpus", "64")
    assert out.returncode == 0, out.stderr
    first = out.stdout.splitlines()[0]
    assert "exactly 64 GPUs" in first and "up to" not in first
    doc = json.loads(run("plan", "llama-3.1-8b", "--task", "pretrain", "--gpu", "h100",
                         "--gpus", "64", "--json").stdout)  # fmt: skip
    assert doc["exact_gpus"] == 64
    assert all(r["gpus"] == 64 for r in doc["rows"] if r["fits"])
    assert "exact_gpus" not in json.loads(run("plan", "--json").stdout)
