"""The JSON-ready report of a cost comparison, for the CLI and the web page."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from suanli.catalog.gpu import GPU
from suanli.plan.cost.model import compare_costs


def cost_report(
    gpu: GPU | str, *, catalog: Sequence[GPU] | None = None, **kwargs: Any
) -> dict[str, Any]:
    """The JSON-ready document of :func:`compare_costs`, for the CLI to render.

    ``gpu`` is a :class:`GPU` or a name looked up in ``catalog`` (default: the bundled one).
    Keys: inputs, per_year, totals, break_even_utilisation, break_even_hours, verdict,
    assumptions. Other keyword arguments go to :func:`compare_costs`.
    """
    if isinstance(gpu, str):
        from suanli.catalog.loader import bundled_gpus
        from suanli.catalog.lookup import find_gpu

        gpu = find_gpu(gpu, list(catalog) if catalog is not None else list(bundled_gpus()))
    return compare_costs(gpu, **kwargs).as_dict()
