#!/usr/bin/env bash
# The images the suite's cluster runs, made here without any registry. Each is cached as a
# docker-archive tar under $K8S_CACHE/images (the cluster's containerd imports the tars).
#   images.sh pause                  the sandbox image: a static program that sleeps until a signal
#   images.sh node-base              Debian 12 (debootstrap) + this machine's Node and npm: the
#                                    Dockerfile's NODE_IMAGE, kept in buildah's storage
#   images.sh seglift REPO           the project's Dockerfile, built by buildah (every step but FROM),
#                                    tagged seglift:<version> as the manifests name it
#   images.sh kafka JARS             a Kafka 4 broker: the base image + this machine's JDK + JARS
#   images.sh redis                  deploy/base's Redis: the base image + this machine's Debian
#                                    redis-server (deploy/base names redis:7.4-bookworm; the
#                                    suite's overlay maps it to localhost/seglift-redis:test)
# Prints the tar's path (seglift, kafka, redis, pause).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/versions.sh"
images="$K8S_CACHE/images"
mkdir -p "$images"
node_version=$(node --version)
NODE_BASE="localhost/seglift-node-base:$node_version"

# buildah's storage can lose an image the tar cache still has (or the reverse): the tar is the
# record, buildah's copy is recreated from it.
has_image() { buildah inspect --type image "$1" >/dev/null 2>&1; }
archive() { # image tar-name
  local tar="$images/$2.tar"
  rm -f "$tar.tmp"
  buildah push -q "$1" "docker-archive:$tar.tmp:$1" >/dev/null
  mv "$tar.tmp" "$tar"
}

case "$1" in
pause)
  tar="$images/pause.tar"
  [[ -s $tar ]] || {
    work=$(mktemp -d)
    trap 'rm -rf "$work"' EXIT
    cat >"$work/pause.c" <<'C'
#include <signal.h>
#include <unistd.h>
static void done(int s) { (void)s; _exit(0); }
int main(void) {
  signal(SIGTERM, done);
  signal(SIGINT, done);
  for (;;) pause();
}
C
    gcc -static -O2 -o "$work/pause" "$work/pause.c"
    c=$(buildah from scratch)
    buildah copy -q "$c" "$work/pause" /pause >/dev/null
    buildah config --entrypoint '["/pause"]' "$c"
    buildah commit -q "$c" localhost/pause:v1 >/dev/null
    buildah rm "$c" >/dev/null
    archive localhost/pause:v1 pause
  }
  echo "$tar"
  ;;
