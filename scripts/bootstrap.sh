#!/usr/bin/env bash
# Installs what seglift needs on a fresh machine (Debian, Node >= 20.19, root or sudo), builds it
# and puts seglift, seglift-worker and seglift-watcher on PATH (scripts/link-bins.sh):
#   bash scripts/bootstrap.sh            pnpm 10, redis-server, the workspace's packages, the build
#   bash scripts/bootstrap.sh --tests    that, and everything every test needs (the list below and
#                                        scripts/k8s/setup.sh): the README's test command, and
#                                        .ci/run's, which only sets CI=true
#   bash scripts/bootstrap.sh --tests --check
#                                        installs and builds nothing: lists what is missing, exit 1
#                                        if anything is (0: a run would install nothing)
# What is there already is not installed again, so a second run only re-checks and rebuilds
# (seconds). Any failed install stops the script: with CI=true a missing requirement is a test
# failure that names it (packages/testkit/src/requirements.ts), never a skip; this says it sooner.
set -euo pipefail
cd "$(dirname "$0")/.."
export TURBO_TELEMETRY_DISABLED=1

tests=0
check=0
for arg in "$@"; do
  case $arg in
    --tests) tests=1 ;;
    --check) check=1 ;;
    -h | --help)
      sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'
      exit 0
      ;;
    *)
      echo "bootstrap: unknown argument '$arg' (use --tests, --check or --help)" >&2
      exit 2
      ;;
  esac
done

started=$SECONDS
SUDO=""
if [ "$(id -u)" != "0" ] && command -v sudo >/dev/null 2>&1; then SUDO="sudo"; fi
missing=()
say() { echo "bootstrap: $*"; }
# In --check mode what is missing is collected; otherwise it is installed (or the script stops).
need() { missing+=("$1"); }

# Debian packages. For the demo: redis-server (the queue, lock and worker tests and the watcher).
# For the tests besides: kafka-python with its codecs (cross-implementation checks), the reference
# zstd and lz4 command-line tools (a second implementation of those codecs), tmux (the progress bar
# in a real terminal), python3-venv (the cluster suite's librdkafka client), iproute2 and time
# (pnpm bench's scale and mirror cases: network namespaces, /usr/bin/time's peak RSS).
DEBS=(redis-server)
if [ "$tests" = 1 ]; then
  DEBS+=(python3-kafka python3-snappy python3-lz4 python3-zstandard python3-xxhash zstd lz4 tmux python3-venv iproute2 time)
  # The Kafka oracle and cluster suites (e2e/kafka) run real Kafka 3.9 and 4.x brokers: a JDK 17+
  # and Maven (which fetches the Kafka jars on the suite's first run, then caches them).
  if ! command -v javac >/dev/null 2>&1 || ! command -v mvn >/dev/null 2>&1; then
    DEBS+=(openjdk-17-jdk-headless maven)
  fi
fi
absent=()
for p in "${DEBS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || absent+=("$p")
done
if [ "${#absent[@]}" -gt 0 ]; then
  if [ "$check" = 1 ]; then
    need "Debian packages: ${absent[*]}"
  elif command -v apt-get >/dev/null 2>&1; then
    say "installing ${absent[*]} (apt)"
    $SUDO apt-get update -qq >/dev/null
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${absent[@]}" >/dev/null
  else
    echo "bootstrap: apt-get is not available: install ${absent[*]} by hand" >&2
    exit 1
  fi
fi

if ! command -v pnpm >/dev/null 2>&1 || ! pnpm --version | grep -q '^10\.'; then
  if [ "$check" = 1 ]; then
    need "pnpm 10"
  else
    say "installing pnpm 10 (npm install -g)"
    npm install -g pnpm@10 >/dev/null
  fi
fi

if [ "$tests" = 1 ]; then
  # kubectl renders deploy/ (kubectl kustomize) and go builds the cluster suite's franz-go reader
  # (modules from the Go module proxy; go.mod/go.sum are committed). Both come with this kind of
  # machine; Debian's kubernetes-client (1.20) and golang-go are too old, npm has no real kubectl.
  if ! kubectl version --client >/dev/null 2>&1; then
    if [ "$check" = 1 ]; then need "kubectl"; else
      echo "bootstrap: kubectl is missing: deploy/manifests.test.ts renders the manifests with 'kubectl kustomize' (install it from kubernetes.io)" >&2
      exit 1
    fi
  fi
  if ! go version >/dev/null 2>&1; then
    if [ "$check" = 1 ]; then need "go"; else
      echo "bootstrap: go is missing: e2e/kafka/cluster.test.ts builds a franz-go reader (Go 1.26+ from go.dev/dl; Debian's golang-go is too old)" >&2
      exit 1
    fi
  fi

  # The cluster suite reads with librdkafka through the confluent-kafka package from PyPI (it
  # bundles librdkafka), in a venv of Debian's python3 beside the suite.
  venv=e2e/kafka/clients/.venv
  if ! "$venv/bin/python3" -c 'import confluent_kafka' >/dev/null 2>&1; then
    if [ "$check" = 1 ]; then need "confluent-kafka in $venv"; else
      say "pip install confluent-kafka into $venv"
      /usr/bin/python3 -m venv "$venv"
      "$venv/bin/pip" install -q confluent-kafka==2.16.1
    fi
  fi

  # faults.test.ts runs the built CLI as user nobody (real EACCES): nobody must be able to reach
  # the checkout, which a 0700 parent (mktemp -d) forbids. Search permission only, said aloud.
  if [ "$(id -u)" = 0 ]; then
    dir=$(pwd -P)
    while :; do
      if [ -z "$(find "$dir" -maxdepth 0 -perm -o=x)" ]; then
        if [ "$check" = 1 ]; then need "o+x on $dir (user nobody must reach the checkout)"; else
          say "chmod o+x $dir (so that user nobody can reach the checkout)"
          chmod o+x "$dir"
        fi
      fi
      [ "$dir" = / ] && break
      dir=$(dirname "$dir")
    done
  fi

  # The Kubernetes suite's own installs (a local cluster and its images, cached between runs).
  if [ -f scripts/k8s/setup.sh ]; then
    if [ "$check" = 1 ]; then
      # Only a setup.sh that has a --check of its own is asked (never run by a --check).
      if grep -q -e '--check' scripts/k8s/setup.sh; then
        bash scripts/k8s/setup.sh --check || need "what scripts/k8s/setup.sh --check names"
      else
        say "scripts/k8s/setup.sh not checked (it has no --check)"
      fi
    else
      bash scripts/k8s/setup.sh
    fi
  fi
fi

if [ "$check" = 1 ]; then
  if [ "${#missing[@]}" -gt 0 ]; then
    for m in "${missing[@]}"; do echo "bootstrap: missing: $m" >&2; done
    exit 1
  fi
  say "nothing to install"
  exit 0
fi

pnpm install --frozen-lockfile
pnpm build
bash scripts/link-bins.sh
say "done in $((SECONDS - started)) s"
