#!/usr/bin/env bash
# Everything the Kubernetes suite (e2e/k8s, `pnpm test:k8s`) needs on the machine, installed once
# and cached outside the repository ($SEGLIFT_K8S_CACHE, by version): fast when all is there.
#   - Debian packages: containerd, runc, CNI plugins, etcd, iptables tools, buildah, debootstrap,
#     redis-server (deploy/base's queue image is made of it: images.sh redis)
#   - the Kubernetes binaries (build-kube.sh: built from the Go module proxy, several minutes cold)
#   - the sandbox (pause) image and the base image given to the Dockerfile as NODE_IMAGE
#     (images.sh)
# Needs root (the cluster runs containers) and Debian 12; run as `bash scripts/k8s/setup.sh`.
# `--check` installs and builds nothing: it names what a run would install, exit 1 if anything.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/versions.sh"
start=$(date +%s)

packages=(containerd runc containernetworking-plugins iptables conntrack socat etcd-server
  buildah debootstrap gcc libc6-dev openssl ca-certificates curl redis-server)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done

if [[ ${1:-} == --check ]]; then
  absent=()
  [[ $(id -u) -eq 0 ]] || absent+=("root")
  [[ ${#missing[@]} -eq 0 ]] || absent+=("Debian packages: ${missing[*]}")
  for b in kube-apiserver kube-controller-manager kube-scheduler kubelet kube-proxy kubectl; do
    [[ -x $K8S_CACHE/$K8S_VERSION/bin/$b ]] || absent+=("$b $K8S_VERSION (built from the Go module proxy)")
  done
  [[ -s $K8S_CACHE/images/pause.tar ]] || absent+=("the pause image")
  compgen -G "$K8S_CACHE/images/node-base-*.rootfs.tar" >/dev/null || absent+=("the Node base image (debootstrap)")
  for a in "${absent[@]}"; do echo "k8s setup: missing: $a" >&2; done
  [[ ${#absent[@]} -eq 0 ]]
  exit
fi
[[ $(id -u) -eq 0 ]] || { echo "k8s setup: needs root (it installs packages and runs a kubelet)" >&2; exit 1; }
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
