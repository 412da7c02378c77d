#!/usr/bin/env bash
# The soak (not part of e2e/run.sh or CI): e2e/soak.sh [DURATION] (default 60m).
# Brings the cluster up as e2e/run.sh does (binaries, cluster.sh up, the hooks in
# e2e/hooks/ that install the operator and start replica "0"), runs the driver
# (e2e/soak, build tag soak: placed migrations, node label and taint churn, a
# leader kill every KMT_SOAK_KILL_EVERY, the replicas' RSS/fds/threads sampled
# into $KMT_E2E_DIR/soak.csv), always brings the cluster down, and prints the
# summary. The CSV and the summary are copied to KMT_SOAK_RESULT (default
# /tmp/kmt-soak-result.csv) and its .txt sibling before the run dir goes.
#
# Environment: KMT_SOAK_RATE, KMT_SOAK_KILL_EVERY, KMT_SOAK_SAMPLE,
# KMT_SOAK_CHURN_EVERY, KMT_SOAK_VMIS, KMT_FAULT_SEED (see e2e/soak/soak_test.go),
# plus those of e2e/cluster.sh (KMT_E2E_DIR, KMT_E2E_PORT_BASE) and KMT_OPERATOR_BIN.
set -uo pipefail
cd "$(dirname "$0")/.."
source e2e/lib.sh

duration=${1:-60m}
# The go test deadline: the soak, the drain and the last batch, and slack.
[[ $duration =~ ^([0-9]+)(s|m|h)$ ]] || { echo "soak: DURATION is N followed by s, m or h, not $duration"; exit 2; }
case ${BASH_REMATCH[2]} in
  s) minutes=$((BASH_REMATCH[1] / 60 + 30)) ;;
  m) minutes=$((BASH_REMATCH[1] + 30)) ;;
  h) minutes=$((BASH_REMATCH[1] * 60 + 30)) ;;
esac

result=${KMT_SOAK_RESULT:-/tmp/kmt-soak-result.csv}
t0=$SECONDS

e2e/build-binaries.sh || { echo "soak: building the binaries failed"; exit 1; }

cleanup() {
  local rc=$?
  if [[ -f $KMT_E2E_DIR/soak.csv ]]; then
    cp "$KMT_E2E_DIR/soak.csv" "$result" && echo "soak: samples copied to $result"
  fi
  if [[ -f $KMT_E2E_DIR/soak-summary.txt ]]; then
    cp "$KMT_E2E_DIR/soak-summary.txt" "${result%.csv}.txt"
  fi
  if [[ -d $KMT_E2E_DIR/logs ]]; then
    rm -rf "${result%.csv}-logs" && cp -r "$KMT_E2E_DIR/logs" "${result%.csv}-logs"
  fi
  e2e/cluster.sh down
  return $rc
}
trap cleanup EXIT

e2e/cluster.sh up || { echo "soak: starting the cluster failed"; exit 1; }
# shellcheck disable=SC1090
source <(e2e/cluster.sh env)
for hook in e2e/hooks/*.sh ${KMT_E2E_HOOK:-}; do
  [[ -f $hook ]] || continue
  # shellcheck disable=SC1090
  source "$hook" || { echo "soak: hook $hook failed"; exit 1; }
done

log=$KMT_E2E_DIR/soak-test.log
(cd e2e && KMT_SOAK_DURATION=$duration CGO_ENABLED=0 go test -tags soak -trimpath -buildvcs=false -count=1 \
  -timeout "${minutes}m" -v -run TestSoak ./soak/) 2>&1 | tee "$log"
rc=${PIPESTATUS[0]}
echo "soak: summary"
cat "$KMT_E2E_DIR/soak-summary.txt" 2>/dev/null || echo "soak: no summary (the driver stopped early; see $log)"
echo "soak: $( ((rc == 0)) && echo passed || echo failed ) after $((SECONDS - t0))s"
exit "$rc"
