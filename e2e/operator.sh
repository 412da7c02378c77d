#!/usr/bin/env bash
# The operator on the e2e control plane, out of cluster, as its own ServiceAccount
# identity with exactly the RBAC of manifests/default (so a verb the code uses but
# the ClusterRole lacks fails the e2e run), webhooks reached by URL.
#
#   e2e/operator.sh install            namespace, ServiceAccount, RBAC, requester role, admission
#                                      policies, webhook
#                                      configurations (URL of replica 0, caBundle = cluster CA)
#   e2e/operator.sh start NAME [INDEX] [FLAGS...]
#                                      start a replica (ports offset by INDEX*10); waits for /readyz;
#                                      KMT_OPERATOR_KUBECONFIG replaces its ServiceAccount kubeconfig
#   e2e/operator.sh stop NAME [SIGNAL] stop a replica (default TERM; KILL for a crash)
#   e2e/operator.sh webhooks off|on    delete / re-create both webhook configurations
#   e2e/operator.sh binary             build (if needed) and print the operator binary's path
#
# Needs `source <(e2e/cluster.sh env)` first. Ports: KMT_E2E_PORT_BASE + 944 (webhook),
# + 980 (metrics), + 981 (probes), each + INDEX*10.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
cd "$KMT_ROOT"

RUN=$KMT_E2E_DIR
export KUBECACHEDIR=$RUN/kube-cache  # as cluster.sh: this cluster's discovery only
KUBECTL=${KMT_KUBECTL:-$KMT_K8S_BIN/kubectl}
NS=kubevirt-migration-target
SA_USER=system:serviceaccount:$NS:migration-target-operator
export KUBECONFIG=${KMT_E2E_ADMIN_KUBECONFIG:-$RUN/admin.kubeconfig}

port_webhook() { echo $((KMT_E2E_PORT_BASE + 944 + ${1:-0} * 10)); }
port_metrics() { echo $((KMT_E2E_PORT_BASE + 980 + ${1:-0} * 10)); }
port_probes() { echo $((KMT_E2E_PORT_BASE + 981 + ${1:-0} * 10)); }

binary() {
  if [[ -n ${KMT_OPERATOR_BIN:-} ]]; then echo "$KMT_OPERATOR_BIN"; return; fi
  bazel build //cmd/operator:operator >&2 2>/dev/null || bazel build //cmd/operator:operator >&2
  echo "$(bazel info bazel-bin 2>/dev/null)/cmd/operator/operator"
}

# Only the RBAC-bearing objects and the admission policies of the default install (the
# Deployment, Service and webhook configurations are replaced by the out-of-cluster process
# and URL webhooks).
install() {
  "$KUBECTL" kustomize manifests/default | /usr/bin/python3 -c '
import sys, yaml
keep = {"Namespace", "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding",
        "CustomResourceDefinition", "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding"}
docs = [d for d in yaml.safe_load_all(sys.stdin) if d and d.get("kind") in keep]
yaml.safe_dump_all(docs, sys.stdout)' | "$KUBECTL" apply -f - >/dev/null
  "$KUBECTL" wait --for condition=Established --timeout 60s \
    crd/migrationtargetpolicies.migration-target.kubevirt.io >/dev/null
  webhooks on
}

webhooks() {
  case $1 in
    off)
      "$KUBECTL" delete validatingwebhookconfiguration migration-target --ignore-not-found >/dev/null
      "$KUBECTL" delete mutatingwebhookconfiguration migration-target --ignore-not-found >/dev/null ;;
    on)
      local ca url
      ca=$(base64 -w0 <"$RUN/pki/ca.crt")
      url="https://127.0.0.1:$(port_webhook 0)"
      /usr/bin/python3 - "$ca" "$url" manifests/default/webhooks.yaml <<'PY' | "$KUBECTL" apply -f - >/dev/null
import sys, yaml
ca, url, path = sys.argv[1], sys.argv[2], sys.argv[3]
docs = [d for d in yaml.safe_load_all(open(path)) if d]
for d in docs:
    for wh in d["webhooks"]:
        path = wh["clientConfig"]["service"]["path"]
        wh["clientConfig"] = {"url": url + path, "caBundle": ca}
