#!/usr/bin/env bash
# A single-node Kubernetes for the suite (e2e/k8s): etcd, kube-apiserver, kube-controller-manager,
# kube-scheduler, containerd and a kubelet, every file of it under one run directory, no registry
# (images are imported from tars). Needs `setup.sh` to have run.
#   cluster.sh up [DIR]     starts it (tearing down first what a previous run left in DIR, or in
#                           the run dir of a cluster still up on this machine);
#                           prints the kubeconfig's path once the node is Ready
#   cluster.sh down [DIR]   stops it and removes everything it made, in DIR and outside it:
#                           mounts, network namespaces, the bridge, iptables chains, cgroups,
#                           /run/containerd, kubelet paths; safe to run twice or after a crash
#   cluster.sh import DIR TAR   imports an image archive into the node's containerd
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/versions.sh"
bin="$K8S_CACHE/$K8S_VERSION/bin"
cmd=${1:?usage: cluster.sh up|down|import [DIR]}
DIR=${2:-${SEGLIFT_K8S_RUN:-/var/tmp/seglift-k8s}}
NODE=seglift-node
ETCD_PORT=12379
API_PORT=16443
BRIDGE=seglift0
POD_CIDR=10.244.0.0/16
SOCK="$DIR/containerd/containerd.sock"
# The run directory of the cluster up on this machine. One cluster at a time: every run uses the
# same bridge, pod addresses and ports, so a run killed before its `down` (a suite interrupted)
# would share its pods' addresses with the next cluster's (two veths with one IP on the bridge).
CURRENT=/run/seglift-k8s-cluster
CTR=(ctr --address "$SOCK" -n k8s.io)

log() { echo "k8s cluster: $*" >&2; }

start_daemon() { # name command...
  local name=$1
  shift
  setsid "$@" >"$DIR/logs/$name.log" 2>&1 </dev/null &
  echo $! >"$DIR/pids/$name"
}

