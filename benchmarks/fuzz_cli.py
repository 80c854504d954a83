"""Fuzz the command line with the failure classes of issue 18 and print the contract table.

Every numeric option of every planning command gets hostile values (nan, inf, -inf, 1e308,
2**63, 2**64, -1, 0, 1e9, a word), every model argument hostile names (a 300-byte name, a
deeply nested JSON config, configs with fields of the wrong type or absurd sizes), each case run
in-process with a deadline. A case is

- ``clean``: exit 0 with an answer free of NaN, Infinity and negative sizes, or exit 2 with one
  line on stderr and no traceback;
- ``traceback``: a Python traceback (an exception escaped);
- ``hang``: over the deadline;
- ``wrong exit``: any exit code other than 0 or 2 (1 is kept for verdicts, not bad input);
- ``wrong answer``: exit 0 with NaN, Infinity or a negative size in the JSON.

Run: python benchmarks/fuzz_cli.py [--limit N] [--deadline SECONDS]
"""

from __future__ import annotations

import argparse
import gc
import json
import math
import os
import random
import signal
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).parent.parent
sys.path.insert(0, str(ROOT / "src"))

import click  # noqa: E402
from click.testing import CliRunner  # noqa: E402

from suanli.cli.main import cli  # noqa: E402

#: Commands and the arguments that make them run on their own (no GPU, no network).
BASE: dict[str, list[str]] = {
    "mem": ["mem", "llama-3.1-8b", "--json"],
    "perf": ["perf", "llama-3.1-8b", "--gpu", "h100", "--json"],
    "perf-infer": ["perf", "llama-3.1-8b", "--gpu", "h100", "--task", "infer", "--json"],
    "perf-image": ["perf", "sd-1.5", "--gpu", "4090", "--task", "generate-image", "--json"],
    "plan": ["plan", "llama-3.2-1b", "--json"],
    "fit": ["fit", "llama-3.1-8b", "--gpu", "4090", "--json"],
    "cost": ["cost", "h100", "--json"],
    "capacity": ["capacity", "llama-3.1-8b", "--rate", "1", "--gpu", "h100", "--json"],
    "stencil": ["stencil", "--grid", "100", "100", "100", "--steps", "10", "--json"],
    "model": ["model", "llama-3.1-8b", "--json"],
    "gpus": ["gpus", "--json"],
    "compare": ["compare", "llama-3.1-8b", "--json"],
}
VALUES = [
    "nan",
    "inf",
    "-inf",
    "1e308",
    str(2**63),
    str(2**64),
    "-1",
    "0",
    "1e9",
    "1000000000",
    "abc",
]
#: Options that start servers, read the machine or only name things: not fuzzed with numbers.
SKIP = {"--help", "--version", "--json", "--explain", "--catalog", "--calibration", "--seed"}


def _numeric(param: click.Parameter) -> bool:
    kinds = (click.types.IntParamType, click.types.FloatParamType)
    return isinstance(param, click.Option) and isinstance(param.type, kinds) and (param.nargs == 1)


def _command(name: str) -> click.Command:
    group = cli
    assert isinstance(group, click.Group)
    cmd = group.commands[name]
    return cmd


def number_cases() -> Iterator[tuple[str, list[str]]]:
    """Every numeric option of every command in BASE with every hostile value."""
    for key, base in BASE.items():
        cmd = _command(base[0])
        for param in cmd.params:
            if not _numeric(param) or not param.opts or param.opts[0] in SKIP:
                continue
            for value in VALUES:
                yield f"{key} {param.opts[0]}={value}", [*base, param.opts[0], value]


