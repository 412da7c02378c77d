#!/usr/bin/env bash
# bench/run.sh [--quick] — runs every benchmark once and writes their tables with the
# machine and the command: bench/RESULTS.md for the full set, $KMT_BENCH_OUT/RESULTS.md
# (printed at the end) for --quick. Ends with "bench: N passed, M failed": a benchmark
# passes when it exited 0 and printed its table with a figure in every row
# (bench/check_tables.py; budgets are reported, not asserted). hack/test.sh runs --quick.
#
#   full:    explainer, webhook at 1,000/3,000/5,000 req/s for 5 s each, gate release with
#            N = 1, 50, 200 in 5 interleaved rounds (medians), memory and cold start with
#            5,000 nodes, 10,000 VMIMs, 10,000 target pods (3 starts, interleaved with the
#            floor), admission against the live API server at 50/200/400/800 req/s for 10 s
#            each (about 16-21 minutes on 2 cores);
#   --quick: the same benchmarks, smaller: webhook 1 s per rate, gate release N = 1, 50 once,
#            memory 500 nodes, 1,000 VMIMs, 1,000 pods, live admission at 50/200 req/s for
#            2 s each (3-3.5 minutes on 2 cores at load 8-20, starting the control plane
#            included; what hack/test.sh runs).
#
# The cluster benchmarks start their own control plane with e2e/cluster.sh (run dir
# $KMT_E2E_DIR, default /tmp/kmt-bench-e2e; ports from $KMT_E2E_PORT_BASE, default 30000,
# so it does not collide with an e2e run (26000); the operator under test listens on
# base+780/781 (gate release), base+782..784 (live admission: webhook, metrics, health) and
# base+790/791 (memory)) and stop it on exit. Every port must lie below the kernel's
# ephemeral range (32768-60999 by default), where client sockets take ports at random.
# Bazel output base: $KMT_BENCH_OUTPUT_BASE (default ~/.cache/bazel-ob/bench; set and empty:
# Bazel's own for this checkout, as hack/test.sh does to reuse its build); disk cache
# $KMT_CACHE/bazel-disk as hack/test.sh.
set -uo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
QUICK=0
case "${1:-}" in
  --quick) QUICK=1 ;;
  "") ;;
  *) echo "usage: bench/run.sh [--quick]" >&2; exit 2 ;;
esac
COMMAND="bench/run.sh${1:+ $1}"
OUTPUT_BASE=${KMT_BENCH_OUTPUT_BASE-$HOME/.cache/bazel-ob/bench}
BAZEL=(bazel ${OUTPUT_BASE:+"--output_base=$OUTPUT_BASE"})
BUILD_FLAGS=("--disk_cache=${KMT_CACHE:-$HOME/.cache/kubevirt-migration-target}/bazel-disk")
OUT=${KMT_BENCH_OUT:-$(mktemp -d /tmp/kmt-bench.XXXXXX)}
mkdir -p "$OUT" || { echo "bench: cannot create the output directory $OUT" >&2; exit 1; }
TABLES=$OUT/tables.md
: >"$TABLES"
STATUS=0
START=$SECONDS
LOAD_BEFORE=$(cut -d" " -f1-3 /proc/loadavg)

log() { echo "bench: $*" >&2; }

# The ports: the control plane's (base + 182..443) and the operator's (base + 780..791).
export KMT_E2E_DIR=${KMT_E2E_DIR:-/tmp/kmt-bench-e2e}
export KMT_E2E_PORT_BASE=${KMT_E2E_PORT_BASE:-30000}
PORT_SPAN=800
read -r EPHEMERAL_LOW EPHEMERAL_HIGH </proc/sys/net/ipv4/ip_local_port_range ||
  { log "cannot read /proc/sys/net/ipv4/ip_local_port_range"; exit 2; }
