"""From a catalog GPU to the :class:`~suanli.estimate.perf.Device` the speed model uses.

Peaks come from the GPU catalog, achievable fractions from measured ceilings
(``catalog/data/efficiency.toml``) or a calibration file written by ``suanli bench``
(``--calibration FILE``), networks from ``catalog/data/interconnect.toml``.
"""

from __future__ import annotations

import sys
from dataclasses import replace
from functools import lru_cache
from pathlib import Path
from typing import Any

from suanli.catalog.attention import attention_efficiency, attention_points, reference_for
from suanli.catalog.decode_attention import decode_attention_efficiency
from suanli.catalog.gpu import GPU
from suanli.catalog.loader import CatalogError
from suanli.catalog.network import (
    Ceiling,
    ceiling_for,
    compute_precision,
    host_copy_bytes_per_s,
)
from suanli.catalog.prices import rent_usd_per_hour
from suanli.estimate.kernel_fits import kernel_model
from suanli.estimate.links import network_for
from suanli.estimate.perf import Device
from suanli.i18n import N_, message_of

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib


def read_calibration(path: str | Path) -> dict[tuple[str, str], dict[str, Any]]:
    """Measured ceilings from a calibration TOML: ``[[ceiling]]`` rows with ``gpu_id``,
    ``precision``, ``matmul_flops`` and optionally ``memory_bandwidth_bytes_per_s``."""
    from suanli.catalog.loader import MAX_TEXT_FILE_BYTES, TOO_DEEP
    from suanli.safe_files import UnsafeFileError, read_regular_text

    p = Path(path)
    try:
        doc = tomllib.loads(read_regular_text(p, MAX_TEXT_FILE_BYTES, errors="replace"))
    except UnsafeFileError as exc:
        raise CatalogError(message_of(exc)) from None
    except RecursionError:
        raise CatalogError(TOO_DEEP.format(origin=str(p))) from None
    except OSError as exc:
        raise CatalogError(
            N_("cannot read calibration file {path!r} ({reason})").format(
                path=str(p), reason=exc.strerror
            )
        ) from None
    except tomllib.TOMLDecodeError as exc:
        raise CatalogError(
            N_("{path}: not valid TOML ({error})").format(path=p, error=exc)
        ) from None
    rows = {}
    for raw in doc.get("ceiling", []):
        try:
            key = (str(raw["gpu_id"]), str(raw["precision"]))
            float(raw["matmul_flops"])
        except (KeyError, TypeError, ValueError):
            raise CatalogError(
                N_(
                    "{path}: each [[ceiling]] needs gpu_id, precision and a numeric matmul_flops"
                ).format(path=p)
            ) from None
        rows[key] = raw
    if not rows:
        raise CatalogError(
            N_("{path}: no [[ceiling]] rows; see docs/speed.md for the format").format(path=p)
        )
    return rows


def _local_profile(gpu_id: str) -> dict[tuple[str, str], dict[str, Any]] | None:
    """The saved ``suanli bench`` profile of this GPU, if there is one."""
    from suanli.paths import local_calibration_path

    path = local_calibration_path(gpu_id)
    if not path.is_file():
        return None
    try:
        return read_calibration(path)
    except CatalogError:
        return None


def _decode_attention_for(gpu: GPU) -> Any:
    """Measured paged decode-attention bandwidth utilization of ``gpu``'s generation
    (FlashInfer's kernels, catalog/data/decode_attention.toml), by (batch, context, KV bytes a
    token adds per layer on one GPU: 0 reads the rows' own head layout)."""

    def efficiency(batch: int, context: int, token_bytes: float = 0.0) -> float:
        return decode_attention_efficiency(
            gpu, batch=max(batch, 1), context=max(context, 1), token_bytes=token_bytes
        )[0]

    return lru_cache(maxsize=512)(efficiency)


