#!/usr/bin/env bash
# A real control plane on 127.0.0.1 for the e2e tier (see e2e/README.md):
# etcd, kube-apiserver, kube-scheduler, kube-controller-manager (namespace
# lifecycle, garbage collection, service accounts; no node lifecycle), KubeVirt's
# CRDs and a KubeVirt CR, KubeVirt's virt-api (its webhooks and the
# subresources.kubevirt.io APIService, registered as virt-operator would) and
# virt-controller (out of cluster, each under a restart loop) and the fake node
# agent with its fake nodes.
#
#   e2e/cluster.sh up                       start everything with fresh certificates and data
#   e2e/cluster.sh down                     stop everything started by `up`, remove the run dir
#   e2e/cluster.sh env                      print shell exports for a running cluster
#   e2e/cluster.sh kubeconfig NAME [GROUP]  mint a client-certificate kubeconfig for user NAME
#                                           (optionally in GROUP) at $KMT_E2E_DIR/NAME.kubeconfig
#   e2e/cluster.sh serving-cert NAME        mint a serving certificate for 127.0.0.1/localhost
#                                           signed by the cluster CA: $KMT_E2E_DIR/pki/NAME.{crt,key}
#   e2e/cluster.sh start NAME -- CMD ARGS   start an extra process (e.g. the operator) that
#                                           `down` stops; logs in $KMT_E2E_DIR/logs/NAME.log
#
# Environment: KMT_E2E_DIR (run dir, default /tmp/kmt-e2e), KMT_E2E_PORT_BASE (default
# 26000), KMT_E2E_NODES (fake node names, default node-a,node-b,node-c),
# KMT_E2E_VIRT_CONTROLLER_IDENTITY (kubevirt: KubeVirt's own RBAC for virt-controller,
# the default; admin: system:masters), KMT_E2E_REAL_NODE (1, the default on the default pair: also
# the real node infra-0 of e2e/node.sh, which needs root; 0: only the fake nodes),
# KMT_E2E_IN_CLUSTER (1: pods on the real node reach the API server as an installed operator does,
# and the namespace defaults the in-cluster tier uses are admitted; see e2e/README.md "The
# in-cluster tier"; needs the real node).
# -E: the ERR trap of `up` also fires for a command failing inside a function.
set -Eeuo pipefail
source "$(dirname "$0")/lib.sh"

RUN=$KMT_E2E_DIR
# kubectl's discovery cache is keyed by host:port only: a cluster started again on the same
# ports would otherwise be read through the previous one's resource list.
export KUBECACHEDIR=$RUN/kube-cache
PKI=$RUN/pki
LOGS=$RUN/logs
PIDS=$RUN/pids
APISERVER_URL=https://127.0.0.1:$KMT_PORT_APISERVER
NODES=${KMT_E2E_NODES:-node-a,node-b,node-c}
VC_IDENTITY=${KMT_E2E_VIRT_CONTROLLER_IDENTITY:-kubevirt}
if [[ $KMT_E2E_MATRIX == default ]]; then REAL_NODE=${KMT_E2E_REAL_NODE:-1}; else REAL_NODE=${KMT_E2E_REAL_NODE:-0}; fi
IN_CLUSTER=${KMT_E2E_IN_CLUSTER:-0}
if [[ $IN_CLUSTER == 1 && $REAL_NODE != 1 ]]; then
  kmt_log "cluster: KMT_E2E_IN_CLUSTER=1 needs the real node (KMT_E2E_REAL_NODE=1)"
  exit 1
fi
# The address the real node's kubelet registers (node.sh's --node-ip): loopback is refused there.
node_ip() { ip -4 -o addr show scope global | awk '{print $4}' | cut -d/ -f1 | head -n 1; }
# Never pulled: there is no kubelet. A reserved TLD makes that obvious.
LAUNCHER_IMAGE=registry.invalid/kubevirt/virt-launcher:$KUBEVIRT_VERSION

load_bins() {
  for b in "${KMT_K8S_BINARIES[@]}"; do [[ -x $KMT_K8S_BIN/$b ]] || missing=1; done
  for b in "${KMT_KV_BINARIES[@]}"; do [[ -x $KMT_KV_BIN/$b ]] || missing=1; done
  for b in "${KMT_TOOLS_BINARIES[@]}"; do [[ -x $KMT_TOOLS_BIN/$b ]] || missing=1; done
  if [[ ${missing:-0} == 1 ]]; then
    "$KMT_ROOT/e2e/build-binaries.sh"
  fi
  KUBECTL=$KMT_K8S_BIN/kubectl
}

k() { "$KUBECTL" --kubeconfig "$RUN/admin.kubeconfig" "$@"; }

