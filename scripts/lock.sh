#!/usr/bin/env bash
# Write the test environment's locks: every package pinned, with hashes.
#
#   bash scripts/lock.sh              re-resolve after pyproject.toml's requirements changed,
#                                     keeping every pin that still fits
#   bash scripts/lock.sh --upgrade    move every package to its newest release
#
# requirements/test.lock: the package's dependencies, its `web` and `hub` extras and its `test`
# dependency group (pyproject.toml), with torch held at 2.13.0 (requirements/torch.txt).
# requirements/test-transformers4.lock: the same with transformers below 5
# (requirements/transformers4.txt), for `bash scripts/test.sh --transformers4`.
# The target is CPython 3.11 on Linux x86_64, the machine CI runs on. torch resolves to the local
# CPU build (2.13.0+cpu) found through pip's find-links folder; a PyPI torch of that version would
# be a multi-GB CUDA build. Usually run through `bash scripts/test.sh --upgrade`, which then
# installs the new lock and runs the suite, so a breaking release shows up when someone asks.
set -euo pipefail
cd "$(dirname "$0")/.."
UV=.venv/bin/uv
if [ ! -x "$UV" ]; then
  echo "scripts/lock.sh: .venv has no uv; run 'bash scripts/test.sh' once first" >&2
  exit 2
fi
upgrade=()
case "${1:-}" in
  "") ;;
  --upgrade) upgrade+=(--upgrade) ;;
  *)
    echo "scripts/lock.sh: unknown option '$1'; use --upgrade or nothing" >&2
    exit 2
    ;;
esac
find_links=()
for folder in ${PIP_FIND_LINKS:-} $(.venv/bin/python -m pip config get global.find-links 2>/dev/null || true); do
  [ -d "$folder" ] && find_links+=(--find-links "$folder")
done

# lock OUTPUT CONSTRAINTS...: resolve pyproject.toml under the constraint files into OUTPUT.
lock() {
  local output=$1
  shift
  local constraints=()
  for file in "$@"; do
    constraints+=(--constraint "$file")
  done
  # uv keeps the pins of an existing output file unless told to upgrade: start from it.
  if [ -f "$output" ]; then cp "$output" "$output.new"; fi
  "$UV" pip compile pyproject.toml --group test --extra web --extra hub \
    "${constraints[@]}" "${find_links[@]}" \
    --python-version 3.11 --python-platform x86_64-manylinux_2_28 \
    --generate-hashes --no-header --quiet "${upgrade[@]}" --output-file "$output.new"
  {
    echo "# A locked test environment: written by 'bash scripts/lock.sh' (see scripts/test.sh),"
    echo "# installed by scripts/test.sh with --require-hashes --no-deps. Do not edit by hand."
    echo "# Target: CPython 3.11, Linux x86_64; torch is the CPU build 2.13.0+cpu."
    cat "$output.new"
  } >"$output"
  rm "$output.new"
  echo "$output: $(grep -c '^[A-Za-z0-9]' "$output") packages"
}

lock requirements/test.lock requirements/torch.txt
lock requirements/test-transformers4.lock requirements/torch.txt requirements/transformers4.txt
