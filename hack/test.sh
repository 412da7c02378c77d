#!/usr/bin/env bash
# The test command of the README: installs what is missing, runs every Bazel
# test (unit and component tiers), then the e2e tier on a real control plane.
# Ends with one summary line "summary: N passed, M failed".
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD

./hack/install-deps.sh || exit 1

CACHE_ROOT=${KMT_CACHE:-$HOME/.cache/kubevirt-migration-target}
mkdir -p "$CACHE_ROOT/bazel-disk"

# gofmt comes with the Go toolchain install-deps.sh made sure of (hack/go.sh finds it).
# shellcheck source=/dev/null
source hack/versions.env && source hack/go.sh && kmt_use_go || echo "format: no Go toolchain for gofmt"
echo "=== format: clang-format (the repo's .clang-format) and gofmt over every tracked source"
# Two checks: every tracked C++ file as clang-format would write it, every Go file as gofmt.
fmt_pass=0 fmt_fail=0
cc_bad=0 go_bad=0 cc_n=0 go_n=0
while IFS= read -r f; do
  cc_n=$((cc_n + 1))
  clang-format --dry-run -Werror "$f" >/dev/null 2>&1 ||
    { cc_bad=$((cc_bad + 1)); echo "format: $f differs from clang-format (run: clang-format -i $f)"; }
done < <(git ls-files '*.cc' '*.h')
while IFS= read -r f; do
  go_n=$((go_n + 1))
  out=$(gofmt -l "$f" 2>&1) && [[ -z $out ]] ||
    { go_bad=$((go_bad + 1)); echo "format: $f differs from gofmt (run: gofmt -w $f)"; }
done < <(git ls-files '*.go')
echo "format: clang-format $((cc_n - cc_bad))/$cc_n files, gofmt $((go_n - go_bad))/$go_n files"
for bad in $cc_bad $go_bad; do
  if [[ $bad -eq 0 ]]; then fmt_pass=$((fmt_pass + 1)); else fmt_fail=$((fmt_fail + 1)); fi
done
fmt_summary="$fmt_pass passed, $fmt_fail failed"
fmt_rc=$((fmt_fail > 0))
echo "format: $fmt_summary"

echo "=== includes: every #include \"pkg/...\" against the package floors (hack/include_graph.py)"
/usr/bin/python3 hack/include_graph.py | tee /tmp/kmt-includes.log
incl_rc=${PIPESTATUS[0]}
/usr/bin/python3 hack/include_graph.py --self-test || incl_rc=1
incl_summary=$(grep -E '^includes: ' /tmp/kmt-includes.log | tail -1 | sed 's/^includes: //')

echo "=== tidy: clang-tidy with the repo's .clang-tidy over every C++ file (hack/clang_tidy.sh)"
KMT_CACHE="$CACHE_ROOT" hack/clang_tidy.sh 2>&1 | tee /tmp/kmt-tidy.log
tidy_rc=${PIPESTATUS[0]}
tidy_summary=$(grep -E '^tidy: [0-9]+ passed, [0-9]+ failed' /tmp/kmt-tidy.log | tail -1 | sed 's/^tidy: //')
[[ -n $tidy_summary ]] || tidy_summary="0 passed, 1 failed"

echo "=== tier 1+2: bazel test //..."
bazel test --disk_cache="$CACHE_ROOT/bazel-disk" --test_summary=short //... 2>&1 | tee /tmp/kmt-bazel-test.log \
  | grep -v -E 'linux-sandbox|^[0-9]+\.[0-9]+: src/main/tools'
bazel_rc=${PIPESTATUS[0]}
unit_summary=$(python3 hack/catch2_summary.py "$(bazel info bazel-testlogs 2>/dev/null)")
echo "unit: $unit_summary"