# wait_until DESCRIPTION TIMEOUT_SECONDS COMMAND...: polls COMMAND until it succeeds.
wait_until() {
  local what=$1 timeout=$2; shift 2
  local deadline=$((SECONDS + timeout))
  until "$@" >/dev/null 2>&1; do
    if ((SECONDS >= deadline)); then
      kmt_log "cluster: timed out after ${timeout}s waiting for $what"
      return 1
    fi
    sleep 0.2
  done
}

# ---------------------------------------------------------------- certificates
openssl_quiet() { openssl "$@" 2>/dev/null; }

make_ca() {
  openssl_quiet req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=kmt-e2e-ca" \
    -keyout "$PKI/ca.key" -out "$PKI/ca.crt"
}

# sign NAME SUBJECT EXTFILE_CONTENT [KEY]: KEY is openssl req's -newkey argument (default rsa:2048)
sign() {
  local name=$1 subj=$2 ext=$3 key=${4:-rsa:2048}
  # shellcheck disable=SC2086  # "ec -pkeyopt ..." is several words on purpose
  openssl_quiet req -newkey $key -nodes -subj "$subj" -keyout "$PKI/$name.key" -out "$PKI/$name.csr"
  printf '%s\n' "$ext" >"$PKI/$name.ext"
  openssl_quiet x509 -req -in "$PKI/$name.csr" -CA "$PKI/ca.crt" -CAkey "$PKI/ca.key" -CAcreateserial \
    -days 2 -extfile "$PKI/$name.ext" -out "$PKI/$name.crt"
  rm -f "$PKI/$name.csr" "$PKI/$name.ext"
}

# Webhook serving certificates are EC P-256, as the operator's self-managed ones are
# (webhook/certs/self_signed.cc): what a handshake costs here is what it costs in the default install.
serving_cert() { # NAME
  sign "$1" "/CN=$1" "basicConstraints=CA:FALSE
keyUsage=digitalSignature
extendedKeyUsage=serverAuth
subjectAltName=IP:127.0.0.1,DNS:localhost" "ec -pkeyopt ec_paramgen_curve:P-256"
}

# client_kubeconfig NAME USER [GROUP...]
client_kubeconfig() {
  local name=$1 user=$2; shift 2
  local subj="/CN=$user"
  for g in "$@"; do subj="$subj/O=$g"; done
  sign "client-$name" "$subj" "basicConstraints=CA:FALSE
keyUsage=digitalSignature,keyEncipherment
extendedKeyUsage=clientAuth"
  cat >"$RUN/$name.kubeconfig" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: kmt-e2e
  cluster:
    server: $APISERVER_URL
    certificate-authority: $PKI/ca.crt
users:
- name: $user
  user:
    client-certificate: $PKI/client-$name.crt
    client-key: $PKI/client-$name.key
contexts:
- name: $name
  context: {cluster: kmt-e2e, user: "$user"}
current-context: $name
EOF
}

# The aggregation layer's own CA and client (kube-apiserver --requestheader-*/--proxy-client-*):
# kube-apiserver proves to virt-api with this certificate that the X-Remote-User headers it
# forwards are its own. A CA apart from the cluster CA, as kubeadm's front-proxy-ca, so no
# ordinary client certificate can pass such headers.
make_front_proxy_pki() {
  openssl_quiet req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=kmt-e2e-front-proxy-ca" \
    -keyout "$PKI/front-proxy-ca.key" -out "$PKI/front-proxy-ca.crt"
  openssl_quiet req -newkey rsa:2048 -nodes -subj "/CN=front-proxy-client" \
    -keyout "$PKI/front-proxy-client.key" -out "$PKI/front-proxy-client.csr"
  printf 'basicConstraints=CA:FALSE\nkeyUsage=digitalSignature,keyEncipherment\nextendedKeyUsage=clientAuth\n' \
    >"$PKI/front-proxy-client.ext"
  openssl_quiet x509 -req -in "$PKI/front-proxy-client.csr" -CA "$PKI/front-proxy-ca.crt" \
    -CAkey "$PKI/front-proxy-ca.key" -CAcreateserial -days 2 -extfile "$PKI/front-proxy-client.ext" \
    -out "$PKI/front-proxy-client.crt"
  rm -f "$PKI/front-proxy-client.csr" "$PKI/front-proxy-client.ext"
}

