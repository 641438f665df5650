#!/bin/sh
# Dispatches to one of the three programs in the image. The program is chosen by the name this
# script was called by (seglift, seglift-worker, seglift-watcher: symlinks) or, when called as
# seglift, by a first argument naming the worker or watcher, so `docker run IMAGE seglift-worker`
# and Kubernetes `args: [seglift-worker, ...]` work without overriding the entrypoint.
set -eu

program=$(basename "$0")
if [ "$program" = seglift ]; then
  case "${1:-}" in
    seglift-worker | seglift-watcher | seglift)
      program=$1
      shift
      ;;
  esac
fi

# The programs' shebangs carry these node flags; running `node main.js` here bypasses them.
# (Not NODE_OPTIONS: it does not accept --single-threaded-gc.)
case "$program" in
  seglift-worker) exec node --max-semi-space-size=8 --single-threaded-gc --no-allocation-site-pretenuring --heap-growing-percent=50 /app/worker/dist/main.js "$@" ;;
  seglift-watcher) exec node --max-semi-space-size=8 --single-threaded-gc --no-allocation-site-pretenuring --heap-growing-percent=50 /app/watcher/dist/main.js "$@" ;;
  *) exec node --max-semi-space-size=8 --single-threaded-gc --no-allocation-site-pretenuring --heap-growing-percent=50 /app/cli/dist/main.js "$@" ;;
esac
