#!/usr/bin/env bash
# Install the locked test environment into .venv and run every check CI runs:
# ruff (lint + format), mypy over all of src/, then pytest on two workers (GPU tests skip
# without a GPU).
#
#   bash scripts/test.sh                  the locked versions (requirements/test.lock), the suite
#   bash scripts/test.sh --upgrade        move the locks to the newest releases first
#                                         (scripts/lock.sh), then the suite on the new lock
#   bash scripts/test.sh --transformers4  the suite on transformers 4.x instead
#                                         (requirements/test-transformers4.lock, .venv-transformers4):
#                                         the tests that compare with transformers pass on both
#   bash scripts/test.sh [MODE] -- ARGS   pass ARGS to pytest (e.g. -- tests/models -x)
#
# A lock pins every package of the test environment, with hashes, for this project's machines
# (CPython 3.11 on Linux x86_64; torch is the local CPU build 2.13.0+cpu). The package's own
# requirements in pyproject.toml stay ranges: only the test environment is locked.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
LOCK=requirements/test.lock
VENV=.venv

mode=
case "${1:-}" in
  --upgrade | --transformers4)
    mode=$1
    shift
    ;;
esac
if [ "${1:-}" = "--" ]; then
  shift
fi
if [ "$mode" = --transformers4 ]; then
  LOCK=requirements/test-transformers4.lock
  VENV=.venv-transformers4
fi

# pip reads the machine's extra package folders; its notes about the ones that lack a package
# are noise here.
quiet_pip() {
  "$VENV/bin/python" -m pip "$@" --disable-pip-version-check 2> >(grep -v "is ignored: it is neither" >&2)
}

# Make the venv hold exactly the lock: one built from another lock (or by hand) is made anew, so
# no package left from an earlier install can hide a missing pin.
install_locked() {
  local stamp
  stamp=$(sha256sum "$LOCK" | cut -d' ' -f1)
  if [ -x "$VENV/bin/python" ] && [ "$(cat "$VENV/.suanli-lock" 2>/dev/null)" = "$stamp" ]; then
    return
  fi
  rm -rf "$VENV"
  "$PY" -m venv "$VENV"
  # uv first, from the lock's own pin and hashes; it then installs the whole lock in seconds
  # where pip takes minutes. Either way: --require-hashes (every file is the one locked), and
  # nothing but the lock (--no-deps into a new venv). --compile-bytecode, as pip does: without
  # it every test subprocess that imports torch paid for compiling it (a run took 6 CPU-minutes
  # more).
  local uv_pin find_links=()
  uv_pin=$(mktemp)
  awk '/^uv==/{take=1} take{print} take && !/\\$/{exit}' "$LOCK" >"$uv_pin"
  for folder in ${PIP_FIND_LINKS:-} $("$VENV/bin/python" -m pip config get global.find-links 2>/dev/null || true); do
    [ -d "$folder" ] && find_links+=(--find-links "$folder")
  done
  if [ -s "$uv_pin" ] && quiet_pip install -q --require-hashes --no-deps -r "$uv_pin" \
    && "$VENV/bin/uv" pip install -q --python "$VENV/bin/python" --require-hashes --no-deps \
      --compile-bytecode \
      "${find_links[@]}" -r "$LOCK"; then
    :
  else
    echo "scripts/test.sh: uv could not install the lock; installing it with pip" >&2
    quiet_pip install -q --require-hashes --no-deps -r "$LOCK"
  fi
  rm -f "$uv_pin"
  # The project itself, editable, built by the locked setuptools (no isolated build environment).
  quiet_pip install -q --no-deps --no-build-isolation -e .
  quiet_pip check
  echo "$stamp" >"$VENV/.suanli-lock"
}

if [ "$mode" = --upgrade ]; then
  install_locked # uv is in the lock: the tool that writes the locks is pinned as well
  bash scripts/lock.sh --upgrade
fi
install_locked

if [ "$mode" != --transformers4 ]; then
  "$VENV/bin/ruff" check src tests benchmarks scripts
  "$VENV/bin/ruff" format --check src tests benchmarks scripts
  "$VENV/bin/mypy"
fi
# The page's end-to-end test drives Debian's chromium (tests/web/test_page_e2e.py); if it cannot
# be installed here, that one test skips and the run goes on.
command -v chromium >/dev/null || (apt-get update -qq && apt-get install -y -qq chromium >/dev/null) \
  || echo "chromium could not be installed: the browser test will skip" >&2
# tests/hardening/test_emit_hostile.py checks the emitted job scripts with Debian's shellcheck.
command -v shellcheck >/dev/null || (apt-get update -qq && apt-get install -y -qq shellcheck >/dev/null) \
  || echo "shellcheck could not be installed: the emitted scripts' lint will skip" >&2
# tests/live/test_prometheus_real.py runs Debian's prometheus and promtool; without them it skips.
command -v prometheus >/dev/null || (apt-get update -qq && apt-get install -y -qq prometheus >/dev/null) \
  || echo "prometheus could not be installed: the Prometheus tests will skip" >&2
"$VENV/bin/python" -m pytest -q -n 2 --durations=20 "$@"