wait_for() { # seconds what command...
  local until=$((SECONDS + $1)) what=$2
  shift 2
  until "$@" >/dev/null 2>&1; do
    if ((SECONDS > until)); then
      log "timed out waiting for $what"
      for f in "$DIR"/logs/*.log; do echo "--- $f" >&2; tail -15 "$f" >&2; done
      return 1
    fi
    sleep 0.5
  done
}

down() {
  [[ -d $DIR ]] || return 0
  # Best effort, every step: one that finds nothing to remove must not stop the others.
  set +e +o pipefail
  # The kubelet first (so it restarts nothing), then every container, then the rest.
  stop_pid kubelet
  if [[ -S $SOCK ]]; then
    for t in $("${CTR[@]}" tasks ls -q 2>/dev/null); do "${CTR[@]}" tasks kill -s SIGKILL "$t" >/dev/null 2>&1 || true; done
    sleep 1
    for t in $("${CTR[@]}" tasks ls -q 2>/dev/null); do "${CTR[@]}" tasks delete -f "$t" >/dev/null 2>&1 || true; done
  fi
  for p in kube-scheduler kube-controller-manager kube-apiserver containerd etcd; do stop_pid "$p"; done
  # Shims outlive containerd: those of this run's containerd are found by its socket.
  for d in /proc/[0-9]*; do
    if { tr '\0' ' ' <"$d/cmdline"; } 2>/dev/null | grep -q -- "-address $SOCK"; then kill -9 "${d#/proc/}" 2>/dev/null || true; fi
  done
  # Mounts under the run dir (volumes, rootfs, shm), deepest first.
  grep -o " $DIR/[^ ]*" /proc/self/mountinfo | sort -r | uniq | while read -r m; do umount -l "$m" 2>/dev/null || true; done
  # Network namespaces the CNI made for this run's pods (recorded at up: those not there before).
  if [[ -f $DIR/state/netns-before ]]; then
    for ns in /var/run/netns/cni-*; do
      [[ -e $ns ]] || continue
      grep -qxF "$ns" "$DIR/state/netns-before" && continue
      umount -l "$ns" 2>/dev/null || true
      rm -f "$ns"
    done
  fi
  ip link del "$BRIDGE" 2>/dev/null || true
  # Chains the kubelet makes (KUBE-*): none exist on this machine otherwise.
  for ipt in iptables ip6tables; do
    command -v $ipt >/dev/null || continue
    for table in filter nat mangle; do
      $ipt -t $table -S 2>/dev/null | grep -E '^-A [A-Z]+ .*-j (KUBE|CNI)-' | sed 's/^-A/-D/' |
        while read -r rule; do eval "$ipt -t $table $rule" 2>/dev/null || true; done
      for chain in $($ipt -t $table -S 2>/dev/null | sed -n 's/^-N \(\(KUBE\|CNI\)-[^ ]*\)$/\1/p'); do
        $ipt -t $table -F "$chain" 2>/dev/null || true
      done
      for chain in $($ipt -t $table -S 2>/dev/null | sed -n 's/^-N \(\(KUBE\|CNI\)-[^ ]*\)$/\1/p'); do
        $ipt -t $table -X "$chain" 2>/dev/null || true
      done
    done
  done
  # The pods' cgroups (cgroup v1: one tree per controller), deepest first.
  for c in /sys/fs/cgroup/*/kubepods /sys/fs/cgroup/kubepods; do
    [[ -d $c ]] && find "$c" -depth -type d -exec rmdir {} \; 2>/dev/null || true
  done
  # Paths outside the run dir that the kubelet and containerd use whatever their config says;
  # removed only where this run made them.
  if [[ -f $DIR/state/made ]]; then
    while read -r p; do
      [[ -e $p ]] || continue
      grep -o " $p[^ ]*" /proc/self/mountinfo | sort -r | uniq | while read -r m; do umount -l "$m" 2>/dev/null || true; done
      rm -rf "$p"
    done <"$DIR/state/made"
  fi
  # The kubelet's links to this run's container logs, where /var/log/containers was there before.
  [[ -d /var/log/containers ]] && find /var/log/containers -lname "$DIR/*" -delete 2>/dev/null || true
  [[ $(cat "$CURRENT" 2>/dev/null) == "$DIR" ]] && rm -f "$CURRENT"
  rm -rf "$DIR"
  set -e -o pipefail
}

stop_pid() {
  local f="$DIR/pids/$1"
  [[ -f $f ]] || return 0
  local pid
  pid=$(cat "$f")
  # Started by setsid: the pid leads its own process group.
  kill -TERM -- "-$pid" 2>/dev/null || kill -TERM "$pid" 2>/dev/null || true
  for _ in $(seq 1 40); do kill -0 "$pid" 2>/dev/null || break; sleep 0.25; done
  kill -KILL -- "-$pid" 2>/dev/null || true
  rm -f "$f"
}

certs() {
  local p="$DIR/pki" ip=$1
  openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=seglift-k8s-ca \
    -keyout "$p/ca.key" -out "$p/ca.crt" 2>/dev/null
  sign() { # name subject sans
    openssl req -newkey rsa:2048 -nodes -subj "$2" -keyout "$p/$1.key" -out "$p/$1.csr" 2>/dev/null
    printf '%s\n' "${3:+subjectAltName=$3}" "extendedKeyUsage=serverAuth,clientAuth" >"$p/$1.ext"
    openssl x509 -req -in "$p/$1.csr" -CA "$p/ca.crt" -CAkey "$p/ca.key" -CAcreateserial -days 2 \
      -extfile "$p/$1.ext" -out "$p/$1.crt" 2>/dev/null
  }
  sign apiserver /CN=kube-apiserver "IP:127.0.0.1,IP:$ip,IP:10.96.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc"
  sign apiserver-kubelet-client "/O=system:masters/CN=kube-apiserver-kubelet-client" ""
  openssl genrsa -out "$p/sa.key" 2048 2>/dev/null
  openssl rsa -in "$p/sa.key" -pubout -out "$p/sa.pub" 2>/dev/null
}

