#!/usr/bin/env bash
# Puts seglift, seglift-worker and seglift-watcher on PATH: symlinks to the launchers the build
# wrote (apps/<app>/dist/<program>), so every later `pnpm build` updates them. Called by
# scripts/bootstrap.sh. Into $SEGLIFT_BIN_DIR when set, else /usr/local/bin as root (or with
# sudo), else ~/.local/bin. For a host without this repository, see docs/operator-guide.md
# ("Installing").
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD

sudo=""
bin_dir=${SEGLIFT_BIN_DIR:-}
if [ -z "$bin_dir" ]; then
  if [ "$(id -u)" = 0 ]; then
    bin_dir=/usr/local/bin
  elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
    bin_dir=/usr/local/bin
    sudo=sudo
  else
    bin_dir=$HOME/.local/bin
  fi
fi
$sudo mkdir -p "$bin_dir"

for entry in cli:seglift worker:seglift-worker watcher:seglift-watcher; do
  app=${entry%%:*}
  program=${entry#*:}
  launcher=$repo/apps/$app/dist/$program
  if [ ! -x "$launcher" ]; then
    echo "link-bins: $launcher is missing: run pnpm build first" >&2
    exit 1
  fi
  $sudo ln -sfn "$launcher" "$bin_dir/$program"
done
echo "seglift, seglift-worker, seglift-watcher installed in $bin_dir (linked to $repo)"

# A directory missing from PATH, or another seglift before ours, would hide the new commands.
case ":$PATH:" in
  *":$bin_dir:"*)
    found=$(command -v seglift || true)
    if [ "$found" != "$bin_dir/seglift" ]; then
      echo "link-bins: warning: 'seglift' on PATH is $found, which comes before $bin_dir" >&2
    fi
    ;;
  *) echo "link-bins: warning: $bin_dir is not on PATH; add it (export PATH=\"$bin_dir:\$PATH\")" >&2 ;;
esac
