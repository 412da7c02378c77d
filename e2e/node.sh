#!/usr/bin/env bash
# One real node, infra-0, beside the e2e control plane (see e2e/README.md "The real node"):
# containerd (Debian's, with its own root, state, socket and runc root under the run dir), a CNI
# bridge of its own, kubelet and kube-proxy (built by e2e/build-binaries.sh node), running pods from
# images built here and imported (there is no registry). Called by e2e/cluster.sh up/down; needs
# root. The node is tainted kmt.local/infra=true:NoSchedule and labelled kmt.local/infra=true, so
# only pods that tolerate the taint run there; the fake node agent leaves it alone (it plays only
# nodes labelled type=kwok).
#
#   e2e/node.sh up     start containerd, import the images, start kubelet and kube-proxy, wait Ready
#   e2e/node.sh down   delete its pods, stop everything, unmount, remove its bridge, cgroups, network
#                      namespaces and iptables chains, restore the sysctls kubelet/kube-proxy changed
#   e2e/node.sh env    print the node's variables (KMT_E2E_NODE_*)
#   e2e/node.sh state  print what the node may change on the machine (iptables rules, nft tables,
#                      the sysctls below, links, network namespaces, mounts and processes naming the
#                      run dir, its cgroups): e2e/run.sh compares it before `up` and after `down`
#
# Everything machine-wide is named after KMT_E2E_PORT_BASE (bridge kmt<base>, cgroup /kmt-<base>,
# pod CIDR 10.245.<base/1000 % 256>.0/24), so a second cluster with another port base gets its own.
# kube-proxy's and kubelet's iptables chains (KUBE-*) have fixed names, so only one real node can run
# on a machine at a time: `up` takes /run/kmt-e2e-real-node.lock and refuses when another holds it.
set -Eeuo pipefail
source "$(dirname "$0")/lib.sh"

RUN=$KMT_E2E_DIR
PKI=$RUN/pki
ND=$RUN/node
NODE_NAME=infra-0
BASE=$KMT_E2E_PORT_BASE
BRIDGE=kmt$BASE
CGROUP_ROOT=/kmt-$BASE
POD_CIDR_PREFIX=10.245.$((BASE / 1000 % 256))
POD_CIDR=$POD_CIDR_PREFIX.0/24
CTR_SOCK=$ND/containerd/containerd.sock
PORT_KUBELET=$((BASE + 250))
PORT_KUBELET_HEALTHZ=$((BASE + 248))
PORT_PROXY_HEALTHZ=$((BASE + 256))
PORT_PROXY_METRICS=$((BASE + 249))
PORT_CRI_STREAM=$((BASE + 10))
LOCK=/run/kmt-e2e-real-node.lock
CNI_BIN=/usr/lib/cni
PAUSE_IMAGE=kmt.local/pause:1
BUSYBOX_IMAGE=kmt.local/busybox:1
WEBHOOK_IMAGE=kmt.local/webhook-echo:1
# What kubelet (protectKernelDefaults: false) and kube-proxy may set; `down` puts them back.
SYSCTLS=(vm.overcommit_memory vm.panic_on_oom kernel.panic kernel.panic_on_oops kernel.keys.root_maxkeys
  kernel.keys.root_maxbytes net.ipv4.conf.all.route_localnet net.ipv4.ip_forward
  net.bridge.bridge-nf-call-iptables net.netfilter.nf_conntrack_max
  net.netfilter.nf_conntrack_tcp_timeout_established net.netfilter.nf_conntrack_tcp_timeout_close_wait)

node_ip() { ip -4 -o addr show scope global | awk '{print $4}' | cut -d/ -f1 | head -n 1; }
k() { "$KMT_K8S_BIN/kubectl" --kubeconfig "$RUN/admin.kubeconfig" "$@"; }
ctr_() { ctr --address "$CTR_SOCK" -n k8s.io "$@"; }

start() { # NAME CMD...: own process group, log and pid under the node dir
  local name=$1; shift
  setsid "$@" >>"$ND/logs/$name.log" 2>&1 </dev/null &
  echo $! >"$ND/pids/$name.pid"
}
alive() { [[ -f $ND/pids/$1.pid ]] && kill -0 "$(cat "$ND/pids/$1.pid")" 2>/dev/null; }
wait_for() { # PROC DESCRIPTION TIMEOUT CMD...
  local proc=$1 what=$2 timeout=$3; shift 3
  local deadline=$((SECONDS + timeout))
  until "$@" >/dev/null 2>&1; do
    if ! alive "$proc" || ((SECONDS >= deadline)); then
      kmt_log "node: $what: $proc exited or ${timeout}s passed; last lines of $ND/logs/$proc.log:"
      tail -n 30 "$ND/logs/$proc.log" >&2 || true
      return 1
    fi
    sleep 0.2
  done
}

