#!/usr/bin/env bash
# The differential tier: this project's term validation and node matching against
# Kubernetes' own code at the pinned version as the oracle (issue 18 §1–2).
#   1. bazel build //api/testing:term_verdicts (the C++ functions the webhook and the
#      controller use, behind a JSON-lines protocol);
#   2. go test in e2e/tools/k8s/differential (the seeded generator and the oracle:
#      k8s.io/kubernetes/pkg/apis/core/validation, component-helpers' nodeaffinity).
# Last line: "differential: N passed, M failed".
# Environment: KMT_DIFF_SEED (replay a run; the seed is printed), KMT_DIFF_N (inputs per
# test, default 10000), KMT_DIFF_RUN (go test -run regexp), KMT_TERM_VERDICTS_BIN (use
# this binary instead of building it).
set -uo pipefail
cd "$(dirname "$0")/.."
source hack/versions.env
source hack/go.sh

summary() { echo "differential: $1 passed, $2 failed"; }
t0=$SECONDS

if ! kmt_use_go; then
  echo "differential: no Go >= $GO_MIN_VERSION (run hack/install-deps.sh)"
  summary 0 1
  exit 1
fi

if [[ -z ${KMT_TERM_VERDICTS_BIN:-} ]]; then
  CACHE_ROOT=${KMT_CACHE:-$HOME/.cache/kubevirt-migration-target}
  mkdir -p "$CACHE_ROOT/bazel-disk"
  if ! bazel build --disk_cache="$CACHE_ROOT/bazel-disk" //api/testing:term_verdicts 2>&1 \
    | grep -v -E 'linux-sandbox|^[0-9]+\.[0-9]+: src/main/tools'; then :; fi
  KMT_TERM_VERDICTS_BIN="$(bazel info bazel-bin 2>/dev/null)/api/testing/term_verdicts"
fi
if [[ ! -x $KMT_TERM_VERDICTS_BIN ]]; then
  echo "differential: no $KMT_TERM_VERDICTS_BIN (bazel build //api/testing:term_verdicts failed)"
  summary 0 1
  exit 1
fi
export KMT_TERM_VERDICTS_BIN
t_build=$((SECONDS - t0))

log=$(mktemp /tmp/kmt-differential.XXXXXX.log)
t1=$SECONDS
# The flags of e2e/build-binaries.sh, so the test reuses the Kubernetes packages it compiled.
(cd e2e/tools/k8s && CGO_ENABLED=0 GOFLAGS="${GOFLAGS:-} -trimpath -buildvcs=false -mod=readonly" \
  go test -count=1 -v -timeout 20m ${KMT_DIFF_RUN:+-run "$KMT_DIFF_RUN"} ./differential/) 2>&1 | tee "$log"
test_rc=${PIPESTATUS[0]}

passed=$(grep -cE '^--- PASS: ' "$log")
failed=$(grep -cE '^--- FAIL: ' "$log")
if [[ $test_rc -ne 0 && $failed -eq 0 ]]; then
  failed=1 # did not compile, panicked or timed out
fi
rm -f "$log"
echo "differential: timings: build ${t_build}s, tests $((SECONDS - t1))s, total $((SECONDS - t0))s"
summary "$passed" "$failed"
[[ $failed -eq 0 ]]
