"""What a reading means: flags for people (``top``, and ``export``'s ``suanli_gpu_flag``), fields
for scripts (``query``). Pure functions over :class:`~suanli.live.devices.DeviceSample`; the
Prometheus text is :mod:`suanli.live.exporter`'s."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from suanli.i18n import N_
from suanli.live.devices import DeviceSample

MiB = 2**20

#: Processes that are expected on a GPU box (anything else using a GPU heavily is flagged).
KNOWN_PROCESSES = (
    "python",
    "python3",
    "torchrun",
    "deepspeed",
    "accelerate",
    "vllm",
    "java",
    "tritonserver",
    "ollama",
    "llama-server",
    "blender",
    "ffmpeg",
    "Xorg",
    "gnome-shell",
    "jupyter",
    "sglang",
    "text-generation-launcher",
)
#: Well-known miners.
MINER_NAMES = (
    "xmrig",
    "ethminer",
    "t-rex",
    "nbminer",
    "lolminer",
    "phoenixminer",
    "gminer",
    "nanominer",
    "trex",
)


@dataclass(frozen=True)
class Flag:
    """A problem seen in a reading, and what it likely means."""

    index: int
    kind: str
    """``idle-memory-full``, ``throttling``, ``pcie-downtrained``, ``unknown-process``,
    ``lost``."""
    message: str


def flags(sample: DeviceSample) -> list[Flag]:
    """The problems one reading shows."""
    out: list[Flag] = []
    i = sample.index
    if sample.lost:
        return [
            Flag(
                i,
                "lost",
                N_(
                    "the GPU stopped answering (fell off the bus?): check dmesg for "
                    "Xid errors and reseat or reset the GPU"
                ),
            )
        ]
    total, used, util = sample.memory_total_bytes, sample.memory_used_bytes, sample.utilization_pct
    if total and used is not None and util is not None and used / total > 0.8 and util < 30:
        out.append(
            Flag(
                i,
                "idle-memory-full",
                N_(
                    "memory {full:.0%} full but utilisation {util:.0f}%: the job "
                    "is waiting on data loading, I/O or the CPU (see 'suanli doctor')"
                ).format(full=used / total, util=util),
            )
        )
    real = [
        r for r in sample.throttle_reasons if r not in ("gpu_idle", "applications_clocks_setting")
    ]
    if real:
        if sample.sm_clock_mhz and sample.sm_clock_max_mhz:
            message = N_(
                "clocks held back by {reasons} (SM {sm:.0f}/{sm_max:.0f} MHz): "
                "check cooling, airflow and the power limit"
            ).format(
                reasons=", ".join(real), sm=sample.sm_clock_mhz, sm_max=sample.sm_clock_max_mhz
            )
        else:
            message = N_(
                "clocks held back by {reasons}: check cooling, airflow and the power limit"
            ).format(reasons=", ".join(real))
        out.append(Flag(i, "throttling", message))
    gen, gen_max = sample.pcie_gen, sample.pcie_gen_max
    width, width_max = sample.pcie_width, sample.pcie_width_max
    if (gen and gen_max and gen < gen_max and (util or 0) > 0) or (
        width and width_max and width < width_max
    ):
        out.append(
            Flag(
                i,
                "pcie-downtrained",
                N_(
                    "PCIe link at Gen{gen} x{width} of Gen{gen_max} x{width_max}: reseat the "
                    "card, check the slot and riser, or the BIOS link speed"
                ).format(gen=gen, width=width, gen_max=gen_max, width_max=width_max),
            )
        )
    for proc in sample.processes:
        name = (proc.name or proc.path.rsplit("/", 1)[-1]).lower()
        heavy = (proc.memory_bytes or 0) > 1024 * MiB or (util or 0) > 50
        miner = any(m in name for m in MINER_NAMES)
        unknown = heavy and not any(name.startswith(k.lower()) for k in KNOWN_PROCESSES)
        if miner or (unknown and proc.path.startswith(("/tmp", "/dev/shm", "/var/tmp"))):
            out.append(
                Flag(
                    i,
                    "unknown-process",
                    N_(
                        "process {pid} '{name}' (user {user}) from {path} is using the GPU: "
                        "possibly a miner — check it and kill it if it is not yours"
                    ).format(
                        pid=proc.pid,
                        name=proc.name or proc.path,
                        user=proc.user or "?",
                        path=proc.path or "?",
                    ),
                )
            )
    return out


# --- query: nvidia-smi --query-gpu compatible fields ------------------------------------------

#: nvidia-smi field name -> (DeviceSample attribute, converter to the printed unit).
QUERY_FIELDS: dict[str, tuple[str, float]] = {
    "index": ("index", 1),
    "name": ("name", 1),
    "uuid": ("uuid", 1),
    "memory.total": ("memory_total_bytes", 1 / MiB),
    "memory.used": ("memory_used_bytes", 1 / MiB),
    "utilization.gpu": ("utilization_pct", 1),
    "utilization.memory": ("memory_utilization_pct", 1),
    "power.draw": ("power_w", 1),
    "power.limit": ("power_limit_w", 1),
    "temperature.gpu": ("temperature_c", 1),
    "clocks.sm": ("sm_clock_mhz", 1),
    "clocks.max.sm": ("sm_clock_max_mhz", 1),
    "clocks.mem": ("memory_clock_mhz", 1),
    "clocks.max.mem": ("memory_clock_max_mhz", 1),
    "pcie.link.gen.current": ("pcie_gen", 1),
    "pcie.link.gen.max": ("pcie_gen_max", 1),
    "pcie.link.width.current": ("pcie_width", 1),
    "pcie.link.width.max": ("pcie_width_max", 1),
    "utilization.encoder": ("encoder_pct", 1),
    "utilization.decoder": ("decoder_pct", 1),
    "fan.speed": ("fan_pct", 1),
}
#: Derived fields.
EXTRA_FIELDS = ("memory.free", "clocks_event_reasons.active")
DEFAULT_QUERY = (
    "index",
    "name",
    "memory.total",
    "memory.used",
    "utilization.gpu",
    "power.draw",
    "temperature.gpu",
)


def parse_fields(text: str) -> list[str]:
    """A ``--fields`` list, checked; ValueError names the unknown ones and the known ones."""
    fields = [f.strip() for f in text.split(",") if f.strip()]
    unknown = [f for f in fields if f not in QUERY_FIELDS and f not in EXTRA_FIELDS]
    if unknown or not fields:
        known = ", ".join([*QUERY_FIELDS, *EXTRA_FIELDS])
        raise ValueError(
            N_("unknown query field(s) {unknown}; use nvidia-smi names: {known}").format(
                unknown=", ".join(unknown) or N_("(none given)"), known=known
            )
        )
    return fields


def field_value(sample: DeviceSample, name: str) -> Any:
    """One field in nvidia-smi units (MiB, %, W, C, MHz); ``None`` when not available."""
    if name == "memory.free":
        if sample.memory_total_bytes is None or sample.memory_used_bytes is None:
            return None
        return round((sample.memory_total_bytes - sample.memory_used_bytes) / MiB)
    if name == "clocks_event_reasons.active":
        return ",".join(sample.throttle_reasons) or "none"
    attr, scale = QUERY_FIELDS[name]
    value = getattr(sample, attr)
    if value is None:
        return None
    if scale != 1:
        return round(value * scale)
    return value


def format_rows(
    samples: Sequence[DeviceSample],
    fields: Sequence[str],
    fmt: str,
    header: bool = True,
    timestamp: str | None = None,
) -> str:
    """CSV (nvidia-smi style, ``[N/A]`` for missing) or JSON lines."""
    if fmt == "json":
        lines = []
        for s in samples:
            row: dict[str, Any] = {f: field_value(s, f) for f in fields}
            if timestamp:
                row = {"timestamp": timestamp, **row}
            lines.append(json.dumps(row))
        return "\n".join(lines) + ("\n" if lines else "")
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    names = (["timestamp"] if timestamp else []) + list(fields)
    if header:
        writer.writerow(names)
    for s in samples:
        values = ["[N/A]" if (v := field_value(s, f)) is None else v for f in fields]
        writer.writerow(([timestamp] if timestamp else []) + values)
    return buf.getvalue()