# Sanitizers: ASan + UBSan over every test, TSan over the concurrent code (work queue,
# informer, watcher, leader election, events, the HTTP servers, the kube client's TLS, the
# benchmarks' load generator). Each configuration has its own output directory (.bazelrc), so
# they share the disk cache but not each other's build.
TSAN_TARGETS=(//http/... //webhook:server_test //webhook:routes_test //webhook:vmi_node_cache_test
  //kube:transport_trust_test //bench:webhook_fixture_test //bench:webhook_servers_test
  //controller:work_queue_test
  //controller:leader_election_test //controller:events_test //controller:controller_test
  //cmd/operator:probes_test //cmd/operator:metrics_auth_test //kube:informer_test //kube:watcher_test
  //kube:rest_client_test //cmd/operator:operator_test //controller:policy_status_test)
echo "=== sanitizers: bazel test --config=asan //..."
bazel test --config=asan --disk_cache="$CACHE_ROOT/bazel-disk" --test_summary=short //... 2>&1 \
  | tee /tmp/kmt-asan.log | grep -v -E 'linux-sandbox|^[0-9]+\.[0-9]+: src/main/tools'
asan_rc=${PIPESTATUS[0]}
asan_summary=$(python3 hack/catch2_summary.py "$(bazel info --config=asan bazel-testlogs 2>/dev/null)")
echo "asan: $asan_summary"
echo "=== sanitizers: bazel test --config=tsan ${TSAN_TARGETS[*]}"
bazel test --config=tsan --disk_cache="$CACHE_ROOT/bazel-disk" --test_summary=short "${TSAN_TARGETS[@]}" 2>&1 \
  | tee /tmp/kmt-tsan.log | grep -v -E 'linux-sandbox|^[0-9]+\.[0-9]+: src/main/tools'
tsan_rc=${PIPESTATUS[0]}
tsan_summary=$(python3 hack/catch2_summary.py "$(bazel info --config=tsan bazel-testlogs 2>/dev/null)")
echo "tsan: $tsan_summary"

echo "=== least privilege: the operator's API verbs against its RBAC"
/usr/bin/python3 hack/rbac_check.py | tee /tmp/kmt-rbac.log
rbac_rc=${PIPESTATUS[0]}
/usr/bin/python3 hack/rbac_check.py --self-test || rbac_rc=1
rbac_summary=$(grep -E '^rbac: ' /tmp/kmt-rbac.log | tail -1 | sed 's/^rbac: //')

echo "=== monitoring: manifests/monitoring's alerts under promtool, the ServiceMonitor against manifests/default"
hack/monitoring_check.sh 2>&1 | tee /tmp/kmt-monitoring.log
mon_rc=${PIPESTATUS[0]}
mon_summary=$(grep -E '^monitoring: [0-9]+ passed, [0-9]+ failed' /tmp/kmt-monitoring.log | tail -1 | sed 's/^monitoring: //')
[[ -n $mon_summary ]] || mon_summary="0 passed, 1 failed"

echo "=== differential: term validation and node matching against Kubernetes' own code"
hack/differential.sh 2>&1 | tee /tmp/kmt-differential.log
diff_rc=${PIPESTATUS[0]}
diff_summary=$(grep -E '^differential: [0-9]+ passed, [0-9]+ failed' /tmp/kmt-differential.log | tail -1 | sed 's/^differential: //')
[[ -n $diff_summary ]] || diff_summary="0 passed, 1 failed"

e2e_summary="0 passed, 0 failed"
e2e_rc=0
if [[ ${KMT_SKIP_E2E:-0} != 1 && -x e2e/run.sh ]]; then
  echo "=== tier 3: e2e on a real control plane"
  e2e/run.sh 2>&1 | tee /tmp/kmt-e2e.log
  e2e_rc=${PIPESTATUS[0]}
  e2e_summary=$(grep -E '^e2e: [0-9]+ passed, [0-9]+ failed' /tmp/kmt-e2e.log | tail -1 | sed 's/^e2e: //')
  [[ -n $e2e_summary ]] || e2e_summary="0 passed, 1 failed"
fi

# The REST client against a real kube-apiserver of its own (watch 410 after an etcd compaction,
# an API server restart mid-watch, paging, the informer's memory per pod); needs the e2e tier's
# binaries, so it runs after it (build-binaries.sh is a no-op once they are cached).
kc_summary="0 passed, 0 failed"
kc_rc=0
if [[ ${KMT_SKIP_E2E:-0} != 1 ]]; then
  echo "=== the REST client against a real kube-apiserver (kube/cluster_check.sh)"
  { e2e/build-binaries.sh >/dev/null && kube/cluster_check.sh; } 2>&1 | tee /tmp/kmt-kube-cluster.log
  kc_rc=${PIPESTATUS[0]}
  kc_summary=$(python3 - /tmp/kmt-kube-cluster.log <<'PY'
import re, sys
text = open(sys.argv[1], errors="replace").read()
m = re.search(r"All tests passed \(\d+ assertions? in (\d+) test cases?\)", text)
if m:
    print(f"{m.group(1)} passed, 0 failed")
else:
    m = re.search(r"test cases:\s*(\d+)\s*\|\s*(\d+) passed\s*\|\s*(\d+) failed", text)
    print(f"{m.group(2)} passed, {m.group(3)} failed" if m else "0 passed, 1 failed")
PY
)
  echo "kube-cluster: $kc_summary"
fi

# The operator image: built from Dockerfile (hack/image.sh, cached by a hash of the tree) and run
# under runc as manifests/default's Deployment runs it (user, read-only root, certificate dir, args).
echo "=== image: Dockerfile built with buildah, run as manifests/default's Deployment runs it"
hack/image_check.sh 2>&1 | tee /tmp/kmt-image.log | grep -v -E '^\[[0-9,]+ / [0-9,]+\] '
img_rc=${PIPESTATUS[0]}
img_summary=$(grep -E '^image: [0-9]+ passed, [0-9]+ failed' /tmp/kmt-image.log | tail -1 | sed 's/^image: //')
[[ -n $img_summary ]] || img_summary="0 passed, 1 failed"

# The in-cluster tier: that image imported into the real node's containerd and manifests/default
# applied as the README's install section says (kustomize edit set image only), the operator a
# Deployment of two pods under a kubelet, and the TestInCluster* scenarios against it, on a
# cluster of its own (e2e/incluster.sh). A run that cannot have the real node counts as failed.
inc_summary="0 passed, 0 failed"
inc_rc=0
if [[ ${KMT_SKIP_E2E:-0} != 1 ]]; then
  echo "=== incluster: manifests/default installed with the image on the real node (e2e/incluster.sh)"
  e2e/incluster.sh 2>&1 | tee /tmp/kmt-incluster.log | grep -v -E '^\[[0-9,]+ / [0-9,]+\] '
  inc_rc=${PIPESTATUS[0]}
  inc_summary=$(grep -E '^incluster: [0-9]+ passed, [0-9]+ failed' /tmp/kmt-incluster.log | tail -1 | sed 's/^incluster: //')
  [[ -n $inc_summary ]] || inc_summary="0 passed, 1 failed"
fi

# bench/run.sh --quick: every benchmark once, small, the cluster ones on a control plane of
# their own (the e2e tier's binaries); passes when each ran and printed its rows (no budget
# asserted). It reuses this script's Bazel output base and disk cache.
bench_summary="0 passed, 0 failed"
bench_rc=0
if [[ ${KMT_SKIP_E2E:-0} != 1 ]]; then
  echo "=== bench: bench/run.sh --quick"
  { e2e/build-binaries.sh >/dev/null && KMT_BENCH_OUTPUT_BASE= KMT_CACHE="$CACHE_ROOT" bench/run.sh --quick; } 2>&1 \
    | tee /tmp/kmt-bench.log
  bench_rc=${PIPESTATUS[0]}
  bench_summary=$(grep -E '^bench: [0-9]+ passed, [0-9]+ failed' /tmp/kmt-bench.log | tail -1 | sed 's/^bench: //')
  [[ -n $bench_summary ]] || bench_summary="0 passed, 1 failed"
fi

# Arguments: "name=summary" for each tier ("N passed, M failed"), then "--", then each exit code.
python3 - "format=$fmt_summary" "includes=$incl_summary" "tidy=$tidy_summary" "unit=$unit_summary" "asan=$asan_summary" "tsan=$tsan_summary" "rbac=$rbac_summary" \
  "monitoring=$mon_summary" "differential=$diff_summary" "e2e=$e2e_summary" "kube-cluster=$kc_summary" \
  "image=$img_summary" "incluster=$inc_summary" "bench=$bench_summary" -- \
  "$fmt_rc" "$incl_rc" "$tidy_rc" "$bazel_rc" "$asan_rc" "$tsan_rc" "$rbac_rc" "$mon_rc" "$diff_rc" "$e2e_rc" "$kc_rc" "$img_rc" "$inc_rc" "$bench_rc" <<'PY'
import re, sys
args = sys.argv[1:]
sep = args.index("--")
p = f = 0
for s in args[:sep]:
    m = re.search(r'(\d+) passed, (\d+) failed', s)
    if m:
        p += int(m.group(1)); f += int(m.group(2))
    else:
        f += 1  # a tier that printed no summary
if any(int(rc) != 0 for rc in args[sep + 1:]):
    f = max(f, 1)
print(f"summary: {p} passed, {f} failed")
PY
[[ $fmt_rc -eq 0 && $incl_rc -eq 0 && $tidy_rc -eq 0 && $bazel_rc -eq 0 && $asan_rc -eq 0 && $tsan_rc -eq 0 && $rbac_rc -eq 0 && $mon_rc -eq 0 && $diff_rc -eq 0 && $e2e_rc -eq 0 && $kc_rc -eq 0 && $img_rc -eq 0 && $inc_rc -eq 0 && $bench_rc -eq 0 ]]