# Mutual TLS between kube-apiserver and the operator's webhook (--webhook-client-ca), as the
# Kubernetes documentation on authenticating API servers to webhooks describes: a CA of its
# own (no other client certificate of the cluster passes), the API server's client
# certificate in the kubeconfig its admission configuration names, with one user per webhook
# address (replica 0's URL: the webhook configurations point there; KubeVirt's own webhooks
# get no client certificate). The e2e probes hold a certificate of that CA too
# (webhook-probe), so they reach the HTTP layer as a holder of stolen credentials would.
make_webhook_client_pki() {
  local name
  openssl_quiet req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 \
    -subj "/CN=kmt-e2e-webhook-client-ca" -keyout "$PKI/webhook-client-ca.key" -out "$PKI/webhook-client-ca.crt"
  for name in apiserver-webhook-client webhook-probe; do
    openssl_quiet req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=$name" \
      -keyout "$PKI/$name.key" -out "$PKI/$name.csr"
    printf 'basicConstraints=CA:FALSE\nkeyUsage=digitalSignature\nextendedKeyUsage=clientAuth\n' >"$PKI/$name.ext"
    openssl_quiet x509 -req -in "$PKI/$name.csr" -CA "$PKI/webhook-client-ca.crt" \
      -CAkey "$PKI/webhook-client-ca.key" -CAcreateserial -days 2 -extfile "$PKI/$name.ext" -out "$PKI/$name.crt"
    rm -f "$PKI/$name.csr" "$PKI/$name.ext"
  done
  cat >"$PKI/webhook-clients.kubeconfig" <<EOF
apiVersion: v1
kind: Config
users:
- name: "127.0.0.1:$((KMT_E2E_PORT_BASE + 944))"
  user:
    client-certificate: $PKI/apiserver-webhook-client.crt
    client-key: $PKI/apiserver-webhook-client.key
EOF
  cat >"$PKI/admission.yaml" <<EOF
apiVersion: apiserver.config.k8s.io/v1
kind: AdmissionConfiguration
plugins:
- name: ValidatingAdmissionWebhook
  configuration:
    apiVersion: apiserver.config.k8s.io/v1
    kind: WebhookAdmissionConfiguration
    kubeConfigFile: $PKI/webhook-clients.kubeconfig
- name: MutatingAdmissionWebhook
  configuration:
    apiVersion: apiserver.config.k8s.io/v1
    kind: WebhookAdmissionConfiguration
    kubeConfigFile: $PKI/webhook-clients.kubeconfig
EOF
}

make_pki() {
  mkdir -p "$PKI"
  make_ca
  make_front_proxy_pki
  make_webhook_client_pki
  # The API server also answers pods as the Service kubernetes.default (10.96.0.1, the first
  # address of --service-cluster-ip-range) and at the node's address it advertises to them.
  local in_cluster_sans=
  [[ $IN_CLUSTER != 1 ]] || in_cluster_sans=",IP:10.96.0.1,IP:$(node_ip),DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc"
  sign apiserver "/CN=apiserver" "basicConstraints=CA:FALSE
keyUsage=digitalSignature
extendedKeyUsage=serverAuth
subjectAltName=IP:127.0.0.1,DNS:localhost$in_cluster_sans" "ec -pkeyopt ec_paramgen_curve:P-256"
  serving_cert virt-controller
  # virt-api is reached by URL for its webhooks (127.0.0.1) and through the aggregator for
  # its subresources, which verifies the name <service>.<namespace>.svc.
  sign virt-api "/CN=virt-api" "basicConstraints=CA:FALSE
keyUsage=digitalSignature
extendedKeyUsage=serverAuth
subjectAltName=IP:127.0.0.1,DNS:localhost,DNS:virt-api.kubevirt.svc" "ec -pkeyopt ec_paramgen_curve:P-256"
  # virt-api's client certificate towards virt-handler (console, VNC): never used here,
  # but virt-api loads it at start.
  sign virt-api-handler-client "/CN=kubevirt.io:system:client:virt-handler" "basicConstraints=CA:FALSE
keyUsage=digitalSignature,keyEncipherment
extendedKeyUsage=clientAuth"
  # kube-apiserver's client certificate towards kubelets (logs, exec, port-forward); the kubelet
  # authenticates it against the cluster CA and authorizes system:masters through RBAC.
  sign apiserver-kubelet-client "/CN=kube-apiserver-kubelet-client/O=system:masters" "basicConstraints=CA:FALSE
keyUsage=digitalSignature,keyEncipherment
extendedKeyUsage=clientAuth"
  openssl_quiet genrsa -out "$PKI/sa.key" 2048
  openssl_quiet rsa -in "$PKI/sa.key" -pubout -out "$PKI/sa.pub"
  client_kubeconfig admin kmt-admin system:masters
  client_kubeconfig vm-owner vm-owner
  client_kubeconfig scheduler system:kube-scheduler
  client_kubeconfig controller-manager system:kube-controller-manager system:masters
  client_kubeconfig node-agent kmt-fake-node-agent system:masters
  client_kubeconfig virt-api system:serviceaccount:kubevirt:kubevirt-apiserver \
    system:serviceaccounts system:serviceaccounts:kubevirt
  if [[ $VC_IDENTITY == admin ]]; then
    client_kubeconfig virt-controller kmt-virt-controller system:masters
  else
    client_kubeconfig virt-controller system:serviceaccount:kubevirt:kubevirt-controller \
      system:serviceaccounts system:serviceaccounts:kubevirt
  fi
}

