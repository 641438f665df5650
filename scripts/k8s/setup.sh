#!/usr/bin/env bash
# Everything the Kubernetes suite (e2e/k8s, `pnpm test:k8s`) needs on the machine, installed once
# and cached outside the repository ($SEGLIFT_K8S_CACHE, by version): fast when all is there.
#   - Debian packages: containerd, runc, CNI plugins, etcd, iptables tools, buildah, debootstrap
#   - the Kubernetes binaries (build-kube.sh: built from the Go module proxy, several minutes cold)
#   - the sandbox (pause) image and the base image given to the Dockerfile as NODE_IMAGE
#     (images.sh)
# Needs root (the cluster runs containers) and Debian 12; run as `bash scripts/k8s/setup.sh`.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/versions.sh"
start=$(date +%s)
[[ $(id -u) -eq 0 ]] || { echo "k8s setup: needs root (it installs packages and runs a kubelet)" >&2; exit 1; }

packages=(containerd runc containernetworking-plugins iptables conntrack socat etcd-server
  buildah debootstrap gcc libc6-dev openssl ca-certificates curl)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [[ ${#missing[@]} -gt 0 ]]; then
  echo "k8s setup: apt-get install ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -q >/dev/null
  apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null
fi

bash "$here/build-kube.sh"
bash "$here/images.sh" pause
bash "$here/images.sh" node-base
echo "k8s setup: ready in $(($(date +%s) - start)) s (kubernetes $K8S_VERSION, cache $K8S_CACHE)"
