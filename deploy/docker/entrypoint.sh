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

case "$program" in
  seglift-worker) exec node /app/worker/dist/main.js "$@" ;;
  seglift-watcher) exec node /app/watcher/dist/main.js "$@" ;;
  *) exec node /app/cli/dist/main.js "$@" ;;
esac