# ---------------------------------------------------------------- processes
# start NAME CMD...: runs CMD in the background in its own process group, logs
# to logs/NAME.log, records the pid in pids/NAME.pid.
start() {
  local name=$1; shift
  setsid "$@" >>"$LOGS/$name.log" 2>&1 </dev/null &
  echo $! >"$PIDS/$name.pid"
}

alive() { [[ -f $PIDS/$1.pid ]] && kill -0 "$(cat "$PIDS/$1.pid")" 2>/dev/null; }

# Fails fast (with the log tail) when a process died while we wait for it.
expect_alive() {
  if ! alive "$1"; then
    kmt_log "cluster: $1 exited; last lines of $LOGS/$1.log:"
    tail -n 30 "$LOGS/$1.log" >&2 || true
    return 1
  fi
}

healthy_etcd() { curl -fsS "http://127.0.0.1:$KMT_PORT_ETCD/health" | grep -q '"health":"true"'; }
ready_apiserver() { # /readyz, as the admin
  curl -fsS --cacert "$PKI/ca.crt" --cert "$PKI/client-admin.crt" --key "$PKI/client-admin.key" \
    "https://127.0.0.1:$KMT_PORT_APISERVER/readyz" | grep -qx ok
}
healthy_local() { # PORT: components serving /healthz with a self-signed certificate
  curl -fsSk "https://127.0.0.1:$1/healthz" | grep -qx ok
}

# wait_for PROC DESCRIPTION TIMEOUT CMD...: polls CMD until it succeeds; fails at
# once (with the log tail) if process PROC exited, or after TIMEOUT seconds.
wait_for() {
  local proc=$1 what=$2 timeout=$3; shift 3
  local deadline=$((SECONDS + timeout))
  until "$@" >/dev/null 2>&1; do
    expect_alive "$proc" || return 1
    if ((SECONDS >= deadline)); then
      kmt_log "cluster: timed out after ${timeout}s waiting for $what; last lines of $LOGS/$proc.log:"
      tail -n 30 "$LOGS/$proc.log" >&2 || true
      return 1
    fi
    sleep 0.2
  done
}

start_etcd() {
  mkdir -p "$RUN/etcd-data"
  start etcd "$KMT_K8S_BIN/etcd" --name kmt-e2e --data-dir "$RUN/etcd-data" \
    --listen-client-urls "http://127.0.0.1:$KMT_PORT_ETCD" --advertise-client-urls "http://127.0.0.1:$KMT_PORT_ETCD" \
    --listen-peer-urls "http://127.0.0.1:$KMT_PORT_ETCD_PEER" --initial-advertise-peer-urls "http://127.0.0.1:$KMT_PORT_ETCD_PEER" \
    --initial-cluster "kmt-e2e=http://127.0.0.1:$KMT_PORT_ETCD_PEER" \
    --unsafe-no-fsync --log-level warn
  wait_for etcd etcd 60 healthy_etcd
}