sign() { # NAME SUBJECT EXT: a certificate signed by the cluster CA, as cluster.sh signs
  openssl req -newkey rsa:2048 -nodes -subj "$2" -keyout "$ND/pki/$1.key" -out "$ND/pki/$1.csr" 2>/dev/null
  printf '%s\n' "$3" >"$ND/pki/$1.ext"
  openssl x509 -req -in "$ND/pki/$1.csr" -CA "$PKI/ca.crt" -CAkey "$PKI/ca.key" -CAcreateserial \
    -days 2 -extfile "$ND/pki/$1.ext" -out "$ND/pki/$1.crt" 2>/dev/null
  rm -f "$ND/pki/$1.csr" "$ND/pki/$1.ext"
}

# ---------------------------------------------------------------- images (no registry)
# oci_archive NAME DIR OUT ENTRYPOINT_JSON: an OCI image archive of one uncompressed layer (DIR),
# named NAME for `ctr images import`.
oci_archive() {
  local name=$1 dir=$2 out=$3 entry=$4 lay
  lay=$(mktemp -d "$ND/images/oci.XXXXXX")
  mkdir -p "$lay/blobs/sha256"
  tar -C "$dir" --owner=0 --group=0 --numeric-owner --sort=name --mtime=@0 -cf "$lay/layer.tar" .
  local ld ls_ cd cs md ms
  ld=$(sha256sum "$lay/layer.tar" | cut -d' ' -f1); ls_=$(stat -c %s "$lay/layer.tar")
  mv "$lay/layer.tar" "$lay/blobs/sha256/$ld"
  printf '{"architecture":"amd64","os":"linux","config":{"Entrypoint":%s,"WorkingDir":"/"},"rootfs":{"type":"layers","diff_ids":["sha256:%s"]}}' \
    "$entry" "$ld" >"$lay/config.json"
  cd=$(sha256sum "$lay/config.json" | cut -d' ' -f1); cs=$(stat -c %s "$lay/config.json")
  mv "$lay/config.json" "$lay/blobs/sha256/$cd"
  printf '{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":{"mediaType":"application/vnd.oci.image.config.v1+json","digest":"sha256:%s","size":%s},"layers":[{"mediaType":"application/vnd.oci.image.layer.v1.tar","digest":"sha256:%s","size":%s}]}' \
    "$cd" "$cs" "$ld" "$ls_" >"$lay/manifest.json"
  md=$(sha256sum "$lay/manifest.json" | cut -d' ' -f1); ms=$(stat -c %s "$lay/manifest.json")
  mv "$lay/manifest.json" "$lay/blobs/sha256/$md"
  printf '{"schemaVersion":2,"manifests":[{"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"sha256:%s","size":%s,"platform":{"architecture":"amd64","os":"linux"},"annotations":{"io.containerd.image.name":"%s","org.opencontainers.image.ref.name":"%s"}}]}' \
    "$md" "$ms" "$name" "$name" >"$lay/index.json"
  echo '{"imageLayoutVersion":"1.0.0"}' >"$lay/oci-layout"
  tar -C "$lay" -cf "$out" oci-layout index.json blobs
  rm -rf "$lay"
}

