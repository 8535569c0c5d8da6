#!/usr/bin/env bash
# Install everything Newsbench needs on a fresh Debian/Ubuntu machine: uv, Python deps, Chromium.
# Idempotent: safe to run again.
#   --local-model  also the local-model extra: llama.cpp's server (prebuilt in the xllamacpp
#                  wheel) and SmolLM2-135M-Instruct (README: Agents), about 130 MB of wheels.
#                  Kept on later runs without the flag once installed.
set -euo pipefail
cd "$(dirname "$0")/.."

extras=()
if [ "${1:-}" = "--local-model" ] || { [ -x .venv/bin/python ] && .venv/bin/python -c \
    'import importlib.util as u, sys; sys.exit(u.find_spec("xllamacpp") is None)' 2>/dev/null; }; then
  extras=(--extra local-model)
fi

if ! command -v uv >/dev/null 2>&1; then
  echo "installing uv" >&2
  python3 -m pip install --quiet uv || pip install --quiet uv
fi

# The browser: Debian's Chromium and its headless shell (what headless runs launch: the same
# engine at about half the CPU) when we can install them; else Playwright's own download.
missing=""
[ -x /usr/bin/chromium ] || command -v chromium >/dev/null 2>&1 || missing=" chromium"
[ -x /usr/bin/chromium-headless-shell ] || missing="$missing chromium-headless-shell"
# The servers the scale-out deployment (and its tests) use: Redis as the celery broker,
# PostgreSQL for Dagster's instance storage. Installed only; tests start their own on loopback.
command -v redis-server >/dev/null 2>&1 || missing="$missing redis-server"
[ -x /usr/lib/postgresql/15/bin/initdb ] || command -v initdb >/dev/null 2>&1 || missing="$missing postgresql"
if [ -n "$missing" ] && command -v apt-get >/dev/null 2>&1; then
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  echo "installing from Debian:$missing" >&2
  $SUDO apt-get update -qq
  # shellcheck disable=SC2086  # one package name per word
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq $missing >/dev/null
fi

# Bytecode compiled once here: where PYTHONDONTWRITEBYTECODE is set, every process would
# otherwise compile ~600 modules from source (measured: 1.4 s of a 2.7 s `newsbench inspect`).
uv sync --frozen --quiet --compile-bytecode "${extras[@]}"
uv run --frozen python -m compileall -q newsbench_dagster >/dev/null

if [ ! -x /usr/bin/chromium ] && ! command -v chromium >/dev/null 2>&1; then
  echo "no system Chromium; installing Playwright's browser" >&2
  uv run --frozen playwright install chromium
fi