start_apiserver() {
  # TaintNodesByCondition would taint every new node not-ready; only the node
  # lifecycle controller (not run: no kubelets) would remove that taint.
  local addr=(--bind-address 127.0.0.1 --advertise-address 127.0.0.1 --endpoint-reconciler-type none)
  local plugins=MutatingAdmissionWebhook,ValidatingAdmissionWebhook
  if [[ $IN_CLUSTER == 1 ]]; then
    # A pod reaches the API server as kubernetes.default: kube-proxy sends 10.96.0.1:443 to the
    # endpoint the API server writes for itself (the lease reconciler), which must be an address
    # the pod can reach (the node's; a loopback endpoint is invalid). PodNodeSelector and
    # PodTolerationRestriction apply a namespace's node selector and tolerations to its pods.
    addr=(--bind-address 0.0.0.0 --advertise-address "$(node_ip)" --endpoint-reconciler-type lease)
    plugins=$plugins,PodNodeSelector,PodTolerationRestriction
    # The operator's own requests, audited (metadata only): which ServiceAccount token each
    # carried (user.extra credential-id "JTI=..."), for the token-rotation scenario.
    cat >"$RUN/audit-policy.yaml" <<'YAML'
apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
- level: Metadata
  users: ["system:serviceaccount:kubevirt-migration-target:migration-target-operator"]
- level: None
YAML
    addr+=(--audit-policy-file "$RUN/audit-policy.yaml" --audit-log-path "$LOGS/audit.log" --audit-log-format json)
  fi
  start kube-apiserver "$KMT_K8S_BIN/kube-apiserver" \
    --etcd-servers "http://127.0.0.1:$KMT_PORT_ETCD" \
    "${addr[@]}" --secure-port "$KMT_PORT_APISERVER" \
    --tls-cert-file "$PKI/apiserver.crt" --tls-private-key-file "$PKI/apiserver.key" \
    --client-ca-file "$PKI/ca.crt" \
    --requestheader-client-ca-file "$PKI/front-proxy-ca.crt" --requestheader-allowed-names front-proxy-client \
    --requestheader-username-headers X-Remote-User --requestheader-group-headers X-Remote-Group \
    --requestheader-extra-headers-prefix X-Remote-Extra- \
    --proxy-client-cert-file "$PKI/front-proxy-client.crt" --proxy-client-key-file "$PKI/front-proxy-client.key" \
    --service-account-key-file "$PKI/sa.pub" --service-account-signing-key-file "$PKI/sa.key" \
    --service-account-issuer https://kubernetes.default.svc.cluster.local \
    --service-cluster-ip-range 10.96.0.0/16 \
    --authorization-mode RBAC \
    --enable-admission-plugins "$plugins" \
    --admission-control-config-file "$PKI/admission.yaml" \
    --disable-admission-plugins TaintNodesByCondition \
    --allow-privileged=true --profiling=false \
    --kubelet-client-certificate "$PKI/apiserver-kubelet-client.crt" --kubelet-client-key "$PKI/apiserver-kubelet-client.key" \
    --kubelet-certificate-authority "$PKI/ca.crt" --kubelet-preferred-address-types InternalIP \
    --v 1
  wait_for kube-apiserver "kube-apiserver /readyz" 120 ready_apiserver
}

start_scheduler() {
  start kube-scheduler "$KMT_K8S_BIN/kube-scheduler" \
    --kubeconfig "$RUN/scheduler.kubeconfig" \
    --authentication-kubeconfig "$RUN/scheduler.kubeconfig" --authorization-kubeconfig "$RUN/scheduler.kubeconfig" \
    --bind-address 127.0.0.1 --secure-port "$KMT_PORT_SCHEDULER" --leader-elect=false --profiling=false --v 1
  wait_for kube-scheduler "kube-scheduler /healthz" 60 healthy_local "$KMT_PORT_SCHEDULER"
}

# The disruption controller writes PodDisruptionBudget status: KubeVirt before v1.6 starts a
# LiveMigrate VMI's migration only once the controller has observed the PDB virt-controller
# expanded for it (pkg/virt-controller/watch/migration isMigrationProtected), and the
# eviction API reads that status too, as on any real cluster.
start_controller_manager() {
  # The real node's Services need Endpoints/EndpointSlices (kube-proxy reads the slices).
  local node_controllers=
  [[ $REAL_NODE != 1 ]] || node_controllers=,endpoints-controller,endpointslice-controller
  # The in-cluster tier installs the operator as a Deployment: its ReplicaSet and pods.
  [[ $IN_CLUSTER != 1 ]] || node_controllers=$node_controllers,deployment-controller,replicaset-controller
  start kube-controller-manager "$KMT_K8S_BIN/kube-controller-manager" \
    --kubeconfig "$RUN/controller-manager.kubeconfig" \
    --authentication-kubeconfig "$RUN/controller-manager.kubeconfig" --authorization-kubeconfig "$RUN/controller-manager.kubeconfig" \
    --bind-address 127.0.0.1 --secure-port "$KMT_PORT_CONTROLLER_MANAGER" --leader-elect=false --profiling=false \
    --controllers namespace-controller,garbage-collector-controller,serviceaccount-controller,serviceaccount-token-controller,root-ca-certificate-publisher-controller,clusterrole-aggregation-controller,disruption-controller$node_controllers \
    --service-account-private-key-file "$PKI/sa.key" --root-ca-file "$PKI/ca.crt" \
    --use-service-account-credentials=false --v 1
  wait_for kube-controller-manager "kube-controller-manager /healthz" 60 healthy_local "$KMT_PORT_CONTROLLER_MANAGER"
}

