# Shared definitions of the e2e scripts (sourced, not run).
# Paths of the binary caches (keyed by version and by the inputs of each build),
# the run directory, the ports.
# shellcheck shell=bash

KMT_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=../hack/versions.env
source "$KMT_ROOT/hack/versions.env"

# The matrix pair this run uses (hack/versions.env): default, old or new. A pair other than the
# default takes its versions from the MATRIX_<PAIR>_* lines and its modules from e2e/matrix/<pair>.
KMT_E2E_MATRIX=${KMT_E2E_MATRIX:-default}
KMT_K8S_MODULE=$KMT_ROOT/e2e/tools/k8s
KMT_KV_MODULE=$KMT_ROOT/e2e
KMT_KV_TAGS=
case $KMT_E2E_MATRIX in
  default) ;;
  old | new)
    kmt_pair=MATRIX_${KMT_E2E_MATRIX^^}
    kmt_v=${kmt_pair}_KUBERNETES_VERSION KUBERNETES_VERSION=${!kmt_v}
    kmt_v=${kmt_pair}_ETCD_VERSION ETCD_VERSION=${!kmt_v}
    kmt_v=${kmt_pair}_KUBEVIRT_VERSION KUBEVIRT_VERSION=${!kmt_v}
    kmt_v=${kmt_pair}_KUBEVIRT_TAGS KMT_KV_TAGS=${!kmt_v}
    KUBERNETES_STAGING_VERSION=v0.${KUBERNETES_VERSION#v1.}
    KMT_K8S_MODULE=$KMT_ROOT/e2e/matrix/$KMT_E2E_MATRIX/k8s
    [[ -d $KMT_ROOT/e2e/matrix/$KMT_E2E_MATRIX/kubevirt ]] && KMT_KV_MODULE=$KMT_ROOT/e2e/matrix/$KMT_E2E_MATRIX/kubevirt
    unset kmt_pair kmt_v
    ;;
  *)
    echo "e2e: KMT_E2E_MATRIX=$KMT_E2E_MATRIX: not a pair of hack/versions.env (default, old, new)" >&2
    return 2 2>/dev/null || exit 2
    ;;
esac
# shellcheck source=../hack/go.sh
source "$KMT_ROOT/hack/go.sh"
kmt_use_go || true   # the pinned Go first on PATH when there is one (build-binaries.sh insists)

KMT_CACHE=${KMT_CACHE:-$HOME/.cache/kubevirt-migration-target}
KMT_E2E_DIR=${KMT_E2E_DIR:-/tmp/kmt-e2e}

# hash of files, for cache keys
kmt_hash() { cat "$@" | sha256sum | cut -c1-12; }