yaml.safe_dump_all(docs, sys.stdout)
PY
      ;;
    *) echo "usage: $0 webhooks off|on" >&2; exit 2 ;;
  esac
}

# A kubeconfig carrying a real ServiceAccount token (TokenRequest), as in a pod.
sa_kubeconfig() {
  local kc=$RUN/operator-sa.kubeconfig token
  if [[ ! -s $kc ]]; then
    token=$("$KUBECTL" -n "$NS" create token migration-target-operator --duration=24h)
    cat >"$kc" <<KC
apiVersion: v1
kind: Config
clusters:
- name: kmt-e2e
  cluster: {server: "$KMT_E2E_APISERVER", certificate-authority: "$RUN/pki/ca.crt"}
users:
- name: $SA_USER
  user: {token: "$token"}
contexts:
- name: operator
  context: {cluster: kmt-e2e, user: "$SA_USER"}
current-context: operator
KC
  fi
  echo "$kc"
}

start_replica() {
  local name=$1 index=${2:-0}; shift 2 || shift $#
  local bin kc crt key dir p deadline_free=$((SECONDS + 30))
  # A replica that was just killed may still hold its ports for a moment.
  for p in "$(port_webhook "$index")" "$(port_metrics "$index")" "$(port_probes "$index")"; do
    while ss -Hltn "sport = :$p" | grep -q . && ((SECONDS < deadline_free)); do sleep 0.2; done
  done
  bin=$(binary)
  [[ -x $bin ]] || { kmt_log "operator: no binary at $bin"; return 1; }
  kc=$(sa_kubeconfig)
  # A fault scenario may route a replica through its own proxy (same identity).
  kc=${KMT_OPERATOR_KUBECONFIG:-$kc}
  read -r crt key < <(e2e/cluster.sh serving-cert "operator-$name")
  dir=$RUN/operator-$name-certs
  mkdir -p "$dir" && cp "$crt" "$dir/tls.crt" && cp "$key" "$dir/tls.key"
  e2e/cluster.sh start "operator-$name" -- "$bin" --kubeconfig "$kc" \
    --leader-elect --leader-election-namespace "$NS" \
    --webhook-port "$(port_webhook "$index")" --webhook-cert-mode files --webhook-cert-dir "$dir" \
    --webhook-client-ca "$RUN/pki/webhook-client-ca.crt" \
    --metrics-bind-address "127.0.0.1:$(port_metrics "$index")" \
    --health-probe-bind-address "127.0.0.1:$(port_probes "$index")" "$@" >/dev/null
  local deadline=$((SECONDS + 60))
  until curl -fsS "http://127.0.0.1:$(port_probes "$index")/readyz" >/dev/null 2>&1; do
    if ! kill -0 "$(cat "$RUN/pids/operator-$name.pid")" 2>/dev/null; then
      kmt_log "operator: $name exited; last lines of its log:"; tail -n 30 "$RUN/logs/operator-$name.log" >&2
      return 1
    fi
    if ((SECONDS > deadline)); then
      kmt_log "operator: $name not ready after 60s"; tail -n 30 "$RUN/logs/operator-$name.log" >&2
      return 1
    fi
    sleep 0.2
  done
  kmt_log "operator: $name ready (webhook :$(port_webhook "$index"), probes :$(port_probes "$index"))"
}

stop_replica() {
  local name=$1 sig=${2:-TERM} pidf=$RUN/pids/operator-$1.pid
  [[ -f $pidf ]] || return 0
  local pid; pid=$(cat "$pidf")
  kill "-$sig" "$pid" 2>/dev/null || true
  local deadline=$((SECONDS + 20))
  while kill -0 "$pid" 2>/dev/null && ((SECONDS < deadline)); do sleep 0.1; done
  kill -KILL "$pid" 2>/dev/null || true
  rm -f "$pidf"
}

case ${1:-} in
  install) install ;;
  start) shift; start_replica "$@" ;;
  stop) shift; stop_replica "$@" ;;
  webhooks) shift; webhooks "$@" ;;
  binary) binary ;;
  *) sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//' >&2; exit 2 ;;
esac