install_kubevirt() {
  "$KMT_KV_BIN/crdgen" crds >"$RUN/kubevirt-crds.yaml"
  k apply --server-side -f "$RUN/kubevirt-crds.yaml" >/dev/null
  k wait --for condition=Established --timeout 60s -f "$RUN/kubevirt-crds.yaml" >/dev/null
  k create namespace kubevirt >/dev/null
  # The ServiceAccount admission plugin rejects pods whose ServiceAccount is
  # missing; kube-controller-manager creates "default" in every namespace.
  wait_until "ServiceAccount kubevirt/default" 60 k -n kubevirt get serviceaccount default
  if [[ $VC_IDENTITY != admin ]]; then
    "$KMT_KV_BIN/crdgen" controller-rbac kubevirt >"$RUN/virt-controller-rbac.yaml"
    k apply -f "$RUN/virt-controller-rbac.yaml" >/dev/null
  fi
  # virt-controller only reads configuration from a KubeVirt CR whose status.phase
  # is set (pkg/virt-config/configuration.go GetConfigFromKubeVirtCR); virt-operator
  # would set it. Migration limits are raised for load scenarios. virt-api's client rate
  # limit is v1.9's default (QPS 200, burst 400), set explicitly so that every KubeVirt of
  # the matrix runs with it: v1.5's default was QPS 5, burst 10, and its migration admission
  # (API reads per review) then queued reviews in its rate limiter past the API server's
  # 10 s webhook timeout under the abuse scenario's 16 concurrent creates.
  k apply -f - >/dev/null <<EOF
apiVersion: kubevirt.io/v1
kind: KubeVirt
metadata:
  name: kubevirt
  namespace: kubevirt
spec:
  configuration:
    developerConfiguration:
      useEmulation: true
    migrations:
      parallelMigrationsPerCluster: 1000
      parallelOutboundMigrationsPerNode: 1000
    apiConfiguration:
      restClient:
        rateLimiter:
          tokenBucketRateLimiter: {qps: 200, burst: 400}
EOF
  k -n kubevirt patch kubevirt kubevirt --subresource status --type merge \
    -p '{"status":{"phase":"Deployed","defaultArchitecture":"amd64"}}' >/dev/null
}

start_virt_controller() {
  # virt-controller ignores $KUBECONFIG (kubecli.GetConfig reads only --kubeconfig
  # and --master), exits when it loses the Lease kubevirt/virt-controller and when
  # the CDI DataVolume CRD appears or vanishes: run it under a restart loop.
  cat >"$RUN/virt-controller-loop.sh" <<EOF
#!/usr/bin/env bash
trap 'kill \$child 2>/dev/null; exit 0' TERM INT
while :; do
  echo "--- virt-controller starting \$(date -u +%FT%TZ)"
  "$KMT_KV_BIN/virt-controller" --kubeconfig "$RUN/virt-controller.kubeconfig" \\
    --launcher-image "$LAUNCHER_IMAGE" --exporter-image "${LAUNCHER_IMAGE/virt-launcher/virt-exportserver}" \\
    --listen 127.0.0.1 --port "$KMT_PORT_VIRT_CONTROLLER" \\
    --prom-cert-file "$PKI/virt-controller.crt" --prom-key-file "$PKI/virt-controller.key" &
  child=\$!
  wait \$child
  echo "--- virt-controller exited with \$? \$(date -u +%FT%TZ)"
  sleep 1
done
EOF
  chmod +x "$RUN/virt-controller-loop.sh"
  start virt-controller "$RUN/virt-controller-loop.sh"
  wait_for virt-controller "virt-controller leadership" 120 virt_controller_leading
}

