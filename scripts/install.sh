#!/usr/bin/env bash
# Install everything Newsbench needs on a fresh Debian/Ubuntu machine: uv, Python deps, Chromium.
# Idempotent: safe to run again.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v uv >/dev/null 2>&1; then
  echo "installing uv" >&2
  python3 -m pip install --quiet uv || pip install --quiet uv
fi

# The browser: Debian's Chromium when we can install it; else Playwright's own download.
if [ ! -x /usr/bin/chromium ] && ! command -v chromium >/dev/null 2>&1; then
  if command -v apt-get >/dev/null 2>&1; then
    SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
    echo "installing Debian chromium" >&2
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq chromium >/dev/null
  fi
fi

uv sync --frozen --quiet

if [ ! -x /usr/bin/chromium ] && ! command -v chromium >/dev/null 2>&1; then
  echo "no system Chromium; installing Playwright's browser" >&2
  uv run --frozen playwright install chromium
fi
