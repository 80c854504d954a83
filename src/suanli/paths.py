"""Where suanli keeps files of its own, by the platform's conventions (``platformdirs``: the XDG
base directories on Linux, ``~/Library/...`` on macOS, ``%LOCALAPPDATA%`` on Windows).

- config: the user's own catalog (``gpus.toml``) and measured calibrations (``calibration/``);
- cache: what can be fetched or computed again (hub configs, traced profiles, the bundled TOML
  files parsed: :mod:`suanli.catalog.toml_cache`);
- state: what a run leaves for the next one (reports, logs).

``SUANLI_CONFIG``, ``SUANLI_CACHE`` and ``SUANLI_STATE`` override each directory; on Linux the
``XDG_*_HOME`` variables are honoured as the specification says.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

APP = "suanli"


def _chosen(variable: str, default: str) -> Path:
    value = os.environ.get(variable)
    return Path(value).expanduser() if value else Path(default)


def config_dir() -> Path:
    """The user's configuration directory for suanli (``~/.config/suanli`` on Linux)."""
    import platformdirs

    return _chosen("SUANLI_CONFIG", platformdirs.user_config_dir(APP, appauthor=False))


def calibration_dir() -> Path:
    """Where ``suanli bench`` saves measured ceilings and perf/plan read them:
    ``calibration/`` in :func:`config_dir`."""
    return config_dir() / "calibration"


def local_calibration_path(gpu_id: str) -> Path:
    """Where ``suanli bench`` saves the profile of ``gpu_id`` and perf/plan look for it:
    ``<gpu_id>.toml`` in :func:`calibration_dir` (``~/.config/suanli/calibration`` on Linux,
    ``$XDG_CONFIG_HOME`` and ``SUANLI_CONFIG`` honoured). Characters a file name should not hold
    become ``-``, so an id never leaves the folder."""
    safe = re.sub(r"[^A-Za-z0-9._-]+", "-", gpu_id).strip("-") or "device"
    return calibration_dir() / f"{safe}.toml"


def cache_dir() -> Path:
    """The cache directory for suanli (``~/.cache/suanli`` on Linux)."""
    import platformdirs

    return _chosen("SUANLI_CACHE", platformdirs.user_cache_dir(APP, appauthor=False))


def state_dir() -> Path:
    """The state directory for suanli (``~/.local/state/suanli`` on Linux)."""
    import platformdirs

    return _chosen("SUANLI_STATE", platformdirs.user_state_dir(APP, appauthor=False))
