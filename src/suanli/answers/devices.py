"""A GPU name as the user gives it -> its catalog record (``local-cpu``: this machine, measured)."""

from __future__ import annotations

from typing import Any

from suanli.catalog import GPU, find_gpu, load_catalog
from suanli.errors import MissingExtra
from suanli.i18n import N_


def resolve_gpu(name: str, catalog_file: str | None = None) -> tuple[GPU, dict[Any, Any] | None]:
    """The GPU record and, for the local CPU, the calibration that makes its measured peaks the
    ceilings."""
    from suanli.live.localcpu import is_local_cpu

    if is_local_cpu(name):
        try:
            from suanli.live.localcpu import local_calibration, local_cpu

            return local_cpu(), local_calibration()
        except ImportError:
            raise MissingExtra(
                N_(
                    "measuring the local CPU needs PyTorch and psutil: pip install "
                    "'suanli[torch,live]'"
                )
            ) from None
    return find_gpu(name, load_catalog(catalog_file)), None
