#!/usr/bin/env bash
# Install what the tests need into .venv and run every check CI runs:
# ruff (lint + format), mypy on the pure core, then pytest (GPU tests skip without a GPU).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
# torch is pinned here (a CPU build on this project's machines); the package itself asks torch>=2.1.
.venv/bin/python -m pip install -q --disable-pip-version-check -U 'pip>=25.1'
# The test tools are the `test` dependency group of pyproject.toml (PEP 735), not a user extra.
.venv/bin/python -m pip install -q --disable-pip-version-check -e . --group test 'torch==2.13.0'
.venv/bin/ruff check src tests benchmarks scripts
.venv/bin/ruff format --check src tests benchmarks scripts
.venv/bin/mypy
# The page's end-to-end test drives Debian's chromium (tests/web/test_page_e2e.py); if it cannot
# be installed here, that one test skips and the run goes on.
command -v chromium >/dev/null || (apt-get update -qq && apt-get install -y -qq chromium >/dev/null) \
  || echo "chromium could not be installed: the browser test will skip" >&2
# tests/live/test_prometheus_real.py runs Debian's prometheus and promtool; without them it skips.
command -v prometheus >/dev/null || (apt-get update -qq && apt-get install -y -qq prometheus >/dev/null) \
  || echo "prometheus could not be installed: the Prometheus tests will skip" >&2
.venv/bin/python -m pytest -q "$@"
