#!/usr/bin/env bash
# Packs seglift, seglift-worker and seglift-watcher for a host without this repository (a broker
# host): out/seglift-<version>-<os>-<arch>.tgz, one directory `seglift/` holding each program with
# its production dependencies (pnpm deploy), and a package.json whose bins are the three launchers.
# On the host (same OS, CPU architecture and libc: the codecs are native modules; Node >= 20.19):
#   tar -xzf seglift-<version>-<os>-<arch>.tgz -C /opt && npm install -g /opt/seglift
# docs/operator-guide.md ("Installing") has the other ways (the image, a checkout). Packs what
# `pnpm build` built (`pnpm pack:hosts` builds first).
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-$PWD/out}
version=$(node -p "require('./apps/cli/package.json').version")
target=$(node -p "process.platform + '-' + process.arch")

for launcher in apps/cli/dist/seglift apps/worker/dist/seglift-worker apps/watcher/dist/seglift-watcher; do
  [ -x "$launcher" ] || { echo "pack: $launcher is missing: run pnpm build first" >&2; exit 1; }
done
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
root=$stage/seglift
for app in cli worker watcher; do
  # Hoisted: a plain node_modules tree that survives tar and needs no pnpm on the host.
  pnpm --filter "@seglift/$app" --config.node-linker=hoisted deploy --prod --legacy --prefer-offline \
    "$root/$app" >/dev/null
done
cat >"$root/package.json" <<JSON
{
  "name": "seglift",
  "version": "$version",
  "description": "Offline rewriter for Apache Kafka log segments: seglift, seglift-worker, seglift-watcher.",
  "type": "module",
  "engines": { "node": ">=20.19" },
  "bin": {
    "seglift": "cli/dist/seglift",
    "seglift-worker": "worker/dist/seglift-worker",
    "seglift-watcher": "watcher/dist/seglift-watcher"
  }
}
JSON
mkdir -p "$out"
tar -C "$stage" -czf "$out/seglift-$version-$target.tgz" seglift
echo "$out/seglift-$version-$target.tgz"