# Link flags: no symbol tables; the version stamps a release build carries
# (Kubernetes' hack/lib/version.sh, KubeVirt's hack/version.sh), so /version
# reports KUBERNETES_VERSION instead of v0.0.0-master.
kmt_version_x() { # PACKAGE VERSION
  local minor=${2#v*.}
  minor=${minor%%.*}
  echo "-X $1.gitVersion=$2 -X $1.gitMajor=${2:1:1} -X $1.gitMinor=$minor -X $1.gitTreeState=clean -X $1.buildDate=1970-01-01T00:00:00Z"
}
KMT_K8S_LDFLAGS="-s -w $(kmt_version_x k8s.io/component-base/version "$KUBERNETES_VERSION") $(kmt_version_x k8s.io/client-go/pkg/version "$KUBERNETES_VERSION")"
KMT_KV_LDFLAGS="-s -w $(kmt_version_x kubevirt.io/client-go/version "$KUBEVIRT_VERSION")"
# The descheduler's Makefile stamps pkg/version.version as v<date>-<tag>; its start-up version
# check parses the minor from that form (pkg/version/version.go splitVersion).
KMT_DESCHEDULER_LDFLAGS="-s -w -X sigs.k8s.io/descheduler/pkg/version.version=v19700101-$DESCHEDULER_VERSION -X sigs.k8s.io/descheduler/pkg/version.buildDate=1970-01-01T00:00:00Z"

# Kubernetes + etcd binaries: keyed by the versions, the link flags and the tool module's go.mod/go.sum.
KMT_K8S_BIN="$KMT_CACHE/bin/k8s-$KUBERNETES_VERSION-etcd-$ETCD_VERSION-$(kmt_hash <(echo "$KMT_K8S_LDFLAGS") "$KMT_K8S_MODULE/go.mod" "$KMT_K8S_MODULE/go.sum")"
# virt-controller, virt-api, virtctl (KubeVirt's migration commands under e2e/cmd/virtctl's root)
# and crdgen (KubeVirt's generators of the same release): keyed by the KubeVirt version, its link
# flags and build tags, its module's go.mod and go.sum, the stand-ins and the two commands' sources.
KMT_KV_BIN="$KMT_CACHE/bin/kubevirt-$KUBEVIRT_VERSION-$(kmt_hash <(echo "$KMT_KV_LDFLAGS $KMT_KV_TAGS") "$KMT_KV_MODULE/go.mod" "$KMT_KV_MODULE/go.sum" $(find "$KMT_ROOT/e2e/third_party" "$KMT_ROOT/e2e/cmd/virtctl" "$KMT_ROOT/e2e/cmd/crdgen" -type f | sort))"
# the descheduler: keyed by its version, its link flags and its module's go.mod/go.sum.
KMT_DESCHEDULER_BIN="$KMT_CACHE/bin/descheduler-$DESCHEDULER_VERSION-$(kmt_hash <(echo "$KMT_DESCHEDULER_LDFLAGS") "$KMT_ROOT/e2e/tools/descheduler/go.mod" "$KMT_ROOT/e2e/tools/descheduler/go.sum")"
# the project's own small Go tools (the fake node agent): keyed by their sources too.
KMT_TOOLS_BIN="$KMT_CACHE/bin/e2e-tools-$(kmt_hash "$KMT_ROOT/e2e/go.mod" "$KMT_ROOT/e2e/go.sum" $(find "$KMT_ROOT/e2e/cmd" "$KMT_ROOT/e2e/third_party" -type f | sort))"

# kubelet and kube-proxy for the real node infra-0 (e2e/node.sh): the same Kubernetes release from
# their own module (e2e/tools/node: e2e/tools/k8s's requirements plus the 9 the two commands add),
# so adding them left the control plane's cache key alone. Keyed like the control plane. Only the
# default pair has a real node.
KMT_NODE_MODULE=$KMT_ROOT/e2e/tools/node
KMT_NODE_BIN="$KMT_CACHE/bin/node-$KUBERNETES_VERSION-$(kmt_hash <(echo "$KMT_K8S_LDFLAGS") "$KMT_NODE_MODULE/go.mod" "$KMT_NODE_MODULE/go.sum")"

# promtool: keyed by the Prometheus version and its tool module's go.mod/go.sum.
KMT_PROM_BIN="$KMT_CACHE/bin/prometheus-$PROMETHEUS_VERSION-$(kmt_hash "$KMT_ROOT/e2e/tools/prometheus/go.mod" "$KMT_ROOT/e2e/tools/prometheus/go.sum")"

KMT_K8S_BINARIES=(kube-apiserver kube-scheduler kube-controller-manager kubectl etcd)
KMT_KV_BINARIES=(virt-controller virt-api virtctl crdgen)
KMT_TOOLS_BINARIES=(fake-node-agent webhook-echo)
KMT_DESCHEDULER_BINARIES=(descheduler)
KMT_NODE_BINARIES=(kubelet kube-proxy)

# Ports on 127.0.0.1: KMT_E2E_PORT_BASE (default 26000) plus a fixed offset each.
KMT_E2E_PORT_BASE=${KMT_E2E_PORT_BASE:-26000}
KMT_PORT_ETCD=$((KMT_E2E_PORT_BASE + 379))
KMT_PORT_ETCD_PEER=$((KMT_E2E_PORT_BASE + 380))
KMT_PORT_APISERVER=$((KMT_E2E_PORT_BASE + 443))
KMT_PORT_SCHEDULER=$((KMT_E2E_PORT_BASE + 259))
KMT_PORT_CONTROLLER_MANAGER=$((KMT_E2E_PORT_BASE + 257))
KMT_PORT_VIRT_CONTROLLER=$((KMT_E2E_PORT_BASE + 182))
KMT_PORT_VIRT_API=$((KMT_E2E_PORT_BASE + 188))

kmt_log() { echo "[$(date -u +%H:%M:%S)] $*" >&2; }