def _attention_for(
    gpu: GPU, precision: str, kernel: str | None = None, *, describe: bool = True
) -> tuple[Any, str]:
    """The measured fused-attention efficiency of ``gpu`` (16-bit; fp8 recipes keep attention
    in bf16), as a fraction of its 16-bit dense peak: a function of the shape, and its source
    (empty unless ``describe``). ``kernel`` picks one kernel's rows (``flash2``...) instead of
    the generation's best."""
    if gpu.form_factor == "cpu" or precision not in ("bf16", "fp16", "fp8", "fp4"):
        return None, ""
    dtype = "fp16" if precision == "fp16" or not gpu.peak_flops("bf16") else "bf16"
    peak = gpu.peak_flops(dtype)
    if not peak:
        return None, ""

    def efficiency(seq: int, head_dim: int, causal: bool, backward: bool) -> float:
        return attention_efficiency(
            gpu,
            peak,
            seq_len=seq,
            head_dim=head_dim,
            causal=causal,
            backward=backward,
            dtype=dtype,
            kernel=kernel,
        )[0]

    if not describe:
        return lru_cache(maxsize=256)(efficiency), ""
    source = attention_efficiency(
        gpu, peak, seq_len=4096, head_dim=128, causal=True, backward=False, kernel=kernel
    )[1]
    return lru_cache(maxsize=256)(efficiency), source


def _triton_source(gpu: GPU) -> str:
    """Where ``--attention triton``'s rates come from on ``gpu`` (cheap: no rate computed)."""
    ref = reference_for(gpu)[0]
    if any(p.kernel == "triton" and p.gpu_id == ref for p in attention_points()):
        return N_(
            "FlashAttention in Triton (2023) as measured on {ref} (Dao 2023, arXiv:2307.08691, "
            "Fig. 4-6)"
        ).format(ref=ref)
    return N_(
        "FlashAttention in Triton (2023), not measured on this generation: FlashAttention-2's "
        "rate on {ref} x the triton/flash2 ratio measured on the A100 at the same pass, mask, "
        "head dim and seq (assumed to hold here; Dao 2023, arXiv:2307.08691, Fig. 4-6)"
    ).format(ref=ref)


def _sdpa_attention_for(gpu: GPU, precision: str) -> tuple[Any, str]:
    """PyTorch ``scaled_dot_product_attention`` on ``gpu`` where it is slower than the
    generation's best kernel, else ``(None, "")``. Its flash backend is FlashAttention-2 on every
    card (PyTorch does not ship FlashAttention-3) and its cuDNN backend is opt-in: on an H100 the
    default SDPA ran at 329 TFLOPS where cuDNN and FlashAttention-3 ran at 631-632
    (pytorch/pytorch#142132, nightly 2024-12-04; cuDNN made opt-in in #138649)."""
    if gpu.form_factor == "cpu" or reference_for(gpu)[1] == "flash2":
        return None, ""
    return _attention_for(gpu, precision, kernel="flash2")


def sdpa_device(device: Device, gpu: GPU) -> Device:
    """``device`` with PyTorch's own fused attention for every pass (what eager diffusers
    pipelines run): see :func:`_sdpa_attention_for`."""
    if device.sdpa_attention is None:
        return device
    return replace(
        device, attention=device.sdpa_attention, attention_source=device.sdpa_attention_source
    )