def _configs(tmp: Path) -> Iterator[tuple[str, Path]]:
    good = {
        "model_type": "llama",
        "hidden_size": 64,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "intermediate_size": 128,
        "vocab_size": 256,
    }
    wrong: dict[str, Any] = {
        "max_position_embeddings": ["x", -5, 1e9, "1024", [1], {"a": 1}, 2**70],
        "num_hidden_layers": [10**9, 1e9, -1, 0, "2", None, 2**64],
        "hidden_size": [10**12, 3.5, "64", -64],
        "vocab_size": [10**12, -1, "x"],
        "intermediate_size": [10**15, [128]],
        "num_attention_heads": [0, 10**9, "4"],
        "num_key_value_heads": [3, 0, 10**9],
        "max_window_layers": ["x", -1, 10**12],
        "mlp_only_layers": ["x", [1, "a"], [10**12], 5],
        "attn_logit_softcapping": ["x", [1], float("inf")],
        "num_nextn_predict_layers": ["x", -1, 10**9],
        "sliding_window": ["x", -1, 10**12],
        "num_local_experts": [10**9, -1, "x"],
        "num_experts_per_tok": [10**9, 0],
        "head_dim": [0, 10**9, "x"],
        "rope_scaling": ["x", [1], {"factor": "x"}],
        "tie_word_embeddings": ["yes", 1],
    }
    i = 0
    for field, values in wrong.items():
        for value in values:
            for model_type in ("llama", "qwen3_moe", "mixtral", "gemma2", "falcon", "someunknown"):
                cfg = {**good, "model_type": model_type, field: value}
                path = tmp / f"cfg{i}.json"
                i += 1
                path.write_text(json.dumps(cfg, default=str), encoding="utf-8")
                yield f"config {model_type} {field}={value!r}"[:90], path
    nested = tmp / "nested.json"
    nested.write_text("[" * 3000 + "]" * 3000, encoding="utf-8")
    yield "config nested 3000 deep", nested
    nested_obj = tmp / "nested_obj.json"
    nested_obj.write_text('{"a":' * 3000 + "1" + "}" * 3000, encoding="utf-8")
    yield "config object nested 3000 deep", nested_obj


def model_cases(tmp: Path) -> Iterator[tuple[str, list[str]]]:
    """Hostile model arguments and config files through mem, perf and model."""
    long_name = "a" * 300
    for name in (long_name, "x/" * 200 + "y", "/" + "b" * 300 + ".json", "", " ", "../../etc"):
        for cmd in (["mem"], ["model"], ["perf", "--gpu", "h100"]):
            yield f"name {cmd[0]} {name[:20]!r}", [cmd[0], name, *cmd[1:], "--json"]
    for label, path in _configs(tmp):
        yield label, ["mem", str(path), "--json"]


class Deadline(Exception):
    """The case ran over its deadline."""


def _alarm(_signum: int, _frame: Any) -> None:
    raise Deadline


def _bad_number(doc: Any) -> bool:
    """NaN, Infinity or a negative size anywhere in the answer."""
    if isinstance(doc, float):
        return not math.isfinite(doc)
    if isinstance(doc, dict):
        if doc.get("key") == "overlap":  # the signed adjustment line of a memory breakdown
            return False
        for key, value in doc.items():
            if key == "overlap":
                continue
            if (
                isinstance(value, (int, float))
                and not isinstance(value, bool)
                and value < 0
                and str(key).endswith(("_bytes", "bytes", "_s", "params", "_gib"))
            ):
                return True
            if _bad_number(value):
                return True
    if isinstance(doc, list):
        return any(_bad_number(v) for v in doc)
    return False


def run_case(argv: list[str], deadline_s: float) -> tuple[str, str]:
    """Run one case in-process; returns (class, detail)."""
    runner = CliRunner()
    signal.signal(signal.SIGALRM, _alarm)
    signal.setitimer(signal.ITIMER_REAL, deadline_s)
    try:
        result = runner.invoke(cli, argv, catch_exceptions=True)
    except Deadline:
        return "hang", ""
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
    if isinstance(result.exception, Deadline):
        return "hang", ""
    stderr = result.stderr if result.stderr_bytes is not None else ""
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        return "traceback", f"{type(result.exception).__name__}: {result.exception}"[:160]
    if "Traceback" in stderr:
        return "traceback", stderr.strip().splitlines()[-1][:160]
    if result.exit_code == 2:
        lines = [ln for ln in stderr.strip().splitlines() if ln.strip()]
        return ("clean", "") if len(lines) == 1 else ("wrong exit", f"{len(lines)} lines")
    if result.exit_code != 0:
        return "wrong exit", f"exit {result.exit_code}: {stderr.strip()[:120]}"
    try:
        doc = json.loads(result.stdout)
    except ValueError:
        return "clean", ""  # a table, not JSON
    if _bad_number(doc):
        return "wrong answer", "NaN, Infinity or a negative size"
    return "clean", ""