kubeconfig() { # file user token
  cat >"$1" <<YAML
apiVersion: v1
kind: Config
clusters:
  - name: seglift
    cluster:
      server: https://127.0.0.1:$API_PORT
      certificate-authority: $DIR/pki/ca.crt
users:
  - name: $2
    user:
      token: $3
contexts:
  - name: seglift
    context: { cluster: seglift, user: $2 }
current-context: seglift
YAML
}

up() {
  for b in kube-apiserver kube-controller-manager kube-scheduler kubelet kubectl; do
    [[ -x $bin/$b ]] || { log "$bin/$b missing: run scripts/k8s/setup.sh"; exit 1; }
  done
  local pause_tar="$K8S_CACHE/images/pause.tar"
  [[ -s $pause_tar ]] || { log "$pause_tar missing: run scripts/k8s/setup.sh"; exit 1; }
  down
  local prev
  prev=$(cat "$CURRENT" 2>/dev/null || true)
  if [[ -n $prev && $prev != "$DIR" && -d $prev ]]; then
    log "taking down the cluster an earlier run left up in $prev"
    bash "$here/cluster.sh" down "$prev"
  fi
  # A bridge left by a run whose directory is gone: its pods' veths hold addresses this cluster
  # will hand out again.
  if ip link show "$BRIDGE" >/dev/null 2>&1; then
    log "removing the bridge $BRIDGE an earlier run left (its pods' addresses would clash)"
    ip link del "$BRIDGE"
  fi
  mkdir -p "$DIR"/{pki,pids,logs,state,etcd,cni/net.d,cni/ipam,containerd,kubelet,pod-logs,runc}
  echo "$DIR" >"$CURRENT"
  chmod 700 "$DIR/pki" "$DIR/etcd"
  local ip
  ip=$(ip -4 route get 1.1.1.1 2>/dev/null | sed -n 's/.* src \([0-9.]*\).*/\1/p')
  [[ -n $ip ]] || ip=$(hostname -I | awk '{print $1}')
  { ls -d /var/run/netns/cni-* 2>/dev/null || true; } >"$DIR/state/netns-before"
  for p in /run/containerd /run/netns /var/lib/cni /var/lib/kubelet /var/log/containers /var/log/pods; do
    [[ -e $p ]] || echo "$p" >>"$DIR/state/made"
  done
  certs "$ip"
  local admin kubelet_token
  admin=$(openssl rand -hex 16)
  kubelet_token=$(openssl rand -hex 16)
  printf '%s,admin,admin,"system:masters"\n%s,system:node:%s,kubelet,"system:nodes"\n' \
    "$admin" "$kubelet_token" "$NODE" >"$DIR/pki/tokens.csv"
  kubeconfig "$DIR/admin.kubeconfig" admin "$admin"
  kubeconfig "$DIR/kubelet.kubeconfig" "system:node:$NODE" "$kubelet_token"

  start_daemon etcd etcd --name seglift --data-dir "$DIR/etcd" \
    --listen-client-urls "http://127.0.0.1:$ETCD_PORT" --advertise-client-urls "http://127.0.0.1:$ETCD_PORT" \
    --listen-peer-urls http://127.0.0.1:12380 --initial-advertise-peer-urls http://127.0.0.1:12380 \
    --initial-cluster seglift=http://127.0.0.1:12380 --listen-metrics-urls ''
  start_daemon kube-apiserver "$bin/kube-apiserver" \
    --etcd-servers "http://127.0.0.1:$ETCD_PORT" --bind-address 127.0.0.1 --advertise-address "$ip" \
    --secure-port "$API_PORT" --tls-cert-file "$DIR/pki/apiserver.crt" --tls-private-key-file "$DIR/pki/apiserver.key" \
    --client-ca-file "$DIR/pki/ca.crt" --token-auth-file "$DIR/pki/tokens.csv" \
    --authorization-mode Node,RBAC --service-cluster-ip-range 10.96.0.0/16 \
    --service-account-key-file "$DIR/pki/sa.pub" --service-account-signing-key-file "$DIR/pki/sa.key" \
    --service-account-issuer https://kubernetes.default.svc \
    --kubelet-client-certificate "$DIR/pki/apiserver-kubelet-client.crt" \
    --kubelet-client-key "$DIR/pki/apiserver-kubelet-client.key" --profiling=false \
    --kubelet-preferred-address-types InternalIP
  local kc=(--kubeconfig "$DIR/admin.kubeconfig")
  wait_for 120 "the API server" "$bin/kubectl" "${kc[@]}" get --raw /readyz
  start_daemon kube-controller-manager "$bin/kube-controller-manager" "${kc[@]}" --leader-elect=false \
    --bind-address 127.0.0.1 --secure-port 0 --service-account-private-key-file "$DIR/pki/sa.key" \
    --root-ca-file "$DIR/pki/ca.crt" --use-service-account-credentials=false --profiling=false
  start_daemon kube-scheduler "$bin/kube-scheduler" "${kc[@]}" --leader-elect=false \
    --bind-address 127.0.0.1 --secure-port 0 --profiling=false

  cat >"$DIR/containerd/config.toml" <<TOML
version = 2
root = "$DIR/containerd/root"
state = "$DIR/containerd/state"
[grpc]
  address = "$SOCK"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "localhost/pause:v1"
  # Root here lacks CAP_SYS_RESOURCE: without this every sandbox fails in runc ("can't get final
  # child's PID from pipe: EOF"; runc --debug: oom_score_adj Permission denied).
  restrict_oom_score_adj = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
        Root = "$DIR/runc"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "$DIR/cni/net.d"
TOML
  # No masquerade: the pods talk to this host only (the suite's clients), so the bridge plugin
  # adds no iptables rules.
  cat >"$DIR/cni/net.d/10-seglift.conflist" <<JSON
{
  "cniVersion": "0.4.0",
  "name": "seglift",
  "plugins": [
    { "type": "bridge", "bridge": "$BRIDGE", "isGateway": true, "ipMasq": false, "hairpinMode": true,
      "ipam": { "type": "host-local", "dataDir": "$DIR/cni/ipam", "ranges": [[{ "subnet": "$POD_CIDR" }]],
                "routes": [{ "dst": "0.0.0.0/0" }] } },
    { "type": "loopback" }
  ]
}
JSON
  start_daemon containerd containerd --config "$DIR/containerd/config.toml"
  wait_for 60 containerd "${CTR[@]}" version
  "${CTR[@]}" images import "$pause_tar" >/dev/null

  cat >"$DIR/kubelet/config.yaml" <<YAML
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
cgroupDriver: cgroupfs
failSwapOn: false
failCgroupV1: false
containerRuntimeEndpoint: unix://$SOCK
authentication:
  anonymous: { enabled: false }
  webhook: { enabled: false }
  x509: { clientCAFile: $DIR/pki/ca.crt }
authorization: { mode: AlwaysAllow }
podLogsDir: $DIR/pod-logs
# This machine's disk is shared and often fuller than the defaults allow: evict only when nearly full.
evictionHard: { memory.available: 100Mi, nodefs.available: 1%, nodefs.inodesFree: 1%, imagefs.available: 1% }
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
serializeImagePulls: false
healthzBindAddress: 127.0.0.1
readOnlyPort: 0
YAML
  start_daemon kubelet "$bin/kubelet" --config "$DIR/kubelet/config.yaml" --kubeconfig "$DIR/kubelet.kubeconfig" \
    --root-dir "$DIR/kubelet" --hostname-override "$NODE" --node-ip "$ip"
  wait_for 120 "node $NODE Ready" "$bin/kubectl" "${kc[@]}" wait --for=condition=Ready "node/$NODE" --timeout=2s
  echo "$DIR/admin.kubeconfig"
}

case "$cmd" in
up) up ;;
down) down ;;
import) "${CTR[@]}" images import "${3:?tar}" >/dev/null ;;
*) log "unknown command $cmd"; exit 2 ;;
esac