# virt-api out of cluster: the namespace comes from kubevirt.io/client-go util.GetNamespace
# (no service account file -> "kubevirt"); the client CA for aggregated requests from the
# extension-apiserver-authentication ConfigMap kube-apiserver writes (readRequestHeader);
# serving and handler-client certificates from files (--tls-*-file, --handler-*-file).
# virt-operator would then register virt-api's webhooks, its Service and the
# subresources.kubevirt.io APIServices; here the same objects come from KubeVirt's
# generator (crdgen), the webhooks pointed at virt-api's loopback URL, the Service an
# ExternalName "localhost" (kube-apiserver's aggregator dials an ExternalName service's
# name at the APIService's port: k8s.io/apiserver pkg/util/proxy ResolveCluster).
start_virt_api() {
  "$KMT_KV_BIN/crdgen" virt-api-rbac kubevirt >"$RUN/virt-api-rbac.yaml"
  k apply -f "$RUN/virt-api-rbac.yaml" >/dev/null
  cat >"$RUN/virt-api-loop.sh" <<EOF
#!/usr/bin/env bash
trap 'kill \$child 2>/dev/null; exit 0' TERM INT
while :; do
  echo "--- virt-api starting \$(date -u +%FT%TZ)"
  "$KMT_KV_BIN/virt-api" --kubeconfig "$RUN/virt-api.kubeconfig" \\
    --listen 127.0.0.1 --port "$KMT_PORT_VIRT_API" \\
    --tls-cert-file "$PKI/virt-api.crt" --tls-key-file "$PKI/virt-api.key" \\
    --handler-cert-file "$PKI/virt-api-handler-client.crt" --handler-key-file "$PKI/virt-api-handler-client.key" &
  child=\$!
  wait \$child
  echo "--- virt-api exited with \$? \$(date -u +%FT%TZ)"
  sleep 1
done
EOF
  chmod +x "$RUN/virt-api-loop.sh"
  start virt-api "$RUN/virt-api-loop.sh"
  wait_for virt-api "virt-api serving" 120 virt_api_serving
  "$KMT_KV_BIN/crdgen" virt-api-webhooks kubevirt "https://127.0.0.1:$KMT_PORT_VIRT_API" "$PKI/ca.crt" \
    >"$RUN/virt-api-webhooks.yaml"
  "$KMT_KV_BIN/crdgen" virt-api-apiservices kubevirt "$KMT_PORT_VIRT_API" "$PKI/ca.crt" >"$RUN/virt-api-apiservices.yaml"
  k apply -f - >/dev/null <<EOF
apiVersion: v1
kind: Service
metadata:
  name: virt-api
  namespace: kubevirt
spec:
  type: ExternalName
  externalName: localhost
EOF
  k apply -f "$RUN/virt-api-webhooks.yaml" -f "$RUN/virt-api-apiservices.yaml" >/dev/null
  wait_for virt-api "APIService v1.subresources.kubevirt.io Available" 120 \
    k wait --for condition=Available --timeout 5s apiservice v1.subresources.kubevirt.io
}

virt_api_serving() { # any TLS answer from its port (virt-api serves once its caches are synced)
  curl -sk -o /dev/null "https://127.0.0.1:$KMT_PORT_VIRT_API/"
}

virt_controller_leading() {
  [[ -n $(k -n kubevirt get lease virt-controller -o jsonpath='{.spec.holderIdentity}' 2>/dev/null) ]] &&
    grep -q "STARTING controllers" "$LOGS/virt-controller.log"
}

start_agent() {
  "$KMT_KV_BIN/crdgen" handler-rbac kubevirt >"$RUN/virt-handler-rbac.yaml"
  k apply -f "$RUN/virt-handler-rbac.yaml" >/dev/null
  start fake-node-agent "$KMT_TOOLS_BIN/fake-node-agent" --kubeconfig "$RUN/node-agent.kubeconfig" --nodes "$NODES"
  wait_for fake-node-agent "fake-node-agent" 60 agent_ready
}

agent_ready() {
  grep -q "fake-node-agent ready" "$LOGS/fake-node-agent.log"
}

