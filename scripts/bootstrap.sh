#!/usr/bin/env bash
# Installs everything seglift needs on a fresh machine (Debian, Node >= 20.19, root or sudo):
# pnpm 10, redis-server (for the queue tests), the workspace's packages, builds them, and puts
# the commands seglift, seglift-worker and seglift-watcher on PATH (scripts/link-bins.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
export TURBO_TELEMETRY_DISABLED=1
SUDO=""
if [ "$(id -u)" != "0" ] && command -v sudo >/dev/null 2>&1; then SUDO="sudo"; fi

if ! command -v pnpm >/dev/null 2>&1 || ! pnpm --version | grep -q '^10\.'; then
  npm install -g pnpm@10 >/dev/null
fi
if ! command -v redis-server >/dev/null 2>&1; then
  if command -v apt-get >/dev/null 2>&1; then
    $SUDO apt-get update -qq >/dev/null
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq redis-server >/dev/null
  else
    echo "bootstrap: redis-server is missing and apt-get is not available; queue tests need it" >&2
  fi
fi
pnpm install --frozen-lockfile
pnpm build
bash scripts/link-bins.sh
