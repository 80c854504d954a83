"""The published speed corpus (tests/fixtures/speed-corpus.csv): its rows, and suanli's estimate
of each one through the public API (:func:`suanli.perf`).

The corpus validates the speed model; nothing is fitted to it. Each row is one published
end-to-end measurement with the layout its source gives (see the ``source`` and ``notes``
columns). Layout options without a column of their own (virtual pipeline stages, sequence
parallelism, LoRA rank, a pure-bf16 optimizer, an fp8 KV cache, ...) are written in the notes as
``{key=value ...}``; :data:`EXTRA_KEYS` lists the keys.

Usage: ``load_corpus()`` then ``estimate(row)`` for each row; ``signed_error`` gives the error
with the sign convention of benchmarks/accuracy_speed.py.
"""

from __future__ import annotations

import csv
import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from suanli import InferPerfAnswer, PerfRequest, TrainPerfAnswer, WorkRequest, perf
from suanli.answers import bands

CORPUS = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "speed-corpus.csv"

COLUMNS = [
    "id",
    "source_id",
    "source",
    "date",
    "kind",
    "model",
    "gpu",
    "gpus",
    "gpus_per_node",
    "inter_node",
    "task",
    "dtype",
    "batch",
    "seq",
    "grad_accum",
    "tp",
    "pp",
    "dp",
    "zero",
    "recompute",
    "attention",
    "kernels",
    "framework",
    "prompt",
    "output",
    "quant",
    "metric",
    "value",
    "notes",
]

TRAIN_METRICS = ("tokens_per_s_per_gpu", "tokens_per_s", "mfu", "tflops_per_gpu", "step_time_s")
INFER_METRICS = ("ttft_s", "tpot_s", "output_tokens_per_s", "tokens_per_s_per_gpu", "tokens_per_s")
#: Metrics where less is faster: their error sign is flipped (positive = the estimate promises
#: more speed than was measured, as for the throughput metrics).
TIME_METRICS = frozenset({"step_time_s", "ttft_s", "tpot_s"})

#: Options set in a row's notes as ``{key=value ...}`` (WorkRequest fields without a column).
EXTRA_KEYS: dict[str, Callable[[str], Any]] = {
    "vpp": int,
    "sp": lambda v: v.lower() in ("1", "true", "yes"),
    "ep": int,
    "etp": int,
    "ep_dispatcher": str,
    "precision": str,
    "optimizer": str,
    "lora_rank": int,
    "lora_targets": str,
    "offload_optimizer": lambda v: v.lower() in ("1", "true", "yes"),
    "offload_params": lambda v: v.lower() in ("1", "true", "yes"),
    "loss": str,
    "zero_buckets": str,
    "kv_dtype": str,
    "load": str,
    "shard_group": int,
    "fp8_scaling": str,
    "projections": str,
    "recompute_every": int,
    "calibration": str,
    "rope": str,
    "pp_schedule": str,
    "recompute_modules": str,
    "dispatch": str,
    "kv_update": str,
    "gqa": str,
    "nics_per_node": int,
    "blocking_grad_reduce": lambda v: v.lower() in ("1", "true", "yes"),
}

#: Calibration files a row can name (``{calibration=NAME}``): the measured ceilings of a card
#: that differs from the catalog's, as a user of that card would give them with --calibration.
CALIBRATIONS = CORPUS.parent / "calibration"

#: How an inference row's requests were run (the ``load`` option): ``decode`` (default) reads
#: TPOT and batch / TPOT; ``static``, one batch started together and run to the end (TensorRT-LLM's
#: gptSessionBenchmark, vLLM's benchmark_latency), reads the rate with the prefill included;
#: ``closed``, a fixed number of clients each sending its next request when the last ends
#: (AIPerf, genai-perf), reads the closed-loop steady state.
LOADS = ("decode", "static", "closed")
#: Options that describe an inference row rather than set a WorkRequest field.
INFER_ONLY = frozenset({"kv_dtype", "load", "projections", "dispatch", "kv_update", "gqa"})
#: Options of the request, not of the work.
REQUEST_ONLY = frozenset({"calibration", "nics_per_node"})

