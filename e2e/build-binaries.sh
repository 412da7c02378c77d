#!/usr/bin/env bash
# Builds (once) the binaries the e2e tier runs, from Go modules, into caches
# outside the repository keyed by version (see e2e/lib.sh):
#   $KMT_K8S_BIN:   kube-apiserver kube-scheduler kube-controller-manager kubectl etcd
#   $KMT_KV_BIN:    virt-controller, virt-api, virtctl (KubeVirt's migration commands), crdgen
#                   (KubeVirt's generators: CRDs, RBAC, webhooks), all of one KubeVirt release
#   $KMT_TOOLS_BIN: fake-node-agent, webhook-echo (this project's e2e tools)
#   $KMT_DESCHEDULER_BIN: descheduler (run once by scenarios that ask for it)
#   $KMT_NODE_BIN:  kubelet, kube-proxy (the real node infra-0, e2e/node.sh; default pair only)
#   $KMT_PROM_BIN:  promtool (Prometheus; only when asked for: hack/monitoring_check.sh)
# A cache directory that exists is complete (it is renamed into place after a
# successful build), so later runs reuse it without touching Go.
# KMT_E2E_MATRIX (default, old, new) selects the pair of hack/versions.env.
# Usage: e2e/build-binaries.sh [--print-env] [GROUP...]
#   --print-env  print KMT_K8S_BIN=... lines for the five directories and exit.
#   GROUP        k8s, kubevirt, tools, descheduler, node, prometheus; default: all but prometheus
#                (node only on the default pair).
set -euo pipefail
source "$(dirname "$0")/lib.sh"

if [[ ${1:-} == --print-env ]]; then
  printf 'KMT_K8S_BIN=%s\nKMT_KV_BIN=%s\nKMT_TOOLS_BIN=%s\nKMT_DESCHEDULER_BIN=%s\nKMT_NODE_BIN=%s\nKMT_PROM_BIN=%s\n' \
    "$KMT_K8S_BIN" "$KMT_KV_BIN" "$KMT_TOOLS_BIN" "$KMT_DESCHEDULER_BIN" "$KMT_NODE_BIN" "$KMT_PROM_BIN"
  exit 0
fi

kmt_use_go || { echo "build-binaries: no Go >= $GO_MIN_VERSION (run hack/install-deps.sh)" >&2; exit 1; }

# The tool modules must pin what hack/versions.env says.
check_pin() { # file module version
  grep -qE "^[[:space:]]*(require[[:space:]]+)?$2 $3([[:space:]]|$)" "$1" \
    || { echo "build-binaries: $1 does not pin $2 $3 (hack/versions.env)" >&2; exit 1; }
}
check_pin "$KMT_K8S_MODULE/go.mod" k8s.io/kubernetes "$KUBERNETES_VERSION"
check_pin "$KMT_K8S_MODULE/go.mod" go.etcd.io/etcd/server/v3 "$ETCD_VERSION"
check_pin "$KMT_KV_MODULE/go.mod" kubevirt.io/kubevirt "$KUBEVIRT_VERSION"
# kubelet and kube-proxy (the real node) are built on the default pair only: the other pairs'
# Kubernetes is not the node module's.
[[ $KMT_E2E_MATRIX != default ]] || check_pin "$KMT_NODE_MODULE/go.mod" k8s.io/kubernetes "$KUBERNETES_VERSION"
check_pin "$KMT_ROOT/e2e/tools/descheduler/go.mod" sigs.k8s.io/descheduler "$DESCHEDULER_VERSION"
check_pin "$KMT_ROOT/e2e/tools/prometheus/go.mod" github.com/prometheus/prometheus "$PROMETHEUS_VERSION"
grep -q "k8s.io/api => k8s.io/api $KUBERNETES_STAGING_VERSION" "$KMT_K8S_MODULE/go.mod" \
  || { echo "build-binaries: $KMT_K8S_MODULE/go.mod does not replace staging modules by $KUBERNETES_STAGING_VERSION" >&2; exit 1; }
if [[ $KMT_E2E_MATRIX == default ]]; then
  grep -q "k8s.io/api => k8s.io/api $KUBERNETES_STAGING_VERSION" "$KMT_ROOT/e2e/go.mod" \
    || { echo "build-binaries: e2e/go.mod does not replace staging modules by $KUBERNETES_STAGING_VERSION" >&2; exit 1; }
fi

# Lean, reproducible builds: no symbol tables, no local paths, no VCS stamping.
export GOFLAGS="${GOFLAGS:-} -trimpath -buildvcs=false -mod=readonly"
export CGO_ENABLED=0