# The sandbox image: Kubernetes' own pause.c from the k8s.io/kubernetes module (the release the
# node runs), linked statically. The test images: Debian's statically linked busybox, and the
# static webhook-echo (e2e/cmd/webhook-echo, built by build-binaries.sh tools).
build_images() {
  mkdir -p "$ND/images/pause/bin" "$ND/images/busybox/bin" "$ND/images/busybox/www" "$ND/images/busybox/tmp"
  local src
  src=$(cd "$KMT_NODE_MODULE" && go list -m -f '{{.Dir}}' k8s.io/kubernetes)/build/pause/linux/pause.c
  gcc -Os -static -DVERSION="$KUBERNETES_VERSION" -o "$ND/images/pause/pause" "$src"
  oci_archive "$PAUSE_IMAGE" "$ND/images/pause" "$ND/images/pause.oci.tar" '["/pause"]'
  cp /bin/busybox "$ND/images/busybox/bin/busybox"
  for a in sh cat echo ls sleep tail httpd nc rm hostname; do ln -sf busybox "$ND/images/busybox/bin/$a"; done
  echo "kmt busybox image" >"$ND/images/busybox/www/index.html"
  oci_archive "$BUSYBOX_IMAGE" "$ND/images/busybox" "$ND/images/busybox.oci.tar" '["/bin/sh"]'
  mkdir -p "$ND/images/webhook"
  cp "$KMT_TOOLS_BIN/webhook-echo" "$ND/images/webhook/webhook-echo"
  oci_archive "$WEBHOOK_IMAGE" "$ND/images/webhook" "$ND/images/webhook.oci.tar" '["/webhook-echo"]'
}

# ---------------------------------------------------------------- containerd
write_containerd_config() {
  mkdir -p "$ND/containerd" "$ND/cni/net.d" "$ND/cni/ipam"
  cat >"$ND/containerd/config.toml" <<EOF
version = 2
root = "$ND/containerd/root"
state = "$ND/containerd/state"
disabled_plugins = ["io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs",
  "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper"]
[grpc]
  address = "$CTR_SOCK"
[ttrpc]
  address = "$CTR_SOCK.ttrpc"
[plugins."io.containerd.internal.v1.opt"]
  path = "$ND/containerd/opt"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "$PAUSE_IMAGE"
  # No CAP_SYS_RESOURCE in this VM's bounding set: no process may lower its oom_score_adj, so
  # runc fails to set a pod's (-998 for a sandbox). Clamped to containerd's own score (0).
  restrict_oom_score_adj = true
  stream_server_address = "127.0.0.1"
  stream_server_port = "$PORT_CRI_STREAM"
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
        Root = "$ND/runc"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "$CNI_BIN"
    conf_dir = "$ND/cni/net.d"
    max_conf_num = 1
EOF
  # A bridge of its own, no masquerading and no portmap (no iptables rules from CNI); hairpin
  # so a pod reaches itself through its Service.
  cat >"$ND/cni/net.d/10-kmt.conflist" <<EOF
{"cniVersion": "0.4.0", "name": "kmt-$BASE", "plugins": [
  {"type": "bridge", "bridge": "$BRIDGE", "isGateway": true, "ipMasq": false, "hairpinMode": true,
   "ipam": {"type": "host-local", "dataDir": "$ND/cni/ipam",
            "ranges": [[{"subnet": "$POD_CIDR"}]], "routes": [{"dst": "0.0.0.0/0"}]}}]}
EOF
}

# ---------------------------------------------------------------- kubelet, kube-proxy
write_kubelet_config() {
  local ip=$1
  mkdir -p "$ND/pki" "$ND/kubelet" "$ND/pods-logs" "$ND/volume-plugins"
  sign kubelet "/CN=$NODE_NAME" "basicConstraints=CA:FALSE
keyUsage=digitalSignature,keyEncipherment
extendedKeyUsage=serverAuth
subjectAltName=IP:$ip,DNS:$NODE_NAME"
  cat >"$ND/kubelet-config.yaml" <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: $ip
port: $PORT_KUBELET
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: $PORT_KUBELET_HEALTHZ
tlsCertFile: $ND/pki/kubelet.crt
tlsPrivateKeyFile: $ND/pki/kubelet.key
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: $PKI/ca.crt}
authorization: {mode: Webhook}
containerRuntimeEndpoint: unix://$CTR_SOCK
imageServiceEndpoint: unix://$CTR_SOCK
cgroupDriver: cgroupfs
cgroupRoot: $CGROUP_ROOT
# cgroup v1 host; 1.35+ refuses v1 unless told.
failCgroupV1: false
failSwapOn: false
# No CAP_SYS_RESOURCE: the kubelet cannot lower its own score to -999.
oomScoreAdj: 0
podLogsDir: $ND/pods-logs
volumePluginDir: $ND/volume-plugins
# A shared disk, and imported images cannot be pulled back: no image GC, low eviction thresholds.
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard: {memory.available: "100Mi", nodefs.available: "1%", nodefs.inodesFree: "1%", imagefs.available: "1%"}
registerWithTaints:
- {key: kmt.local/infra, value: "true", effect: NoSchedule}
maxPods: 30
serializeImagePulls: false
EOF
}