#: Prompt and output lengths used for an inference row whose source does not state them
#: (suanli's defaults, what a user who states nothing gets).
DEFAULT_PROMPT = PerfRequest().prompt
DEFAULT_OUTPUT = PerfRequest().output

_EXTRAS = re.compile(r"\{([^{}]*)\}")


@dataclass(frozen=True)
class Row:
    """One published measurement and the layout it was taken with."""

    id: str
    source_id: str
    source: str
    date: str
    kind: str
    """``train`` or ``infer``."""
    model: str
    gpu: str
    gpus: int
    gpus_per_node: int | None
    inter_node: str | None
    task: str
    dtype: str
    batch: int | None
    """Micro-batch per GPU (train) or concurrent sequences (infer)."""
    seq: int | None
    grad_accum: int | None
    tp: int
    pp: int
    dp: int | None
    zero: int | None
    recompute: str | None
    attention: str | None
    kernels: str | None
    framework: str
    prompt: int | None
    output: int | None
    quant: str | None
    metric: str
    value: float
    notes: str
    extras: tuple[tuple[str, Any], ...] = ()
    """The ``{key=value ...}`` options from the notes."""

    @property
    def is_time(self) -> bool:
        """The metric is a duration (less is faster)."""
        return self.metric in TIME_METRICS

    def option(self, key: str, default: Any = None) -> Any:
        """The notes' ``{key=value}`` option, or ``default``."""
        return dict(self.extras).get(key, default)


@dataclass(frozen=True)
class Estimate:
    """suanli's number for a row, in the row's metric, and whether suanli thinks the job runs."""

    value: float
    fits: bool
    """The job fits in the card's memory by suanli's count (estimated with ignore_fit)."""
    supported: bool
    """The card has units for the job's precision."""
    warnings: tuple[str, ...] = ()

    def __float__(self) -> float:
        return self.value


def _int(text: str) -> int | None:
    return int(text) if text.strip() else None


def _str(text: str) -> str | None:
    return text.strip() or None


def parse_extras(notes: str) -> tuple[tuple[str, Any], ...]:
    """The ``{key=value ...}`` options in ``notes``; unknown keys are an error."""
    found: list[tuple[str, Any]] = []
    for block in _EXTRAS.findall(notes):
        for item in block.split():
            key, sep, value = item.partition("=")
            if not sep or key not in EXTRA_KEYS:
                raise ValueError(f"unknown option {item!r} in notes (known: {sorted(EXTRA_KEYS)})")
            found.append((key, EXTRA_KEYS[key](value)))
    return tuple(found)


def _row(rec: dict[str, str]) -> Row:
    kind = rec["kind"].strip()
    metric = rec["metric"].strip()
    allowed = TRAIN_METRICS if kind == "train" else INFER_METRICS if kind == "infer" else ()
    if metric not in allowed:
        raise ValueError(f"{rec['id']}: metric {metric!r} is not one of {allowed} for {kind!r}")
    return Row(
        id=rec["id"].strip(),
        source_id=rec["source_id"].strip(),
        source=rec["source"].strip(),
        date=rec["date"].strip(),
        kind=kind,
        model=rec["model"].strip(),
        gpu=rec["gpu"].strip(),
        gpus=int(rec["gpus"]),
        gpus_per_node=_int(rec["gpus_per_node"]),
        inter_node=_str(rec["inter_node"]),
        task=rec["task"].strip(),
        dtype=rec["dtype"].strip() or "bf16",
        batch=_int(rec["batch"]),
        seq=_int(rec["seq"]),
        grad_accum=_int(rec["grad_accum"]),
        tp=_int(rec["tp"]) or 1,
        pp=_int(rec["pp"]) or 1,
        dp=_int(rec["dp"]),
        zero=_int(rec["zero"]),
        recompute=_str(rec["recompute"]),
        attention=_str(rec["attention"]),
        kernels=_str(rec["kernels"]),
        framework=rec["framework"].strip(),
        prompt=_int(rec["prompt"]),
        output=_int(rec["output"]),
        quant=_str(rec["quant"]),
        metric=metric,
        value=float(rec["value"]),
        notes=rec["notes"].strip(),
        extras=parse_extras(rec["notes"]),
    )


