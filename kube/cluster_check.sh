#!/usr/bin/env bash
# Runs //kube:cluster_test against a throwaway etcd + kube-apiserver.
#
# Uses the Kubernetes binaries that e2e/build-binaries.sh builds (etcd and
# kube-apiserver only; this script does not touch e2e/). Certificates, data and
# logs live in a temporary directory removed on exit. The API server serves
# pods without a watch cache (--watch-cache-sizes=pods#0) so that an etcd
# compaction makes an old resourceVersion answer 410 at once.
#
#   kube/cluster_check.sh                 # all cluster tests
#   KMT_MEMORY_PODS=2000 kube/cluster_check.sh "Memory per cached pod"
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BIN=${KMT_K8S_BIN:-$(ls -d "$HOME"/.cache/kubevirt-migration-target/bin/k8s-* 2>/dev/null | head -1)}
[[ -x $BIN/kube-apiserver && -x $BIN/etcd ]] || { echo "no etcd/kube-apiserver under '$BIN' (run e2e/build-binaries.sh)"; exit 1; }
PORT_BASE=${KMT_KUBE_PORT_BASE:-31000}  # away from e2e/cluster.sh (26000) and other runs
ETCD_PORT=$((PORT_BASE + 379)); ETCD_PEER=$((PORT_BASE + 380)); API_PORT=$((PORT_BASE + 443))
for p in $ETCD_PORT $ETCD_PEER $API_PORT; do
  if (exec 3<>/dev/tcp/127.0.0.1/$p) 2>/dev/null; then
    echo "port $p is in use; set KMT_KUBE_PORT_BASE to another base"; exit 1
  fi
done
DIR=$(mktemp -d /tmp/kmt-kube-cluster.XXXXXX)
PIDS=()
cleanup() {
  [[ -f $DIR/apiserver.pid ]] && kill "$(cat "$DIR/apiserver.pid")" 2>/dev/null || true
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  if [[ ${KMT_KEEP:-0} == 1 ]]; then echo "kept $DIR"; else rm -rf "$DIR"; fi
}
trap cleanup EXIT

cd "$DIR"
openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.crt -days 2 -subj /CN=kmt-kube-ca 2>/dev/null
openssl req -newkey rsa:2048 -nodes -keyout apiserver.key -out apiserver.csr -subj /CN=kube-apiserver 2>/dev/null
printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\n' > apiserver.ext
openssl x509 -req -in apiserver.csr -CA ca.crt -CAkey ca.key -CAcreateserial -out apiserver.crt -days 2 -extfile apiserver.ext 2>/dev/null
openssl req -newkey rsa:2048 -nodes -keyout admin.key -out admin.csr -subj "/CN=admin/O=system:masters" 2>/dev/null
openssl x509 -req -in admin.csr -CA ca.crt -CAkey ca.key -CAcreateserial -out admin.crt -days 2 2>/dev/null
openssl genrsa -out sa.key 2048 2>/dev/null
openssl rsa -in sa.key -pubout -out sa.pub 2>/dev/null
cat > admin.kubeconfig <<KC
apiVersion: v1
kind: Config
current-context: admin
contexts: [{name: admin, context: {cluster: local, user: admin}}]
clusters: [{name: local, cluster: {server: "https://127.0.0.1:$API_PORT", certificate-authority: ca.crt}}]
users: [{name: admin, user: {client-certificate: admin.crt, client-key: admin.key}}]
KC

"$BIN/etcd" --data-dir "$DIR/etcd" --name kmt --listen-client-urls "http://127.0.0.1:$ETCD_PORT" \
  --advertise-client-urls "http://127.0.0.1:$ETCD_PORT" --listen-peer-urls "http://127.0.0.1:$ETCD_PEER" \
  --initial-advertise-peer-urls "http://127.0.0.1:$ETCD_PEER" --initial-cluster "kmt=http://127.0.0.1:$ETCD_PEER" \
  >"$DIR/etcd.log" 2>&1 &
PIDS+=($!)

cat > start-apiserver.sh <<SH
#!/usr/bin/env bash
set -euo pipefail
cd "$DIR"
"$BIN/kube-apiserver" --etcd-servers "http://127.0.0.1:$ETCD_PORT" \
  --bind-address 127.0.0.1 --advertise-address 127.0.0.1 --secure-port $API_PORT \
  --tls-cert-file apiserver.crt --tls-private-key-file apiserver.key --client-ca-file ca.crt \
  --service-account-key-file sa.pub --service-account-signing-key-file sa.key \
  --service-account-issuer https://kubernetes.default.svc.cluster.local \
  --service-cluster-ip-range 10.96.0.0/16 --authorization-mode RBAC \
  --watch-cache-sizes pods#0 --endpoint-reconciler-type none --profiling=false --v 1 \
  >>"$DIR/apiserver.log" 2>&1 &
echo \$! > "$DIR/apiserver.pid"
for _ in \$(seq 1 300); do
  curl -sf --cacert ca.crt --cert admin.crt --key admin.key "https://127.0.0.1:$API_PORT/readyz" >/dev/null && exit 0
  sleep 0.2
done
echo "kube-apiserver did not become ready; see $DIR/apiserver.log" >&2
exit 1
SH
cat > restart-apiserver.sh <<SH
#!/usr/bin/env bash
set -euo pipefail
pid=\$(cat "$DIR/apiserver.pid")
kill -TERM "\$pid"
while kill -0 "\$pid" 2>/dev/null; do sleep 0.1; done
exec "$DIR/start-apiserver.sh"
SH
cat > compact-etcd.sh <<SH
#!/usr/bin/env bash
# Compacts etcd at its current revision through its JSON gateway.
set -euo pipefail
rev=\$(curl -sf -X POST "http://127.0.0.1:$ETCD_PORT/v3/kv/range" -d '{"key":"AA=="}' | python3 -c 'import json,sys; print(json.load(sys.stdin)["header"]["revision"])')
curl -sf -X POST "http://127.0.0.1:$ETCD_PORT/v3/kv/compaction" -d "{\"revision\":\"\$rev\",\"physical\":true}" >/dev/null
SH
chmod +x start-apiserver.sh restart-apiserver.sh compact-etcd.sh
for _ in $(seq 1 100); do curl -sf "http://127.0.0.1:$ETCD_PORT/health" >/dev/null && break; sleep 0.1; done
./start-apiserver.sh

cd "$ROOT"
bazel --output_base="${KMT_KUBE_OUTPUT_BASE:-$HOME/.cache/bazel-ob/kube}" build \
  --disk_cache="${KMT_CACHE:-$HOME/.cache/kubevirt-migration-target}/bazel-disk" //kube:cluster_test >/dev/null 2>&1
TEST_BIN=$(bazel --output_base="${KMT_KUBE_OUTPUT_BASE:-$HOME/.cache/bazel-ob/kube}" info bazel-bin 2>/dev/null)/kube/cluster_test
KMT_KUBECONFIG=$DIR/admin.kubeconfig \
KMT_APISERVER_RESTART_CMD=$DIR/restart-apiserver.sh \
KMT_ETCD_COMPACT_CMD=$DIR/compact-etcd.sh \
  "$TEST_BIN" "$@" || rc=$?
echo "cluster_test exit status: ${rc:-0}"
exit "${rc:-0}"