taint_and_label_ready() {
  [[ $(k get node "$NODE_NAME" -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}') == True ]]
}

proxy_healthy() { curl -fsS "http://127.0.0.1:$PORT_PROXY_HEALTHZ/healthz" >/dev/null; }

snapshot_machine() {
  : >"$ND/sysctls.before"
  for s in "${SYSCTLS[@]}"; do
    local f=/proc/sys/${s//.//}
    [[ -r $f ]] && printf '%s=%s\n' "$s" "$(tr '\t' ' ' <"$f")" >>"$ND/sysctls.before"
  done
  for t in iptables ip6tables; do
    "$t-save" 2>/dev/null | grep -E '^:' | awk '{print $1}' | sort -u >"$ND/$t.chains.before" || true
    "$t-save" 2>/dev/null | grep -E '^\*' | sort -u >"$ND/$t.tables.before" || true
  done
}

cmd_up() {
  [[ $(id -u) == 0 ]] || { kmt_log "node: needs root (containerd, CNI, cgroups); KMT_E2E_REAL_NODE=0 runs without the node"; return 1; }
  for b in containerd runc ctr iptables-save; do
    command -v "$b" >/dev/null || { kmt_log "node: $b missing (hack/install-deps.sh)"; return 1; }
  done
  [[ -x $KMT_TOOLS_BIN/webhook-echo ]] || "$KMT_ROOT/e2e/build-binaries.sh" tools
  [[ -x $CNI_BIN/bridge && -x $CNI_BIN/host-local && -x /bin/busybox ]] ||
    { kmt_log "node: CNI plugins or busybox-static missing (hack/install-deps.sh)"; return 1; }
  for b in "${KMT_NODE_BINARIES[@]}"; do
    [[ -x $KMT_NODE_BIN/$b ]] || "$KMT_ROOT/e2e/build-binaries.sh" node
  done
  exec 9>"$LOCK"
  if ! flock -n 9; then
    kmt_log "node: another real node holds $LOCK (kube-proxy's and kubelet's iptables chains are machine-wide); KMT_E2E_REAL_NODE=0 runs without one"
    return 1
  fi
  local t0=$SECONDS ip
  ip=$(node_ip)
  [[ -n $ip ]] || { kmt_log "node: no global IPv4 address for --node-ip (loopback is refused)"; return 1; }
  rm -rf "$ND"
  mkdir -p "$ND/logs" "$ND/pids" "$ND/images"
  # A failing step stops what started and puts the machine back (the run dir's logs go too).
  trap 'kmt_log "node: up failed at node.sh line $LINENO: $BASH_COMMAND; stopping"; trap - ERR; cmd_down' ERR
  snapshot_machine
  for d in /sys/fs/cgroup/*/; do
    [[ -d $d && $(stat -f -c %T "$d") =~ ^(cgroupfs|cgroup2fs)$ ]] && mkdir -p "$d${CGROUP_ROOT#/}"
  done
  build_images
  write_containerd_config
  start containerd containerd --config "$ND/containerd/config.toml"
  wait_for containerd "containerd serving" 30 ctr_ version
  ctr_ images import "$ND/images/pause.oci.tar" >/dev/null
  ctr_ images import "$ND/images/busybox.oci.tar" >/dev/null
  ctr_ images import "$ND/images/webhook.oci.tar" >/dev/null
  kmt_log "node: containerd up, images imported after $((SECONDS - t0))s"

  "$KMT_ROOT/e2e/cluster.sh" kubeconfig "system:node:$NODE_NAME" system:nodes >/dev/null
  "$KMT_ROOT/e2e/cluster.sh" kubeconfig system:kube-proxy >/dev/null
  # RBAC only (no Node authorizer): the default binding system:node has no subjects.
  k create clusterrolebinding kmt:nodes --clusterrole system:node --group system:nodes >/dev/null
  write_kubelet_config "$ip"
  start kubelet "$KMT_NODE_BIN/kubelet" --config "$ND/kubelet-config.yaml" \
    --kubeconfig "$RUN/system:node:$NODE_NAME.kubeconfig" --root-dir "$ND/kubelet" --cert-dir "$ND/pki" \
    --hostname-override "$NODE_NAME" --node-ip "$ip" --node-labels kmt.local/infra=true --v 2
  wait_for kubelet "node $NODE_NAME Ready" 90 taint_and_label_ready
  kmt_log "node: $NODE_NAME Ready after $((SECONDS - t0))s"
  # Leave the conntrack sysctls and route_localnet alone (0 = do not set).
  start kube-proxy "$KMT_NODE_BIN/kube-proxy" --kubeconfig "$RUN/system:kube-proxy.kubeconfig" \
    --hostname-override "$NODE_NAME" --proxy-mode iptables --cluster-cidr "$POD_CIDR" \
    --healthz-bind-address "127.0.0.1:$PORT_PROXY_HEALTHZ" --metrics-bind-address "127.0.0.1:$PORT_PROXY_METRICS" \
    --conntrack-max-per-core 0 --conntrack-tcp-timeout-established 0 --conntrack-tcp-timeout-close-wait 0 \
    --iptables-localhost-nodeports=false --v 2
  wait_for kube-proxy "kube-proxy healthy" 60 proxy_healthy
  cmd_env >"$ND/env"
  trap - ERR
  kmt_log "node: $NODE_NAME up in $((SECONDS - t0))s (IP $ip, pods $POD_CIDR, bridge $BRIDGE)"
}

cmd_state() {
  local t s
  for t in iptables ip6tables; do
    echo "## $t"
    "$t-save" 2>/dev/null | grep -v '^#' | sed -E 's/ \[[0-9]+:[0-9]+\]$//' || true
  done
  echo "## nft tables"
  command -v nft >/dev/null && nft list tables 2>/dev/null | sort
  echo "## sysctls"
  for s in "${SYSCTLS[@]}"; do
    [[ -r /proc/sys/${s//.//} ]] && echo "$s=$(tr '\t' ' ' <"/proc/sys/${s//.//}")"
  done
  echo "## links"
  ip -o link show | awk -F': ' '{print $2}' | sed 's/@.*//' | sort
  echo "## netns"
  find /run/netns -mindepth 1 -maxdepth 1 -printf "%f\n" 2>/dev/null | sort || true
  echo "## mounts under $RUN"
  awk '{print $5}' /proc/self/mountinfo | grep -F "$RUN/" | sort || true
  echo "## processes naming $RUN or $CTR_SOCK"
  pgrep -af -- "$RUN/|$CTR_SOCK" 2>/dev/null | grep -v -- "node.sh state" | awk '{$1=""; print}' | sort || true
  echo "## cgroups $CGROUP_ROOT"
  ls -d /sys/fs/cgroup/*"$CGROUP_ROOT" 2>/dev/null || true
}

cmd_env() {
  cat <<EOF
export KMT_E2E_NODE_NAME=$NODE_NAME
export KMT_E2E_NODE_IP=$(node_ip)
export KMT_E2E_NODE_POD_CIDR=$POD_CIDR
export KMT_E2E_NODE_BUSYBOX_IMAGE=$BUSYBOX_IMAGE
export KMT_E2E_NODE_WEBHOOK_IMAGE=$WEBHOOK_IMAGE
export KMT_E2E_NODE_CTR_ADDRESS=$CTR_SOCK
export KMT_E2E_NODE_DIR=$ND
EOF
}

stop_proc() { # NAME: TERM its process group, KILL after 15 s
  local f=$ND/pids/$1.pid p
  [[ -f $f ]] || return 0
  p=$(cat "$f")
  kill -TERM -- "-$p" 2>/dev/null || true
  local deadline=$((SECONDS + 15))
  while kill -0 "$p" 2>/dev/null && ((SECONDS < deadline)); do sleep 0.1; done
  kill -KILL -- "-$p" 2>/dev/null || true
  rm -f "$f"
}

# Every step is tried even when one fails; nothing outside this node's names is touched.
cmd_down() {
  [[ -d $ND ]] || return 0
  set +e
  local t0=$SECONDS
  # 1. Pods through the API while the kubelet runs: it stops their containers and tears down
  #    their networks (CNI DEL) as on any node.
  if alive kubelet && [[ -f $RUN/admin.kubeconfig ]]; then
    k delete pods -A --field-selector "spec.nodeName=$NODE_NAME" --grace-period 1 --wait --timeout 40s >/dev/null 2>&1
  fi
  stop_proc kube-proxy
  [[ -x $KMT_NODE_BIN/kube-proxy ]] && "$KMT_NODE_BIN/kube-proxy" --cleanup >>"$ND/logs/kube-proxy-cleanup.log" 2>&1
  stop_proc kubelet
  # 2. What the kubelet left in containerd: kill tasks, remember sandbox network namespaces.
  local netns=()
  if alive containerd; then
    mapfile -t netns < <(ctr_ containers ls -q 2>/dev/null | while read -r c; do
      ctr_ containers info "$c" 2>/dev/null | grep -oE '"/var/run/netns/[^"]+"|"/run/netns/[^"]+"' | tr -d '"'
    done | sort -u)
    for c in $(ctr_ tasks ls -q 2>/dev/null); do
      ctr_ tasks kill -s SIGKILL "$c" >/dev/null 2>&1
      ctr_ tasks delete -f "$c" >/dev/null 2>&1
    done
  fi
  stop_proc containerd
  # shims outlive containerd by design; ours name our socket
  local pid
  for pid in $(pgrep -f "containerd-shim.* -address $CTR_SOCK" 2>/dev/null); do kill -KILL "$pid" 2>/dev/null; done
  for n in "${netns[@]}"; do
    [[ -e $n ]] && { umount "$n" 2>/dev/null; rm -f "$n"; }
  done
  # 3. Mounts under the node dir (overlays, shm, tokens), deepest first.
  local m
  local mounts=()
  mapfile -t mounts < <(awk '{print $5}' /proc/self/mountinfo | grep -F "$ND/" | sort -r)
  for m in "${mounts[@]}"; do
    umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null
  done
  # 4. The bridge, cgroups, iptables chains the kubelet made (kube-proxy --cleanup did its own).
  ip link del "$BRIDGE" 2>/dev/null
  local d
  for d in /sys/fs/cgroup/*/; do
    [[ -d $d${CGROUP_ROOT#/} ]] && find "$d${CGROUP_ROOT#/}" -depth -type d -exec rmdir {} + 2>/dev/null
  done
  local t c
  for t in iptables ip6tables; do
    [[ -f $ND/$t.chains.before ]] || continue
    for c in KUBE-FIREWALL KUBE-KUBELET-CANARY KUBE-IPTABLES-HINT KUBE-PROXY-CANARY; do
      grep -qx ":$c" "$ND/$t.chains.before" && continue
      for tbl in filter nat mangle; do
        while "$t" -t "$tbl" -S 2>/dev/null | grep -E -- "-j $c( |$)" | head -n 1 | grep -q .; do
          local rule
          rule=$("$t" -t "$tbl" -S | grep -E -- "-j $c( |$)" | head -n 1 | sed 's/^-A /-D /')
          # shellcheck disable=SC2086  # a rule is several words
          "$t" -t "$tbl" $rule 2>/dev/null || break
        done
        "$t" -t "$tbl" -F "$c" 2>/dev/null && "$t" -t "$tbl" -X "$c" 2>/dev/null
      done
    done
  done
  # iptables-nft made its tables for the kubelet and kube-proxy; one that did not exist before and
  # now holds no rule and no chain of its own is deleted again (nft from the nftables package).
  if command -v nft >/dev/null; then
    for t in iptables ip6tables; do
      [[ -f $ND/$t.tables.before ]] || continue
      local fam=ip; [[ $t == ip6tables ]] && fam=ip6
      for tbl in $("$t-save" 2>/dev/null | grep -E '^\*' | tr -d '*'); do
        grep -qx "\*$tbl" "$ND/$t.tables.before" && continue
        "$t" -t "$tbl" -S 2>/dev/null | grep -qE '^-(A|N) ' && continue
        nft delete table "$fam" "$tbl" 2>/dev/null
      done
    done
  fi
  # 5. Sysctls back as they were.
  if [[ -f $ND/sysctls.before ]]; then
    local line
    while IFS= read -r line; do
      local key=${line%%=*} val=${line#*=}
      local f=/proc/sys/${key//.//}
      [[ $(tr '\t' ' ' <"$f" 2>/dev/null) == "$val" ]] || echo "$val" >"$f" 2>/dev/null
    done <"$ND/sysctls.before"
  fi
  rm -rf "$ND"
  [[ -f $LOCK ]] && rm -f "$LOCK"
  kmt_log "node: $NODE_NAME down in $((SECONDS - t0))s"
  set -e
}

case ${1:-} in
  up) cmd_up ;;
  down) cmd_down ;;
  env) cmd_env ;;
  state) cmd_state ;;
  *) sed -n '2,/^set -E/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//' >&2; exit 2 ;;
esac