node-base)
  rootfs_tar="$images/node-base-$node_version.rootfs.tar"
  if [[ ! -s $rootfs_tar ]]; then
    work=$(mktemp -d)
    trap 'rm -rf "$work"' EXIT
    # libstdc++6: node's own dependency; ca-certificates: npm and apt over https in the build.
    debootstrap --variant=minbase --include=libstdc++6,ca-certificates bookworm "$work/root" \
      http://deb.debian.org/debian >"$work/debootstrap.log" 2>&1 ||
      { tail -20 "$work/debootstrap.log" >&2; exit 1; }
    node_bin=$(readlink -f "$(command -v node)")
    npm_dir=$(readlink -f "$(dirname "$node_bin")/../lib/node_modules/npm")
    install -m 0755 "$node_bin" "$work/root/usr/local/bin/node"
    mkdir -p "$work/root/usr/local/lib/node_modules"
    cp -a "$npm_dir" "$work/root/usr/local/lib/node_modules/npm"
    ln -s ../lib/node_modules/npm/bin/npm-cli.js "$work/root/usr/local/bin/npm"
    ln -s ../lib/node_modules/npm/bin/npx-cli.js "$work/root/usr/local/bin/npx"
    # Node's headers: node-gyp compiles the native codec modules against them (no download).
    [[ -d /usr/include/node ]] && cp -a /usr/include/node "$work/root/usr/local/include/node"
    # This machine's own certificate authorities (a proxy's, where https goes through one), so
    # the build stage's npm and pnpm reach the registry as they do here.
    if compgen -G '/usr/local/share/ca-certificates/*.crt' >/dev/null; then
      cp /usr/local/share/ca-certificates/*.crt "$work/root/usr/local/share/ca-certificates/"
      chroot "$work/root" update-ca-certificates >/dev/null 2>&1
    fi
    rm -rf "$work/root/var/cache/apt/archives"/*.deb "$work/root/var/lib/apt/lists"/*
    tar -C "$work/root" --numeric-owner -cf "$rootfs_tar.tmp" .
    mv "$rootfs_tar.tmp" "$rootfs_tar"
  fi
  if ! has_image "$NODE_BASE"; then
    c=$(buildah from scratch)
    buildah add -q "$c" "$rootfs_tar" / >/dev/null
    buildah config --env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
      --env NODE_EXTRA_CA_CERTS=/etc/ssl/certs/ca-certificates.crt --env npm_config_nodedir=/usr/local \
      --cmd node "$c"
    buildah commit -q "$c" "$NODE_BASE" >/dev/null
    buildah rm "$c" >/dev/null
  fi
  echo "$NODE_BASE"
  ;;
seglift)
  repo=$(cd "$2" && pwd)
  version=$(node -p "require('$repo/apps/cli/package.json').version")
  bash "$0" node-base >/dev/null
  # A clean context: the files git knows, as they are now (not the checkout's node_modules or
  # dist; .dockerignore then applies as under docker build).
  ctx=$(mktemp -d)
  trap 'rm -rf "$ctx"' EXIT
  (cd "$repo" && git ls-files -co --exclude-standard -z | xargs -0 cp --parents -a -t "$ctx"/)
  # --layers: every step is reused while its inputs are unchanged (the lockfile's download
  # layer, the whole build while no copied file changed), so an unchanged tree builds in
  # seconds. --network host: the build stage fetches packages (apt, npm, the pnpm store) as the
  # Dockerfile expects of `docker build`.
  buildah build -q --layers --network host --build-arg "NODE_IMAGE=$NODE_BASE" \
    --iidfile "$ctx/.iid" -f "$ctx/Dockerfile" -t "docker.io/library/seglift:$version" "$ctx" >&2
  id=$(sed 's/^sha256://' "$ctx/.iid" | cut -c1-12)
  # The layer cache is kept (untagged images), one set per source tree built: past a few builds'
  # worth it is dropped whole, so the disk holds a bounded cache (the next build is then cold).
  if (($(buildah images -q --filter dangling=true | wc -l) > 16)); then buildah rmi --prune >/dev/null 2>&1 || true; fi
  tar="$images/seglift-$version-$id.tar"
  if [[ ! -s $tar ]]; then
    rm -f "$images"/seglift-*.tar "$tar.tmp"
    buildah push -q "docker.io/library/seglift:$version" "docker-archive:$tar.tmp:docker.io/library/seglift:$version" >/dev/null
    mv "$tar.tmp" "$tar"
  fi
  echo "$tar"
  ;;
kafka)
  jars=$(cd "$2" && pwd)
  java_home=$(dirname "$(dirname "$(readlink -f "$(command -v java)")")")
  key=$( (ls -l "$jars"; echo "$java_home $NODE_BASE") | sha256sum | cut -c1-12)
  tar="$images/kafka-$key.tar"
  if [[ ! -s $tar ]]; then
    bash "$0" node-base >/dev/null
    c=$(buildah from "$NODE_BASE")
    trap 'buildah rm "$c" >/dev/null 2>&1 || true' EXIT
    m=$(buildah mount "$c")
    mkdir -p "$m/opt/java" "$m/opt/kafka/libs"
    # -L: Debian's JDK links its config files into /etc/java-17-openjdk; links to what is not
    # installed (lib/src.zip) are left out.
    cp -rL "$java_home/." "$m/opt/java/" 2>/dev/null || true
    for f in bin/java lib/server/libjvm.so lib/modules conf/security/java.security; do
      [[ -s $m/opt/java/$f ]] || { echo "images.sh: $java_home/$f was not copied" >&2; exit 1; }
    done
    cp "$jars"/*.jar "$m/opt/kafka/libs/"
    buildah umount "$c" >/dev/null
    buildah config --env JAVA_HOME=/opt/java --env PATH=/opt/java/bin:/usr/local/bin:/usr/bin:/bin \
      --user 1001:0 --workingdir /tmp "$c"
    buildah commit -q "$c" localhost/seglift-kafka:test >/dev/null
    buildah rm "$c" >/dev/null
    archive localhost/seglift-kafka:test "kafka-$key"
  fi
  echo "$tar"
  ;;
redis)
  # deploy/base's queue: Debian 12's redis-server and redis-cli (this machine's package, the one
  # the other suites run) on the base image, with the libraries `ldd` lists. No entrypoint: the
  # Deployment's args start redis-server, and its readiness probe runs sh, redis-cli and grep.
  server=$(readlink -f "$(command -v redis-server)")
  cli=$(readlink -f "$(command -v redis-cli)")
  key=$( (sha256sum "$server" "$cli"; echo "$NODE_BASE") | sha256sum | cut -c1-12)
  tar="$images/redis-$key.tar"
  if [[ ! -s $tar ]]; then
    bash "$0" node-base >/dev/null
    c=$(buildah from "$NODE_BASE")
    trap 'buildah rm "$c" >/dev/null 2>&1 || true' EXIT
    m=$(buildah mount "$c")
    # redis-server is Debian's redis-check-rdb under another name: it picks its mode by argv[0].
    install -m 0755 "$server" "$m/usr/bin/redis-server"
    install -m 0755 "$cli" "$m/usr/bin/redis-cli"
    for lib in $(ldd "$server" "$cli" | sed -n 's/.* => \(\/[^ ]*\) .*/\1/p' | sort -u); do
      [[ -e $m$lib ]] || cp -L "$lib" "$m$lib"
    done
    buildah umount "$c" >/dev/null
    buildah config --cmd '' --user 999:999 --workingdir /data "$c"
    buildah commit -q "$c" localhost/seglift-redis:test >/dev/null
    buildah rm "$c" >/dev/null
    rm -f "$images"/redis-*.tar
    archive localhost/seglift-redis:test "redis-$key"
  fi
  echo "$tar"
  ;;
*)
  echo "images.sh: unknown image $1" >&2
  exit 2
  ;;
esac