def other_cases(tmp: Path) -> Iterator[tuple[str, list[str]]]:
    """Multi-value options (the stencil grid) and hostile catalog files."""
    for grid in (
        ["1e5", "1e5", "1e5"],
        ["100000", "100000", "100000"],
        ["0", "1", "1"],
        ["nan", "1", "1"],
        [str(2**63), "1", "1"],
        ["10000000", "10000000", "100"],
    ):
        yield f"stencil --grid {' '.join(grid)}", ["stencil", "--grid", *grid, "--json"]
    catalogs = {
        "gpu list": "gpu = [1, 2]\n",
        "gpu string": 'gpu = "h100"\n',
        "gpu table missing fields": '[[gpu]]\nid = "x"\n',
        "negative memory": '[[gpu]]\nid = "x"\nname = "X"\nvendor = "nvidia"\nmemory_bytes = -5\n',
        "not toml": "{{{{",
        "nan peak": '[[gpu]]\nid = "x"\nname = "X"\nvendor = "nvidia"\n'
        "memory_bytes = 80e9\npeak_bf16_dense_flops = nan\n",
        "binary": "\x00\x01\x02",
        "nested 5,000 deep": "x = " + "[" * 5000 + "]" * 5000 + "\n",
    }
    for i, (label, text) in enumerate(catalogs.items()):
        path = tmp / f"catalog{i}.toml"
        path.write_text(text, encoding="utf-8")
        yield f"catalog {label}", ["gpus", "--catalog", str(path), "--json"]
        yield (
            f"catalog {label} (mem)",
            ["perf", "llama-3.1-8b", "--gpu", "h100", "--catalog", str(path), "--json"],
        )
    # Files that are no files (issue 39): a FIFO blocked the reader for ever, /dev/zero never ended.
    fifo = tmp / "catalog-fifo.toml"
    if not fifo.exists():
        os.mkfifo(fifo)
    for label, path in (("fifo", fifo), ("/dev/zero", Path("/dev/zero"))):
        yield f"hostile catalog {label}", ["gpus", "--catalog", str(path), "--json"]
        yield f"hostile log {label}", ["explain", "--log", str(path), "--json"]
    # Floats that overflowed or contradicted themselves, and names that drive a terminal.
    yield "hostile pue", ["cost", "h100", "--pue", "1e308", "--json"]
    yield "hostile years", ["cost", "h100", "--years", "1e-308", "--json"]
    yield "hostile rate", ["capacity", "llama-3.1-8b", "--gpu", "h100", "--rate", "1e-308"]
    yield "hostile model name", ["model", "\x1b]0;title\x07llama", "--json"]
    yield "hostile emit name", ["plan", "m\nkind: Secret", "--task", "infer", "--emit", "k8s"]


def main() -> None:
    """Run the cases and print the contract table and every failure."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--limit", type=int, default=0, help="Run a random sample of N cases.")
    parser.add_argument("--deadline", type=float, default=20.0)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--memory-gib", type=float, default=4.0, help="Address-space limit.")
    args = parser.parse_args()
    # A runaway allocation becomes a MemoryError in the case (counted), not the kernel's kill.
    import resource

    cap = int(args.memory_gib * 2**30)
    resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("SUANLI_NO_TRACE", "1")
    with tempfile.TemporaryDirectory() as tmp:
        cases = list(number_cases()) + list(model_cases(Path(tmp))) + list(other_cases(Path(tmp)))
        if args.limit:
            random.Random(args.seed).shuffle(cases)
            cases = cases[: args.limit]
        counts: Counter[str] = Counter()
        failures = []
        start = time.monotonic()
        for label, argv in cases:
            kind, detail = run_case(argv, args.deadline)
            gc.collect()
            counts[kind] += 1
            if kind != "clean":
                failures.append((kind, label, detail))
        elapsed = time.monotonic() - start
    print(f"{len(cases)} cases in {elapsed:.0f} s")
    print("| class | cases |")
    print("|---|---:|")
    for kind in ("clean", "traceback", "hang", "wrong exit", "wrong answer"):
        print(f"| {kind} | {counts[kind]} |")
    for kind, label, detail in failures:
        print(f"{kind:12s} {label} :: {detail}")


if __name__ == "__main__":
    main()