def load_corpus(path: str | Path = CORPUS) -> list[Row]:
    """The corpus rows, in file order; raises ValueError on a malformed row."""
    with open(path, newline="", encoding="utf-8") as f:
        reader = csv.DictReader(f)
        if reader.fieldnames != COLUMNS:
            raise ValueError(f"{path}: header is {reader.fieldnames}, expected {COLUMNS}")
        return [_row(rec) for rec in reader]


def _preset(row: Row, stated: dict[str, Any]) -> dict[str, Any]:
    """The row's framework preset, as a user of that framework would ask for it: ``framework``
    set when the row's ``framework`` column names a catalog framework or alias, with every
    option the row (or this harness) states kept as stated (``explicit``); nothing for a
    framework the catalog does not know (docs/accuracy-speed.md, "Rows read through their
    framework's preset")."""
    from suanli.catalog.frameworks import get_framework

    try:
        framework = get_framework(row.framework.strip().lower())
    except ValueError:
        return {}
    return {"framework": framework.id, "explicit": tuple(sorted(stated))}


def request(row: Row) -> PerfRequest:
    """The public-API request for a row (``ignore_fit``: a job suanli thinks cannot run still
    gets its speed, marked ``fits=False``)."""
    extras = dict(row.extras)
    calibration = str(CALIBRATIONS / extras["calibration"]) if "calibration" in extras else None
    if row.kind == "infer":
        if row.batch is None:
            raise ValueError(f"{row.id}: an inference row needs its batch (concurrency)")
        stated = {
            "task": "infer",
            "batch": row.batch,
            "gpus": row.gpus,
            "tp": row.tp,
            "pp": row.pp,
            # A serving row's precision is its weight format (--dtype is a training option).
            "quant": row.quant or row.dtype,
            "kv_dtype": extras.get("kv_dtype", "bf16"),
            "projections": extras.get("projections", "fused"),
            "kernels": row.kernels or "eager",
        }
        for key in ("dispatch", "kv_update", "gqa"):
            if key in extras:
                stated[key] = extras[key]
        preset = _preset(row, stated)
        if not preset:
            # An engine the catalog does not know (TGI, LMDeploy, RTP-LLM...): the options the row
            # states and suanli's own defaults, not the default framework's (transformers').
            stated.setdefault("dispatch", "engine")
            preset = {"explicit": tuple(sorted(stated))}
        return PerfRequest(
            model=row.model,
            work=WorkRequest(**stated, **preset),
            gpu=row.gpu,
            gpus_per_node=row.gpus_per_node,
            inter_node=row.inter_node,
            nics_per_node=extras.get("nics_per_node"),
            prompt=row.prompt or DEFAULT_PROMPT,
            output=row.output or DEFAULT_OUTPUT,
            ignore_fit=True,
            calibration=calibration,
        )
    options: dict[str, Any] = {
        "task": row.task,
        "batch": row.batch,
        "seq": row.seq or WorkRequest.seq,
        "grad_accum": row.grad_accum or 1,
        "dtype": row.dtype,
        "recompute": row.recompute or "none",
        "attention": row.attention or "sdpa",
        "kernels": row.kernels or "eager",
        "zero": row.zero or 0,
        "tp": row.tp,
        "pp": row.pp,
        "dp": row.dp,
        "gpus": row.gpus,
    }
    options.update({k: v for k, v in extras.items() if k not in INFER_ONLY | REQUEST_ONLY})
    return PerfRequest(
        model=row.model,
        work=WorkRequest(**options, **_preset(row, options)),
        gpu=row.gpu,
        gpus_per_node=row.gpus_per_node,
        inter_node=row.inter_node,
        nics_per_node=extras.get("nics_per_node"),
        ignore_fit=True,
        calibration=calibration,
    )


