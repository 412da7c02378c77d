#!/usr/bin/env bash
# The e2e tier's entry point (called by hack/test.sh): builds or reuses the
# binaries, starts the control plane, virt-controller and the fake node agent
# (e2e/cluster.sh up), runs the hooks that start extra processes (e2e/hooks/*.sh,
# then $KMT_E2E_HOOK), runs the scenarios (Go tests in e2e/tests), and always
# stops everything. The last line is "e2e: N passed, M failed"; the exit status
# is non-zero on any failure.
#
# Environment: KMT_E2E_RUN (go test -run regexp), KMT_E2E_HOOK (a script sourced
# after the cluster is up), KMT_E2E_TIER (the summary line's name, default e2e; the
# in-cluster tier, e2e/incluster.sh, says "incluster"), KMT_E2E_ARTIFACTS (where component logs are copied
# on failure, default /tmp/kmt-e2e-artifacts), plus those of e2e/cluster.sh.
set -uo pipefail
cd "$(dirname "$0")/.."
source e2e/lib.sh

summary() { echo "${KMT_E2E_TIER:-e2e}: $1 passed, $2 failed"; }
t0=$SECONDS

if ! e2e/build-binaries.sh; then
  echo "e2e: building the binaries failed"
  summary 0 1
  exit 1
fi
t_build=$((SECONDS - t0))

# The real node changes the machine (iptables, sysctls, links, mounts, cgroups): what `down` leaves
# must equal what was there before `up` (e2e/node.sh state); a difference fails the run.
real_node=0
if [[ $KMT_E2E_MATRIX == default && ${KMT_E2E_REAL_NODE:-1} == 1 ]]; then
  real_node=1
  e2e/node.sh state >"/tmp/kmt-e2e-machine.$$.before" 2>/dev/null
fi

cleanup() {
  local rc=$?
  if [[ ${failed_any:-1} != 0 && -d $KMT_E2E_DIR/logs ]]; then
    local dest=${KMT_E2E_ARTIFACTS:-/tmp/kmt-e2e-artifacts}
    rm -rf "$dest" && mkdir -p "$dest" && cp -r "$KMT_E2E_DIR/logs" "$dest/" && echo "e2e: component logs copied to $dest/logs"
  fi
  e2e/cluster.sh down
  if ((real_node)); then
    e2e/node.sh state >"/tmp/kmt-e2e-machine.$$.after" 2>/dev/null
    if ! diff -u "/tmp/kmt-e2e-machine.$$.before" "/tmp/kmt-e2e-machine.$$.after" >"/tmp/kmt-e2e-machine.$$.diff"; then
      echo "e2e: the machine differs after down from before up (real node left something behind):"
      cat "/tmp/kmt-e2e-machine.$$.diff"
      echo "--- FAIL: MachineStateAfterDown"
      rm -f /tmp/kmt-e2e-machine.$$.*
      summary "${passed:-0}" "$((${failed:-0} + 1))"
      exit 1
    else
      echo "e2e: machine state after down equals before up (iptables, nft, sysctls, links, netns, mounts, processes, cgroups)"
    fi
    rm -f /tmp/kmt-e2e-machine.$$.*
  fi
  return $rc
}
trap cleanup EXIT

t1=$SECONDS
if ! e2e/cluster.sh up; then
  echo "e2e: starting the cluster failed"
  summary 0 1
  exit 1
fi
t_up=$((SECONDS - t1))
# shellcheck disable=SC1090
source <(e2e/cluster.sh env)

# Hooks start extra processes with `e2e/cluster.sh start NAME -- CMD...` so that
# `down` stops them (e.g. the operator, once bazel-bin/cmd/operator/operator exists).
for hook in e2e/hooks/*.sh ${KMT_E2E_HOOK:-}; do
  [[ -f $hook ]] || continue
  echo "e2e: running hook $hook"
  # shellcheck disable=SC1090
  if ! source "$hook"; then
    echo "e2e: hook $hook failed"
    summary 0 1
    exit 1
  fi
done

t2=$SECONDS
log=$KMT_E2E_DIR/go-test.log
# CGO_ENABLED=0 matches build-binaries.sh, so the test binary reuses its build cache.
(cd e2e && CGO_ENABLED=0 go test -trimpath -buildvcs=false -count=1 -p 1 -timeout 30m -v \
  ${KMT_E2E_RUN:+-run "$KMT_E2E_RUN"} ./framework/... ./tests/...) 2>&1 | tee "$log"
test_rc=${PIPESTATUS[0]}
t_tests=$((SECONDS - t2))

passed=$(grep -cE '^--- PASS: ' "$log")
failed=$(grep -cE '^--- FAIL: ' "$log")
if [[ $test_rc -ne 0 && $failed -eq 0 ]]; then
  failed=1 # did not compile, panicked or timed out
fi
failed_any=$failed
echo "e2e: timings: binaries ${t_build}s, cluster up ${t_up}s, scenarios ${t_tests}s, total $((SECONDS - t0))s"
summary "$passed" "$failed"
[[ $failed -eq 0 ]]
