#!/usr/bin/env bash
# Builds the Kubernetes binaries the suite's cluster runs, from the Go module proxy, into
# $SEGLIFT_K8S_CACHE/<version>/bin, once per version (a later run finds them and returns at once).
# k8s.io/kubernetes cannot be `go install`ed (its go.mod replaces the staging modules with local
# paths), so a scratch module requires it and replaces every staging module by its v0.x release.
set -euo pipefail
. "$(dirname "$0")/versions.sh"
bin="$K8S_CACHE/$K8S_VERSION/bin"
binaries=(kube-apiserver kube-controller-manager kube-scheduler kubelet kube-proxy kubectl)
missing=()
for b in "${binaries[@]}"; do [[ -x "$bin/$b" ]] || missing+=("$b"); done
[[ ${#missing[@]} -eq 0 ]] && exit 0

export PATH="/usr/local/go/bin:$PATH" CGO_ENABLED=0 GOFLAGS=-buildvcs=false
command -v go >/dev/null || { echo "build-kube: go is required (/usr/local/go)" >&2; exit 1; }
mod="$K8S_CACHE/$K8S_VERSION/module"
mkdir -p "$mod" "$bin"
staging_version="v0.${K8S_VERSION#v1.}"
# The staging modules are read from k8s.io/kubernetes's own go.mod, not listed here.
go_mod_url="https://proxy.golang.org/k8s.io/kubernetes/@v/$K8S_VERSION.mod"
staging=$(curl -fsSL "$go_mod_url" | sed -n 's#^\s*\(k8s.io/[a-z0-9-]*\) => ./staging/.*#\1#p')
[[ -n "$staging" ]] || { echo "build-kube: no staging modules read from $go_mod_url" >&2; exit 1; }
{
  echo "module seglift.local/kube"
  echo "go 1.24"
  echo "require k8s.io/kubernetes $K8S_VERSION"
  for m in $staging; do
    # The proxy does not serve the sample modules; nothing built here needs them.
    case "$m" in k8s.io/sample-*) continue ;; esac
    echo "replace $m => $m $staging_version"
  done
} >"$mod/go.mod"
cat >"$mod/tools.go" <<'GO'
//go:build tools

package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-proxy"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
	_ "k8s.io/kubernetes/cmd/kubectl"
	_ "k8s.io/kubernetes/cmd/kubelet"
)
GO
cd "$mod"
GOFLAGS="-buildvcs=false -tags=tools" go mod tidy
for b in "${missing[@]}"; do
  start=$(date +%s)
  go build -trimpath -o "$bin/$b.tmp" \
    -ldflags "-s -w -X k8s.io/component-base/version.gitVersion=$K8S_VERSION -X k8s.io/client-go/pkg/version.gitVersion=$K8S_VERSION" \
    "k8s.io/kubernetes/cmd/$b"
  mv "$bin/$b.tmp" "$bin/$b"
  echo "build-kube: $b in $(($(date +%s) - start)) s"
done
