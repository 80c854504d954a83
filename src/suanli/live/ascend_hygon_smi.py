"""Huawei Ascend NPUs through ``npu-smi`` and Hygon DCUs through ``hy-smi``, read with the runner
and base class of :mod:`suanli.live.smi` (no shell, a time limit, an output cap; anything a tool
does not report stays ``None``).

Formats:

- ``npu-smi info`` (Huawei Ascend, the "npu-smi command reference" of the Ascend HDK): a table
  whose header line reads ``npu-smi 24.1.rc1  Version: 24.1.rc1`` (the driver version), then two
  rows per NPU: ``| NPU Name | Health | Power(W) Temp(C) Hugepages-Usage(page) |`` and
  ``| Chip | Bus-Id | AICore(%) Memory-Usage(MB) HBM-Usage(MB) |``; ``NA`` where a card does not
  report a value. Atlas 300I (310P) cards list several chips under one NPU and no HBM column.
- ``hy-smi`` (Hygon DCU, the hyhal/DTK tool derived from rocm-smi): with
  ``--showproductname --showmeminfo vram --showuse --showpower --showtemp --json`` one object per
  ``cardN`` like rocm-smi's, keyed ``Card Series``, ``HCU use (%)`` (``DCU use (%)`` on older
  releases), ``Average Graphics Package Power (W)``, ``Temperature (Sensor junction) (C)``,
  ``vram Total Memory (MiB)`` / ``vram Total Used Memory (MiB)`` (``VRAM Total Memory (B)`` on
  older releases); some releases drop commas between fields or print text around the JSON. The
  plain ``hy-smi`` table (``HCU  Temp  AvgPwr  Perf  PwrCap  VRAM%  HCU%  Mode``) is the fallback.
"""

from __future__ import annotations

import contextlib
import json
import re

from suanli.live.samples import NA, DeviceSample
from suanli.live.smi import ROCM_SMI_QUERY, SmiTableProvider, ToolError, run_tool

# --- Huawei Ascend (npu-smi) --------------------------------------------------------------------

_NPU_SMI_VERSION_RE = re.compile(r"npu-smi\s+\S+\s+Version:\s*(\S+)")
_PAIR_RE = re.compile(r"(\d+(?:\.\d+)?)\s*/\s*(\d+(?:\.\d+)?)")
_NUMBER_RE = re.compile(r"-?\d+(?:\.\d+)?")


def _cells(line: str) -> list[str]:
    """The cells of a ``| a | b | c |`` table row (empty when the line is not one)."""
    line = line.strip()
    if not line.startswith("|") or not line.endswith("|"):
        return []
    return [c.strip() for c in line[1:-1].split("|")]


def _number(text: str) -> float | None:
    match = _NUMBER_RE.search(text)
    return float(match.group()) if match else NA


def _mb(value: str) -> int:
    return int(float(value) * 2**20)


def parse_npu_smi_info(text: str) -> tuple[list[DeviceSample], str | None]:
    """The NPUs (one sample per chip) and the driver version from plain ``npu-smi info``.

    The NPU row gives name, power and temperature; the chip row under it gives AI Core
    utilisation and memory (HBM when the card has it, else the DDR Memory-Usage column). A card
    with several chips reports power once, on its first chip. The process table is ignored.
    """
    version = _NPU_SMI_VERSION_RE.search(text)
    driver = version.group(1) if version else NA
    samples: list[DeviceSample] = []
    npu: tuple[str, float | None, float | None] | None = None
    first_chip = False
    for line in text.splitlines():
        if "Process id" in line or "Process name" in line:
            break  # the process table follows the devices
        cells = _cells(line)
        if len(cells) != 3 or cells[0].startswith(("NPU", "Chip")):
            continue
        head = cells[0].split()
        if len(head) >= 2 and head[0].isdigit() and not head[1].isdigit():
            name = " ".join(head[1:])
            fields = cells[2].split()
            power = _number(fields[0]) if fields else NA
            temp = _number(fields[1]) if len(fields) > 1 else NA
            npu = (name if name.lower().startswith("ascend") else f"Ascend {name}", power, temp)
            first_chip = True
            continue
        if npu is None or not head or not all(h.isdigit() for h in head):
            continue
        metrics = cells[2]
        util = _number(metrics.split()[0]) if metrics.split() else NA
        pairs = _PAIR_RE.findall(metrics)
        memory = pairs[1] if len(pairs) > 1 and float(pairs[1][1]) > 0 else None
        if memory is None and pairs and float(pairs[0][1]) > 0:
            memory = pairs[0]
        name, power, temp = npu
        samples.append(
            DeviceSample(
                index=len(samples),
                name=name,
                vendor="ascend",
                memory_total_bytes=_mb(memory[1]) if memory else NA,
                memory_used_bytes=_mb(memory[0]) if memory else NA,
                utilization_pct=util,
                temperature_c=temp,
                power_w=power if first_chip else NA,
            )
        )
        first_chip = False
    return samples, driver