def _value(row: Row, answer: TrainPerfAnswer | InferPerfAnswer) -> float:
    if isinstance(answer, TrainPerfAnswer):
        train = {
            "tokens_per_s_per_gpu": lambda a: a.tokens_per_s / a.gpus,
            "tokens_per_s": lambda a: a.tokens_per_s,
            "mfu": lambda a: a.mfu,
            "tflops_per_gpu": lambda a: a.flops_per_step / a.step_time_s / a.gpus / 1e12,
            "step_time_s": lambda a: a.step_time_s,
        }
        return float(train[row.metric](answer))
    load = dict(row.extras).get("load", "decode")
    if load not in LOADS:
        raise ValueError(f"{row.id}: load {load!r} is not one of {LOADS}")
    ttft, tpot, rate = answer.ttft_s, answer.tpot_s, answer.tokens_per_s
    if load == "static":
        rate = answer.batch_tokens_per_s
    elif load == "closed" and answer.closed_loop is not None:
        loop = answer.closed_loop
        ttft, tpot, rate = loop.ttft_s, loop.tpot_s, loop.tokens_per_s
    infer = {
        "ttft_s": ttft,
        "tpot_s": tpot,
        "output_tokens_per_s": rate,
        "tokens_per_s": rate,
        "tokens_per_s_per_gpu": rate / row.gpus,
    }
    return float(infer[row.metric])


def estimate(row: Row) -> Estimate:
    """suanli's estimate of the row's metric (read as the row's ``load`` says), with the fit and
    precision flags the answer carries."""
    answer = perf(request(row))
    return Estimate(
        value=_value(row, answer),
        fits=answer.fits,
        supported=answer.supported,
        warnings=tuple(answer.warnings),
    )


def signed_error(row: Row, estimated: float) -> float:
    """(estimate - measured) / measured, sign flipped for durations: positive always means the
    estimate promises more speed than was measured."""
    error = (estimated - row.value) / row.value
    return -error if row.is_time else error


def within(error: float, tolerance: float = 0.20) -> bool:
    """The error is finite and at most ``tolerance`` in size."""
    return math.isfinite(error) and abs(error) <= tolerance


#: The sealed part of the corpus: published rows from sources the open corpus does not hold,
#: scored once (``accuracy_speed.py --sealed``) and never iterated against.
SEALED = CORPUS.parent / "speed-corpus-sealed.csv"


def task_bucket(row: Row) -> str:
    """``pretrain``, ``fine-tune`` (full, LoRA, QLoRA) or ``inference``."""
    return bands.task_bucket("infer" if row.kind == "infer" else row.task)


# The coverage matrix's dimensions are the error band's (suanli.answers.bands), one definition.
SCALES = bands.SCALES
scale_bucket = bands.scale_bucket
generation = bands.generation

#: Framework column values of published runs that name no catalog framework (or an alias of
#: one), with their family; catalog frameworks take frameworks.toml's ``family``.
CORPUS_FAMILIES = {
    "fsdp": "FSDP/torchtitan",
    "fsdp_qlora": "FSDP/torchtitan",
    "automodel": "FSDP/torchtitan",
    "megatron-deepspeed": "DeepSpeed",
    "trl": "HF/TRL/PEFT",
    "axolotl": "HF/TRL/PEFT",
    "tgi": "vLLM/SGLang/TRT-LLM",
    "lmdeploy": "vLLM/SGLang/TRT-LLM",
    "rtp-llm": "vLLM/SGLang/TRT-LLM",
    "mlx": "llama.cpp/Ollama/MLX",
}


def family(framework: str) -> str:
    """The framework family of a corpus row's ``framework`` column."""
    name = framework.strip().lower()
    return CORPUS_FAMILIES.get(name) or bands.family(name)
