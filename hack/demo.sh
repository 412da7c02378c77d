#!/usr/bin/env bash
# README command 1: the main job on an embedded default.
#
# Starts a local control plane (etcd, kube-apiserver, kube-scheduler,
# kube-controller-manager, KubeVirt's real virt-api and virt-controller, fake nodes), runs the
# operator out of cluster (webhooks reached by URL), starts a VM, migrates it to a
# named node with `kubectl migrate --wait` after a drain of its node that a
# MigrationTargetPolicy steers, shows the ANDed affinity and the conditions, then asks for
# a node that cannot take it and shows why. The cluster keeps running at the end; the
# last lines say how to explore and how to stop.
#
# hack/demo.sh --in-cluster installs the operator as the README's install section says instead
# (hack/image.sh's image imported into the real node infra-0, manifests/default applied with only
# `kustomize edit set image`; e2e/incluster/install.sh): root, and the image's first build (about
# 14 minutes cold, seconds when cached) on top of the demo, hence a flag.
#
# Environment: KMT_DEMO_DIR (default /tmp/kmt-demo), KMT_DEMO_PORT_BASE (default 25000).
set -euo pipefail
IN_CLUSTER=0
case ${1:-} in
  --in-cluster) IN_CLUSTER=1 ;;
  "") ;;
  *) echo "usage: hack/demo.sh [--in-cluster]" >&2; exit 2 ;;
esac
cd "$(dirname "$0")/.."
ROOT=$PWD
BAZEL=${BAZEL:-bazel}  # e.g. "bazel --output_base=DIR" while developing

export KMT_E2E_DIR=${KMT_DEMO_DIR:-/tmp/kmt-demo}
export KMT_E2E_PORT_BASE=${KMT_DEMO_PORT_BASE:-25000}
export KMT_E2E_NODES=node-a,node-b,node-c,node-d

if [[ -t 1 ]]; then B=$'\033[1m' C=$'\033[36m' R=$'\033[0m'; else B= C= R=; fi
bold() { printf '\n%s== %s%s\n' "$B" "$*" "$R"; }
show() { printf '%s$ %s%s\n' "$C" "$*" "$R"; "$@"; }

bold "Installing and building (cached after the first run)"
./hack/install-deps.sh
e2e/build-binaries.sh
$BAZEL build //cmd/operator:operator //cli:kubectl-migrate 2>&1 | grep -E '^(ERROR|INFO: Build completed)' || true
BIN=$($BAZEL info bazel-bin 2>/dev/null)
export KMT_OPERATOR_BIN=$BIN/cmd/operator/operator
PLUGIN_DIR=$KMT_E2E_DIR/plugin
[[ -x $KMT_OPERATOR_BIN && -x $BIN/cli/kubectl-migrate ]] || { echo "demo: build failed" >&2; exit 1; }

if ((IN_CLUSTER)); then
  bold "Building the operator's image (hack/image.sh; cached by the tree)"
  ARCHIVE=$(hack/image.sh | tail -n 1)
  export KMT_E2E_IN_CLUSTER=1 KMT_E2E_REAL_NODE=1
fi

bold "Starting the local control plane"
e2e/cluster.sh down >/dev/null 2>&1 || true
e2e/cluster.sh up
# shellcheck disable=SC1090
source <(e2e/cluster.sh env)
mkdir -p "$PLUGIN_DIR" && cp "$BIN/cli/kubectl-migrate" "$PLUGIN_DIR/"
export PATH=$PLUGIN_DIR:$PATH   # kubectl discovers kubectl-migrate on PATH

if ((IN_CLUSTER)); then
  bold "Installing the operator: the image on infra-0, kubectl apply -k manifests/default (image set)"
  e2e/incluster/install.sh "$ARCHIVE"
  show kubectl -n kubevirt-migration-target rollout status deployment/migration-target-operator --timeout 180s
  OPERATOR_LOG="kubectl -n kubevirt-migration-target logs deployment/migration-target-operator"
else
  bold "Starting the operator (as its ServiceAccount, with the manifests' RBAC)"
  e2e/operator.sh install
  e2e/operator.sh start 0 0
  OPERATOR_LOG=$KMT_E2E_DIR/logs/operator-0.log
fi

bold "The VM owner starts VM db-1 (own rule: never on node-d), preferring node-a"
kubectl create namespace demo >/dev/null
until kubectl -n demo get serviceaccount default >/dev/null 2>&1; do sleep 0.2; done
kubectl -n demo create role vm-owner --verb='*' \
  --resource=virtualmachineinstances.kubevirt.io,virtualmachineinstancemigrations.kubevirt.io >/dev/null