def device_for(
    gpu: GPU,
    dtype: str = "bf16",
    *,
    gpus_per_node: int | None = None,
    inter_node: str | None = None,
    nics_per_node: int | None = None,
    calibration: dict[tuple[str, str], dict[str, Any]] | None = None,
    auto_calibration: bool = True,
) -> Device:
    """The speed model's view of ``gpu`` computing in ``dtype``.

    Without an explicit ``calibration``, a profile saved by ``suanli bench`` for this GPU
    (``~/.config/suanli/calibration/<gpu id>.toml``) is used when it exists.
    """
    source_note = N_("calibration file")
    if calibration is None and auto_calibration:
        calibration = _local_profile(gpu.id)
        source_note = N_("local calibration profile (suanli bench)")
    precision = compute_precision(gpu, dtype)
    peak = gpu.peak_flops(precision)
    if not peak:
        raise ValueError(
            N_("{gpu} has no {precision} peak in the catalog; pick another GPU").format(
                gpu=gpu.id, precision=precision
            )
        )
    ceiling = ceiling_for(gpu, precision)
    matmul_fraction, memory_fraction, source = (
        ceiling.matmul_fraction,
        ceiling.memory_fraction,
        ceiling.source,
    )
    memory_source = ceiling.memory_source or source
    row = (calibration or {}).get((gpu.id, precision))
    if row is not None:
        matmul_fraction = min(float(row["matmul_flops"]) / peak, 1.0)
        bw = row.get("memory_bandwidth_bytes_per_s")
        if bw:
            memory_fraction = min(float(bw) / gpu.memory_bandwidth_bytes_per_s, 1.0)
            memory_source = source_note
        source = source_note
    # CPUs have no tensor-core tiles or kernel launches to model: one efficiency for all.
    gemm = (
        None
        if gpu.form_factor == "cpu"
        else kernel_model(
            gpu, Ceiling(matmul_fraction, memory_fraction, source), precision=precision
        )
    )
    attention, attention_source = _attention_for(gpu, precision)
    sdpa_attention, sdpa_source = _sdpa_attention_for(gpu, precision)
    triton_attention = _attention_for(gpu, precision, kernel="triton", describe=False)[0]
    return Device(
        name=gpu.id,
        peak_flops=peak,
        matmul_efficiency=matmul_fraction,
        memory_bytes_per_s=gpu.memory_bandwidth_bytes_per_s,
        memory_efficiency=memory_fraction,
        network=network_for(
            gpu, gpus_per_node, inter_node, stripe_nics=True, nics_per_node=nics_per_node
        ),
        tdp_watts=float(gpu.get("tdp_watts") or 0),
        usd_per_hour=rent_usd_per_hour(gpu),
        efficiency_source=source,
        memory_source=memory_source,
        gemm=gemm,
        attention=attention,
        attention_source=attention_source,
        sdpa_attention=sdpa_attention,
        sdpa_attention_source=sdpa_source,
        triton_attention=triton_attention,
        triton_attention_source=_triton_source(gpu) if triton_attention else "",
        decode_attention=None if gpu.form_factor == "cpu" else _decode_attention_for(gpu),
        precision=precision,
        host_bytes_per_s=0.0 if gpu.form_factor == "cpu" else host_copy_bytes_per_s(gpu),
        host_memory_bytes_per_s=0.0
        if gpu.form_factor == "cpu"
        else _host_memory(gpu, gpus_per_node),
    )


#: The host a card usually sits in: a desktop (dual-channel DDR5) for consumer and workstation
#: cards, a two-socket server (8-channel DDR5 per socket) shared by the node's GPUs otherwise.
DESKTOP_HOST = "ryzen-9-7950x-cpu"
SERVER_HOST = "xeon-8480plus-cpu"
SERVER_SOCKETS = 2


def _host_memory(gpu: GPU, gpus_per_node: int | None) -> float:
    """The host memory bandwidth one GPU gets: the usual host CPU's measured-class bandwidth,
    split over the node's GPUs on a server."""
    from suanli.catalog import bundled_gpus, find_gpu
    from suanli.catalog.network import default_gpus_per_node

    desktop = gpu.form_factor in ("consumer", "workstation")
    try:
        cpu = find_gpu(DESKTOP_HOST if desktop else SERVER_HOST, bundled_gpus())
    except ValueError:
        return 0.0
    bandwidth = float(cpu.memory_bandwidth_bytes_per_s) * ceiling_for(cpu, "fp32").memory_fraction
    if desktop:
        return bandwidth
    sharing = gpus_per_node or default_gpus_per_node(gpu)
    return SERVER_SOCKETS * bandwidth / max(sharing, 1)
