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

# Each program's launcher (dist/<program>, generated at build from PIPELINE_NODE in
# packages/segment/src/node-flags.ts) starts node with the pipeline's environment and flags.
case "$program" in
  seglift-worker) exec /app/worker/dist/seglift-worker "$@" ;;
  seglift-watcher) exec /app/watcher/dist/seglift-watcher "$@" ;;
  *) exec /app/cli/dist/seglift "$@" ;;
esac