kubectl -n demo create rolebinding vm-owner --role=vm-owner --user=vm-owner >/dev/null
kubectl apply -f - >/dev/null <<'YAML'
apiVersion: kubevirt.io/v1
kind: VirtualMachineInstance
metadata:
  name: db-1
  namespace: demo
  finalizers: ["foregroundDeleteVirtualMachine"]
spec:
  affinity:
    nodeAffinity:
      requiredDuringSchedulingIgnoredDuringExecution:
        nodeSelectorTerms:
          - matchExpressions:
              - {key: kubernetes.io/hostname, operator: NotIn, values: [node-d]}
      preferredDuringSchedulingIgnoredDuringExecution:
        - weight: 100
          preference:
            matchExpressions:
              - {key: kubernetes.io/hostname, operator: In, values: [node-a]}
  terminationGracePeriodSeconds: 0
  evictionStrategy: LiveMigrate
  domain:
    resources: {requests: {memory: 128Mi}}
    memory: {guest: 128Mi}
    cpu: {cores: 1, sockets: 1, threads: 1, model: host-model}
    machine: {type: q35}
    devices: {autoattachPodInterface: false}
YAML
deadline=$((SECONDS + 120))
until [[ $(kubectl -n demo get vmi db-1 -o jsonpath='{.status.phase}') == Running ]]; do
  ((SECONDS < deadline)) || { echo "demo: VMI did not start" >&2; exit 1; }
  sleep 0.5
done
show kubectl -n demo get vmi db-1

bold "Pre-flight: where could db-1 go?"
show kubectl migrate explain db-1 -n demo || true

src=$(kubectl -n demo get vmi db-1 -o jsonpath='{.status.nodeName}')
dst=node-b; [[ $src != node-b ]] || dst=node-c
bold "A drain steered by the admin's MigrationTargetPolicy: VMs leaving $src go to $dst"
kubectl apply -f - >/dev/null <<YAML
apiVersion: migration-target.kubevirt.io/v1alpha1
kind: MigrationTargetPolicy
metadata:
  name: off-$src-to-$dst
spec:
  maxInboundPerNode: 1
  match:
    sourceNodeSelector: {matchLabels: {kubernetes.io/hostname: $src}}
  addedNodeSelectorTerm:
    matchExpressions:
      - {key: kubernetes.io/hostname, operator: In, values: [$dst]}
YAML
show kubectl migrate policy explain "$src"
show kubectl drain "$src" --ignore-daemonsets --delete-emptydir-data --timeout 3m
show kubectl -n demo get vmi db-1
evac=$(kubectl -n demo get vmim -o name | grep kubevirt-evacuation- | tail -1 | cut -d/ -f2)
show kubectl migrate status "$evac" -n demo
show kubectl get migrationtargetpolicies
show kubectl uncordon "$src"

bold "The VM owner may not choose the node"
show kubectl migrate db-1 -n demo --node node-c --kubeconfig "$KMT_E2E_VM_OWNER_KUBECONFIG" || true

bold "The admin migrates db-1 to node-c and waits"
show kubectl migrate db-1 -n demo --node node-c --wait --timeout 3m
vmim=$(kubectl -n demo get vmim --sort-by=.metadata.creationTimestamp -o name | tail -1 | cut -d/ -f2)
uid=$(kubectl -n demo get vmim "$vmim" -o jsonpath='{.metadata.uid}')

bold "The target pod's required node affinity: the owner's rule AND the admin's request"
kubectl -n demo get pod -l "kubevirt.io/migrationJobUID=$uid" \
  -o jsonpath='{.items[0].spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution}' |
  /usr/bin/python3 -m json.tool
show kubectl migrate status "$vmim" -n demo

bold "A request that cannot be placed: node-b is cordoned"
show kubectl cordon node-b
show kubectl migrate db-1 -n demo --node node-b --wait --timeout 20s || true
bold "Why? The operator's explanation, node by node"
show kubectl migrate explain db-1 -n demo --selector 'kubernetes.io/hostname in (node-b,node-c,node-d)' || true
kubectl -n demo delete vmim --all >/dev/null

cat <<EOF

Demo done. The cluster keeps running:
  source <(KMT_E2E_DIR=$KMT_E2E_DIR KMT_E2E_PORT_BASE=$KMT_E2E_PORT_BASE $ROOT/e2e/cluster.sh env)   # KUBECONFIG (admin), kubectl on PATH
  export PATH=$PLUGIN_DIR:\$PATH                                      # kubectl migrate
  kubectl migrate explain db-1 -n demo                                # and any other kubectl command
  operator log: $OPERATOR_LOG
Stop everything:
  KMT_E2E_DIR=$KMT_E2E_DIR KMT_E2E_PORT_BASE=$KMT_E2E_PORT_BASE $ROOT/e2e/cluster.sh down
EOF