if ! [[ $KMT_E2E_PORT_BASE =~ ^[0-9]+$ ]] || ((KMT_E2E_PORT_BASE < 1024)) ||
  ((KMT_E2E_PORT_BASE + PORT_SPAN > 65535)) ||
  ((KMT_E2E_PORT_BASE <= EPHEMERAL_HIGH && KMT_E2E_PORT_BASE + PORT_SPAN >= EPHEMERAL_LOW)); then
  log "KMT_E2E_PORT_BASE=$KMT_E2E_PORT_BASE: the ports from it to it + $PORT_SPAN must be in 1024-65535 and outside the kernel's ephemeral range $EPHEMERAL_LOW-$EPHEMERAL_HIGH (client sockets take those at random); choose a base from 1024 to $((EPHEMERAL_LOW - PORT_SPAN - 1))"
  exit 2
fi
python3 bench/check_tables.py --self-test >/dev/null ||
  { log "bench/check_tables.py --self-test failed"; exit 1; }

"${BAZEL[@]}" build "${BUILD_FLAGS[@]}" //bench/... //bench:gate_release_benchmark \
  //bench:memory_benchmark //bench:admission_live_benchmark //cmd/operator:operator || { log "build failed"; exit 1; }
BIN=$("${BAZEL[@]}" info bazel-bin 2>/dev/null)

# Each benchmark's exit code ("-": not run), for bench/check_tables.py.
declare -A RC=([explainer]=- [webhook]=- [gate-release]=- [memory]=- [admission-live]=-)
# run NAME CMD...: runs one benchmark; a failure is recorded in the results, the rest go on.
run() {
  local name=$1; shift
  log "running $name"
  local t0=$SECONDS
  if "$@" 2> >(tee "$OUT/$name.log" >&2); then
    RC[$name]=0
    log "$name done in $((SECONDS - t0)) s"
  else
    local rc=$?
    RC[$name]=$rc
    STATUS=1
    log "$name FAILED (exit $rc) after $((SECONDS - t0)) s; log: $OUT/$name.log"
    printf '### %s\n\n**Failed** (exit %s); last lines of its log:\n\n```\n%s\n```\n\n' \
      "$name" "$rc" "$(tail -n 15 "$OUT/$name.log")" >>"$TABLES"
  fi
}

if ((QUICK)); then
  run explainer "$BIN/bench/explain_benchmark" --report="$TABLES" --benchmark_min_time=0.2
  run webhook "$BIN/bench/webhook_benchmark" --quick --report="$TABLES"
  GATE_ARGS=(--sizes=1,50 --rounds=1)
  MEMORY_ARGS=(--nodes=500 --vmims=1000 --pods=1000)
  LIVE_ARGS=(--quick)
else
  run explainer "$BIN/bench/explain_benchmark" --report="$TABLES"
  run webhook "$BIN/bench/webhook_benchmark" --report="$TABLES"
  GATE_ARGS=(--sizes=1,50,200 --rounds=5)
  MEMORY_ARGS=(--nodes=5000 --vmims=10000 --pods=10000)
  LIVE_ARGS=()
fi

# start_cluster: the control plane, then what the cluster benchmarks need of it. Every step
# is logged to $OUT/cluster.log; a step that fails fails the start.
start_cluster() {
  e2e/cluster.sh up || return 1
  trap 'e2e/cluster.sh down >>"$OUT/cluster.log" 2>&1' EXIT
  # The operator's own CRD, as manifests/default installs it (its leader lists the policies),
  # and the requester ClusterRole the live admission benchmark binds its user to.
  (
    # shellcheck source=/dev/null
    source <(e2e/cluster.sh env) &&
      kubectl apply -f manifests/default/crd_policy.yaml &&
      kubectl apply -f manifests/default/admin_rbac.yaml &&
      kubectl wait --for condition=Established --timeout 60s \
        crd/migrationtargetpolicies.migration-target.kubevirt.io
  ) || return 1
  # The benchmarks create VMIs and VMIMs (virt-api admits a VMIM only for an existing VMI)
  # that nothing must act on: virt-controller would start the VMIs, render target pods of
  # its own and fail the VMIMs of VMIs not running, and the operator leaves failed VMIMs
  # alone. Stop it (its restart loop is a process group `up` started) and make sure it is gone.
  local pgid
  pgid=$(cat "$KMT_E2E_DIR/pids/virt-controller.pid") || return 1
  kill -TERM -- "-$pgid" || return 1
  for _ in $(seq 100); do
    kill -0 -- "-$pgid" 2>/dev/null || { echo "virt-controller stopped (process group $pgid)"; return 0; }
    sleep 0.1
  done
  echo "virt-controller (process group $pgid) still runs 10 s after SIGTERM"
  return 1
}

