"""What the scheduler emitters share (:mod:`suanli.plan.emit` for training,
:mod:`suanli.plan.emit_serve` for serving): Kubernetes names and resources, and block YAML."""

from __future__ import annotations

import json
import re
from typing import Any

#: The extended resource each vendor's Kubernetes device plugin advertises.
K8S_GPU_RESOURCE = {"nvidia": "nvidia.com/gpu", "amd": "amd.com/gpu", "intel": "habana.ai/gaudi"}


def dns_label(text: str) -> str:
    """``text`` as a DNS-1123 label of at most 52 characters (room for an Indexed Job's index
    suffix and Kubernetes' generated pod names)."""
    label = re.sub(r"[^a-z0-9-]+", "-", text.lower()).strip("-")
    return label[:52].rstrip("-") or "suanli-job"


def _scalar(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return str(value)
    return json.dumps(str(value))  # a double-quoted YAML scalar is a JSON string


def to_yaml(value: Any, indent: int = 0) -> list[str]:
    """``value`` (dicts, lists, scalars) as block YAML lines; strings with newlines as ``|``."""
    pad = " " * indent
    lines: list[str] = []
    items = value.items() if isinstance(value, dict) else [(None, v) for v in value]
    for key, item in items:
        lead = f"{pad}{key}:" if key is not None else f"{pad}-"
        if isinstance(item, str) and "\n" in item:
            lines.append(f"{lead} |")
            lines += [f"{pad}  {line}" for line in item.rstrip("\n").split("\n")]
        elif isinstance(item, (dict, list)) and item:
            nested = to_yaml(item, indent + 2)
            if key is None:  # "- first: ..." then the rest aligned under it
                lines.append(f"{pad}- {nested[0].lstrip()}")
                lines += nested[1:]
            else:
                lines.append(lead)
                lines += nested
        elif isinstance(item, (dict, list)):
            lines.append(f"{lead} {'{}' if isinstance(item, dict) else '[]'}")
        else:
            lines.append(f"{lead} {_scalar(item)}")
    return lines