# ---------------------------------------------------------------- commands
cmd_up() {
  for f in "$PIDS"/*.pid; do
    if [[ -f $f ]] && kill -0 "$(cat "$f")" 2>/dev/null; then
      kmt_log "cluster: $RUN holds a running cluster ($(basename "$f" .pid) is alive); run 'e2e/cluster.sh down' first"
      return 1
    fi
  done
  # A port already taken (another cluster, another KMT_E2E_PORT_BASE user) would
  # make a health probe answer for someone else's component.
  local p
  for p in "$KMT_PORT_ETCD" "$KMT_PORT_ETCD_PEER" "$KMT_PORT_APISERVER" "$KMT_PORT_SCHEDULER" \
    "$KMT_PORT_CONTROLLER_MANAGER" "$KMT_PORT_VIRT_CONTROLLER" "$KMT_PORT_VIRT_API"; do
    if (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
      kmt_log "cluster: port $p on 127.0.0.1 is in use; pick another KMT_E2E_PORT_BASE (now $KMT_E2E_PORT_BASE)"
      return 1
    fi
  done
  load_bins
  local t0=$SECONDS
  rm -rf "$RUN"
  mkdir -p "$RUN" "$LOGS" "$PIDS"
  # On failure stop what started but keep the run dir (logs) for inspection;
  # a later `down` removes it.
  trap 'kmt_log "cluster: up failed at cluster.sh line $LINENO: $BASH_COMMAND; stopping (logs kept in $LOGS)"; trap - ERR; KMT_E2E_KEEP=1 cmd_down' ERR
  make_pki
  start_etcd
  start_apiserver
  kmt_log "cluster: kube-apiserver ready after $((SECONDS - t0))s"
  start_controller_manager
  start_scheduler
  install_kubevirt
  start_virt_api
  kmt_log "cluster: virt-api ready after $((SECONDS - t0))s"
  start_agent
  start_virt_controller
  if [[ $REAL_NODE == 1 ]]; then
    "$KMT_ROOT/e2e/node.sh" up
  fi
  write_env
  trap - ERR
  kmt_log "cluster: up in $((SECONDS - t0))s; source <(e2e/cluster.sh env)"
}

write_env() {
  cat >"$RUN/env" <<EOF
export KMT_E2E_DIR=$RUN
export KMT_E2E_PORT_BASE=$KMT_E2E_PORT_BASE
export KUBECONFIG=$RUN/admin.kubeconfig
export KMT_E2E_ADMIN_KUBECONFIG=$RUN/admin.kubeconfig
export KMT_E2E_VM_OWNER_KUBECONFIG=$RUN/vm-owner.kubeconfig
export KMT_E2E_APISERVER=$APISERVER_URL
export KMT_E2E_CA=$PKI/ca.crt
export KMT_E2E_WEBHOOK_CLIENT_CA=$PKI/webhook-client-ca.crt
export KMT_E2E_WEBHOOK_CLIENT_CERT=$PKI/webhook-probe.crt
export KMT_E2E_WEBHOOK_CLIENT_KEY=$PKI/webhook-probe.key
export KMT_E2E_NODES=$NODES
export KMT_KUBECTL=$KUBECTL
export KUBECACHEDIR=$RUN/kube-cache
export KMT_VIRTCTL=$KMT_KV_BIN/virtctl
export KMT_E2E_MATRIX=$KMT_E2E_MATRIX
export KMT_E2E_KUBERNETES_VERSION=$KUBERNETES_VERSION
export KMT_E2E_KUBEVIRT_VERSION=$KUBEVIRT_VERSION
export KMT_DESCHEDULER=$KMT_DESCHEDULER_BIN/descheduler
export PATH=$KMT_K8S_BIN:\$PATH
export KMT_E2E_REAL_NODE=$REAL_NODE
export KMT_E2E_IN_CLUSTER=$IN_CLUSTER
EOF
  [[ $REAL_NODE != 1 ]] || "$KMT_ROOT/e2e/node.sh" env >>"$RUN/env"
}

# Stops every process `up` or `start` recorded: TERM to its process group,
# then KILL after a bounded wait.
cmd_down() {
  # The real node first, while the API server still answers (its pods are deleted through it).
  "$KMT_ROOT/e2e/node.sh" down || true
  if [[ -d $PIDS ]]; then
    local pids=()
    for f in "$PIDS"/*.pid; do
      [[ -f $f ]] || continue
      pids+=("$(cat "$f")")
    done
    # reverse start order: agent/controllers first, etcd last
    for ((i = ${#pids[@]} - 1; i >= 0; i--)); do kill -TERM -- "-${pids[i]}" 2>/dev/null || true; done
    local deadline=$((SECONDS + 15))
    for p in "${pids[@]}"; do
      while kill -0 "$p" 2>/dev/null && ((SECONDS < deadline)); do sleep 0.1; done
      kill -KILL -- "-$p" 2>/dev/null || true
    done
  fi
  if [[ ${KMT_E2E_KEEP:-0} == 1 ]]; then
    rm -rf "$PIDS"
    kmt_log "cluster: stopped; kept $RUN (KMT_E2E_KEEP=1)"
  else
    rm -rf "$RUN"
    kmt_log "cluster: stopped; removed $RUN"
  fi
}

cmd_env() {
  [[ -f $RUN/env ]] || { kmt_log "cluster: no cluster in $RUN"; return 1; }
  cat "$RUN/env"
}

case ${1:-} in
  up) cmd_up ;;
  down) cmd_down ;;
  env) cmd_env ;;
  kubeconfig)
    [[ $# -ge 2 ]] || { echo "usage: $0 kubeconfig NAME [GROUP...]" >&2; exit 2; }
    name=$2; shift 2
    client_kubeconfig "$name" "$name" "$@"
    echo "$RUN/$name.kubeconfig" ;;
  serving-cert)
    [[ $# -eq 2 ]] || { echo "usage: $0 serving-cert NAME" >&2; exit 2; }
    serving_cert "$2"
    echo "$PKI/$2.crt $PKI/$2.key" ;;
  start)
    [[ $# -ge 4 && $3 == -- ]] || { echo "usage: $0 start NAME -- CMD ARGS..." >&2; exit 2; }
    name=$2; shift 3
    start "$name" "$@"
    echo "$PIDS/$name.pid" ;;
  *)
    sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//' >&2
    exit 2 ;;
esac