log "starting the control plane ($KMT_E2E_DIR, port base $KMT_E2E_PORT_BASE)"
if start_cluster >"$OUT/cluster.log" 2>&1; then
  KUBECONFIG_ADMIN=$KMT_E2E_DIR/admin.kubeconfig
  run gate-release "$BIN/bench/gate_release_benchmark" --kubeconfig="$KUBECONFIG_ADMIN" \
    --operator="$BIN/cmd/operator/operator" "${GATE_ARGS[@]}" --log-dir="$OUT" \
    --port-base=$((KMT_E2E_PORT_BASE + 780)) --report="$TABLES"
  # Before the memory benchmark, which leaves 25,000 objects in the API server's caches and
  # etcd: measured after it, the live admission floor (bare SubjectAccessReviews) was 4-10x
  # slower than on a fresh control plane.
  run admission-live "$BIN/bench/admission_live_benchmark" --kubeconfig="$KUBECONFIG_ADMIN" \
    --operator="$BIN/cmd/operator/operator" "${LIVE_ARGS[@]}" --log-dir="$OUT" \
    --port-base=$((KMT_E2E_PORT_BASE + 782)) --report="$TABLES"
  run memory "$BIN/bench/memory_benchmark" --kubeconfig="$KUBECONFIG_ADMIN" \
    --operator="$BIN/cmd/operator/operator" "${MEMORY_ARGS[@]}" --log-dir="$OUT" \
    --port-base=$((KMT_E2E_PORT_BASE + 790)) --report="$TABLES"
else
  STATUS=1
  log "the control plane did not start; see $OUT/cluster.log"
  printf '### Cluster benchmarks\n\n**Not run**: the control plane did not start (e2e/cluster.sh up, the CRD, stopping virt-controller); last lines:\n\n```\n%s\n```\n\n' \
    "$(tail -n 15 "$OUT/cluster.log")" >>"$TABLES"
fi

if ((QUICK)); then RESULTS=$OUT/RESULTS.md; else RESULTS=$ROOT/bench/RESULTS.md; fi
{
  echo "# Benchmark results"
  echo
  echo "- Date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "- Machine: $(nproc) cores ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')), $(free -g | awk '/^Mem:/ {print $2}') GiB memory; load average before the run: $LOAD_BEFORE"
  echo "- Commit: $(git rev-parse --short HEAD)"
  echo "- Command: \`$COMMAND\` ($((SECONDS - START)) s)"
  echo
  echo "Every figure is next to a floor measured in the same run; ratio = figure ÷ floor"
  echo "(for rates: the floor's rate ÷ the figure's, i.e. how many times the floor's cost)."
  echo "Budgets: DESIGN.md §6."
  echo
  cat "$TABLES"
} >"$RESULTS"
log "results: $RESULTS ($((SECONDS - START)) s)"
# Every benchmark ran and printed its rows (the tables' titles are the harnesses').
python3 bench/check_tables.py "$TABLES" \
  "explainer=${RC[explainer]}=Explainer (Google Benchmark)" \
  "webhook=${RC[webhook]}=Webhook latency and server CPU (open loop, TLS keep-alive)" \
  "gate-release=${RC[gate-release]}=Gate release latency (real control plane)" \
  "memory=${RC[memory]}=Operator memory (real API server)" \
  "cold-start=${RC[memory]}=Operator cold start (real API server)" \
  "admission-live=${RC[admission-live]}=Admission, live API server" || STATUS=1
exit $STATUS