complete() { # dir names...
  local d=$1; shift
  for b in "$@"; do [[ -x $d/$b ]] || return 1; done
}

# build DIR MODULE_DIR LDFLAGS [-tags TAGS] name=package...
build() {
  local dir=$1 moddir=$2 ldflags=$3 tags=; shift 3
  if [[ ${1:-} == -tags ]]; then tags=$2; shift 2; fi
  local names=()
  for spec in "$@"; do names+=("${spec%%=*}"); done
  if complete "$dir" "${names[@]}"; then
    kmt_log "build-binaries: reusing $dir"
    return 0
  fi
  local tmp="$dir.tmp.$$"
  rm -rf "$tmp"; mkdir -p "$tmp"
  local start=$SECONDS
  for spec in "$@"; do
    kmt_log "build-binaries: building ${spec%%=*} (${spec#*=})"
    (cd "$moddir" && go build ${tags:+-tags "$tags"} -ldflags="$ldflags" -o "$tmp/${spec%%=*}" "${spec#*=}")
  done
  rm -rf "$dir"; mv "$tmp" "$dir"
  kmt_log "build-binaries: built ${names[*]} in $((SECONDS - start))s into $dir"
}

groups=("$@")
if [[ ${#groups[@]} -eq 0 ]]; then
  groups=(k8s kubevirt tools descheduler)
  [[ $KMT_E2E_MATRIX != default ]] || groups+=(node)
fi
for g in "${groups[@]}"; do
  case $g in
    k8s | kubevirt | tools | descheduler | node | prometheus) ;;
    *) echo "build-binaries: unknown group $g (k8s, kubevirt, tools, descheduler, node, prometheus)" >&2; exit 2 ;;
  esac
done
wants() { [[ " ${groups[*]} " == *" $1 "* ]]; }

mkdir -p "$KMT_CACHE/bin"
total=$SECONDS
wants k8s && build "$KMT_K8S_BIN" "$KMT_K8S_MODULE" "$KMT_K8S_LDFLAGS" \
  kube-apiserver=k8s.io/kubernetes/cmd/kube-apiserver \
  kube-scheduler=k8s.io/kubernetes/cmd/kube-scheduler \
  kube-controller-manager=k8s.io/kubernetes/cmd/kube-controller-manager \
  kubectl=k8s.io/kubernetes/cmd/kubectl \
  etcd=go.etcd.io/etcd/server/v3
# The default KubeVirt builds virtctl from this project's root over KubeVirt's commands (see
# e2e/cmd/virtctl); a pair's own KubeVirt module builds KubeVirt's cmd/virtctl and reaches crdgen
# through its crdgen symlink to e2e/cmd/crdgen.
if [[ $KMT_KV_MODULE == "$KMT_ROOT/e2e" ]]; then
  kv_virtctl=./cmd/virtctl kv_crdgen=./cmd/crdgen
else
  kv_virtctl=kubevirt.io/kubevirt/cmd/virtctl kv_crdgen=./crdgen
fi
wants kubevirt && build "$KMT_KV_BIN" "$KMT_KV_MODULE" "$KMT_KV_LDFLAGS" -tags "$KMT_KV_TAGS" \
  virt-controller=kubevirt.io/kubevirt/cmd/virt-controller \
  virt-api=kubevirt.io/kubevirt/cmd/virt-api \
  virtctl="$kv_virtctl" \
  crdgen="$kv_crdgen"
wants tools && build "$KMT_TOOLS_BIN" "$KMT_ROOT/e2e" "-s -w" \
  fake-node-agent=./cmd/fake-node-agent \
  webhook-echo=./cmd/webhook-echo
wants descheduler && build "$KMT_DESCHEDULER_BIN" "$KMT_ROOT/e2e/tools/descheduler" "$KMT_DESCHEDULER_LDFLAGS" \
  descheduler=sigs.k8s.io/descheduler/cmd/descheduler
# kubelet links statically with CGO_ENABLED=0 like the rest (upstream links it dynamically; nothing
# it runs here needs cgo: see e2e/README.md "The real node").
wants node && build "$KMT_NODE_BIN" "$KMT_NODE_MODULE" "$KMT_K8S_LDFLAGS" \
  kubelet=k8s.io/kubernetes/cmd/kubelet \
  kube-proxy=k8s.io/kubernetes/cmd/kube-proxy
wants prometheus && build "$KMT_PROM_BIN" "$KMT_ROOT/e2e/tools/prometheus" "-s -w" \
  promtool=github.com/prometheus/prometheus/cmd/promtool
kmt_log "build-binaries: done in $((SECONDS - total))s"