class NpuSmiProvider(SmiTableProvider):
    """Huawei Ascend NPUs through ``npu-smi info``: name, HBM, AI Core utilisation, power,
    temperature and the driver version."""

    name = "npu-smi"
    tool = "npu-smi"
    vendor_label = "NPU"

    def _parse(self, tool: str) -> tuple[list[DeviceSample], str | None]:
        return parse_npu_smi_info(run_tool([tool, "info"]))


# --- Hygon DCU (hy-smi) -------------------------------------------------------------------------

HY_SMI_QUERY = ROCM_SMI_QUERY

#: A value that directly follows another without the comma (``"91.0""Average ...": ...``).
_MISSING_COMMA_RE = re.compile(r'(?<=[^\s{,:\[\\])"(\s*)"(?=[^"]+"\s*:)')


def _hy_json(text: str) -> dict[str, object]:
    """The JSON object in hy-smi's output, tolerating text around it and missing commas."""
    start, end = text.find("{"), text.rfind("}")
    if start < 0 or end <= start:
        return {}
    body = text[start : end + 1]
    for candidate in (body, _MISSING_COMMA_RE.sub('","', body)):
        try:
            data = json.loads(candidate)
        except ValueError:
            continue
        return data if isinstance(data, dict) else {}
    return {}


def _first(card: dict[str, object], keys: tuple[str, ...]) -> float | None:
    for key in keys:
        if key in card:
            value = _number(str(card[key]))
            if value is not None:
                return value
    return NA


def parse_hy_smi_json(text: str) -> list[DeviceSample]:
    """DCUs from ``hy-smi <HY_SMI_QUERY>``: one object per ``cardN``."""
    data = _hy_json(text)
    cards = sorted(
        ((k, v) for k, v in data.items() if k.lower().startswith("card") and isinstance(v, dict)),
        key=lambda kv: int(kv[0][4:]) if kv[0][4:].isdigit() else 0,
    )
    out = []
    for i, (_, card) in enumerate(cards):
        name = next(
            (str(card[k]).strip() for k in ("Card Series", "Card series") if card.get(k)), ""
        )
        total_mib = _first(card, ("vram Total Memory (MiB)", "VRAM Total Memory (MiB)"))
        used_mib = _first(card, ("vram Total Used Memory (MiB)", "VRAM Total Used Memory (MiB)"))
        total_b = _first(card, ("VRAM Total Memory (B)", "vram Total Memory (B)"))
        used_b = _first(card, ("VRAM Total Used Memory (B)", "vram Total Used Memory (B)"))
        total = int(total_mib * 2**20) if total_mib is not None else total_b
        used = int(used_mib * 2**20) if used_mib is not None else used_b
        out.append(
            DeviceSample(
                index=i,
                name=name if name and name.upper() != "N/A" else "Hygon DCU",
                vendor="hygon",
                memory_total_bytes=int(total) if total is not None else NA,
                memory_used_bytes=int(used) if used is not None else NA,
                utilization_pct=_first(card, ("HCU use (%)", "DCU use (%)", "GPU use (%)")),
                power_w=_first(
                    card,
                    (
                        "Average Graphics Package Power (W)",
                        "Current Socket Graphics Package Power (W)",
                    ),
                ),
                temperature_c=_first(
                    card,
                    ("Temperature (Sensor junction) (C)", "Temperature (Sensor edge) (C)"),
                ),
            )
        )
    return out


def parse_hy_smi_table(text: str) -> list[DeviceSample]:
    """DCUs from the plain ``hy-smi`` table (no names or memory sizes there)."""
    header: list[str] = []
    out: list[DeviceSample] = []
    for line in text.splitlines():
        words = line.split()
        if not words:
            continue
        if words[0] in ("HCU", "DCU", "GPU") and "Temp" in words:
            header = words
            continue
        if not header or not words[0].isdigit() or len(words) < len(header):
            continue
        row = dict(zip(header, words, strict=False))
        util = row.get("HCU%") or row.get("DCU%") or row.get("GPU%") or ""
        out.append(
            DeviceSample(
                index=len(out),
                name="Hygon DCU",
                vendor="hygon",
                utilization_pct=_number(util) if util else NA,
                temperature_c=_number(row.get("Temp", "")) if row.get("Temp") else NA,
                power_w=_number(row.get("AvgPwr", "")) if row.get("AvgPwr") else NA,
            )
        )
    return out


_HY_DRIVER_RE = re.compile(r"Driver Version\s*:\s*(\S+)")


class HySmiProvider(SmiTableProvider):
    """Hygon DCUs through ``hy-smi``: the JSON query (name, VRAM, utilisation, power,
    temperature), else the plain table (utilisation, power, temperature)."""

    name = "hy-smi"
    tool = "hy-smi"
    vendor_label = "DCU"

    def _parse(self, tool: str) -> tuple[list[DeviceSample], str | None]:
        samples: list[DeviceSample] = []
        with contextlib.suppress(ToolError):
            samples = parse_hy_smi_json(run_tool([tool, *HY_SMI_QUERY]))
        if not samples:
            samples = parse_hy_smi_table(run_tool([tool]))
        driver = self._driver_version
        if driver is None:
            with contextlib.suppress(ToolError):
                match = _HY_DRIVER_RE.search(run_tool([tool, "--showdriverversion"]))
                driver = match.group(1) if match else NA
        return samples, driver
