"""The best serving replica layout of one card (``suanli plan --task infer``): every weight
format the card runs, KV dtype, tensor-parallel degree and batch, timed by the vectorized serving
estimate (:func:`suanli.estimate.vector.infer_speed`) and ranked by the objective."""

from __future__ import annotations

import math
from dataclasses import dataclass

from suanli.catalog.formats import get_format, runnable_formats, runnable_kv
from suanli.catalog.gpu import GPU
from suanli.estimate.device import device_for
from suanli.estimate.workload import InferWork
from suanli.i18n import N_
from suanli.models.spec import ModelSpec
from suanli.plan.search import OBJECTIVES, rent_usd

#: Weight formats tried for serving, highest fidelity first.
SERVE_FORMATS = ("bf16", "fp8", "int8", "nvfp4", "awq-4bit-g128", "gptq-4bit-g128")
SERVE_BATCHES = (1, 2, 4, 8, 16, 32, 64, 128, 256)


@dataclass(frozen=True, kw_only=True)
class ServeCandidate:
    """A serving replica layout and how many replicas a request rate needs."""

    gpu_id: str
    tp: int
    weight_format: str
    kv_dtype: str
    batch: int
    replicas: int
    memory_bytes: float
    ttft_s: float
    tpot_s: float
    tokens_per_s: float
    """Output tokens per second of all replicas."""
    requests_per_s: float
    """Requests per second of all replicas."""
    usd_per_hour: float | None

    @property
    def gpus(self) -> int:
        """GPUs in all replicas."""
        return self.tp * self.replicas

    def options(self) -> str:
        """The layout as options a user can paste."""
        return (
            f"--task infer --gpu {self.gpu_id} --tp {self.tp} --quant {self.weight_format} "
            f"--kv-dtype {self.kv_dtype} --batch {self.batch}"
        )


def search_serve(
    spec: ModelSpec,
    gpu: GPU,
    *,
    context: int,
    output: int,
    max_gpus: int,
    rps: float | None = None,
    objective: str = "cost-per-token",
    max_tpot_s: float | None = None,
    formats: tuple[str, ...] = SERVE_FORMATS,
    projections: str = "fused",
    kernels: str = "eager",
    price_per_gpu_hour: float | None = None,
    dispatch: str = "engine",
    options: InferWork | None = None,
) -> tuple[ServeCandidate | None, int, str]:
    """The best replica layout of ``gpu`` for serving, and the replicas ``rps`` needs
    (``projections``, ``kernels`` and ``dispatch``: how the engine launches the input
    projections, the element-wise kernels and the step; ``options``: the request's other serving
    options, as :func:`suanli.estimate.vector.infer_speed` reads them; all ``InferWork``'s;
    ``price_per_gpu_hour``: the user's rent, else the one every view shows,
    :func:`suanli.catalog.prices.rent_price`).

    Memory is linear in the batch (weights and the prefill peak fixed, KV cache and last-token
    logits per sequence), so two exact estimates per format and TP degree give every batch.
    """
    import numpy as np

    from suanli.estimate import vector
    from suanli.estimate.inference_memory import inference_memory

    if objective not in OBJECTIVES:
        raise ValueError(
            N_("--objective {objective!r} is not one of {choices}").format(
                objective=objective, choices=", ".join(OBJECTIVES)
            )
        )
    price = rent_usd(gpu, price_per_gpu_hour)
    prompt = max(context - output, 1)
    best: ServeCandidate | None = None
    best_key = -math.inf
    evaluated = 0
    tps = [t for t in (1, 2, 4, 8) if t <= max_gpus and spec.attention.num_heads % t == 0]
    batches = np.asarray(SERVE_BATCHES)
    # Only formats and KV dtypes the card runs (catalog/data/quant.toml, needs): bf16 becomes
    # fp16 on Turing, fp8 is not tried where the card has no fp8 units.
    kv_dtypes = tuple(dict.fromkeys(runnable_kv(gpu, kv) for kv in ("bf16", "fp8")))
    for fmt in runnable_formats(gpu, formats):
        dtype = get_format(fmt).gemm_dtype
        try:
            device = device_for(gpu, dtype)
        except ValueError:
            continue
        for kv in kv_dtypes:
            for tp in tps:
                one = inference_memory(
                    spec, InferWork(batch=1, context=context, weight_format=fmt, kv_dtype=kv, tp=tp)
                )
                two = inference_memory(
                    spec, InferWork(batch=2, context=context, weight_format=fmt, kv_dtype=kv, tp=tp)
                )
                memory = one.total_bytes + (two.total_bytes - one.total_bytes) * (batches - 1)
                ok = memory <= gpu.memory_bytes
                evaluated += len(batches)
                if not ok.any():
                    continue
                speed = vector.infer_speed(
                    spec,
                    fmt,
                    1 if kv == "fp8" else 2,
                    batches,
                    np.full(len(batches), tp),
                    prompt,
                    output,
                    device,
                    projections,
                    kernels,
                    dispatch,
                    options=options,
                )
                req = batches / (speed["ttft_s"] + output * speed["tpot_s"])
                replicas = np.ones(len(batches)) if rps is None else np.ceil(rps / req)
                gpus = replicas * tp
                ok &= gpus <= max_gpus
                if max_tpot_s is not None:
                    ok &= speed["tpot_s"] <= max_tpot_s
                if not ok.any():
                    continue
                total_tps = speed["tokens_per_s"] * replicas
                if objective == "time":
                    key = -speed["tpot_s"] if rps is None else -gpus + 1e-9 * total_tps
                elif price:
                    key = total_tps / (gpus * price)
                else:
                    key = total_tps / gpus
                key = np.where(ok, key, -np.inf)
                i = int(np.argmax(key))
                if key[i] > best_key:
                    best_key = float(key[i])
                    best = ServeCandidate(
                        gpu_id=gpu.id,
                        tp=tp,
                        weight_format=fmt,
                        kv_dtype=kv,
                        batch=int(batches[i]),
                        replicas=int(replicas[i]),
                        memory_bytes=float(memory[i]),
                        ttft_s=float(speed["ttft_s"][i]),
                        tpot_s=float(speed["tpot_s"][i]),
                        tokens_per_s=float(total_tps[i]),
                        requests_per_s=float(req[i] * replicas[i]),
                        usd_per_hour=float(price) * float(gpus[i]) if price else None,
                    )
    if best:
        reason = ""
    elif rps and max_tpot_s:
        reason = N_(
            "cannot serve within {gpus} GPUs at {rps:g} requests/s with TPOT <= {tpot:g} ms"
        ).format(gpus=max_gpus, rps=rps, tpot=max_tpot_s * 1e3)
    elif rps:
        reason = N_("cannot serve within {gpus} GPUs at {rps:g} requests/s").format(
            gpus=max_gpus, rps=rps
        )
    elif max_tpot_s:
        reason = N_("cannot serve within {gpus} GPUs with TPOT <= {tpot:g} ms").format(
            gpus=max_gpus, tpot=max_tpot_s * 1e3
        )
    else:
        reason = N_("cannot serve within {gpus} GPUs").format(gpus=max_gpus)
    return best, evaluated, reason
