#!/usr/bin/env bash
# The in-cluster tier (called by hack/test.sh; see e2e/README.md "The in-cluster tier"): the
# operator installed as the README tells users, from the image hack/image.sh builds and
# manifests/default applied unchanged but for `kustomize edit set image`, running as a Deployment
# on the real node infra-0, and the TestInCluster* scenarios against it. A cluster of its own
# (e2e/run.sh with KMT_E2E_IN_CLUSTER=1 and without the out-of-cluster operator). Last line
# "incluster: N passed, M failed"; a scenario that skipped, or a run without any, is a failure.
#
# Environment: KMT_E2E_DIR (default /tmp/kmt-e2e-incluster), KMT_E2E_PORT_BASE (default 24000,
# below the ephemeral port range), KMT_INCLUSTER_RUN (go test -run, default ^TestInCluster; not
# KMT_E2E_RUN, which selects the e2e tier's scenarios), KMT_INCLUSTER_ARCHIVE
# (an image archive to use instead of building one; for iterating on the scenarios only).
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1

summary() { echo "incluster: $1 passed, $2 failed"; }
t0=$SECONDS
export KMT_E2E_DIR=${KMT_E2E_DIR:-/tmp/kmt-e2e-incluster}
export KMT_E2E_PORT_BASE=${KMT_E2E_PORT_BASE:-24000}
if [[ ${KMT_E2E_REAL_NODE:-1} != 1 || ${KMT_E2E_MATRIX:-default} != default ]]; then
  echo "incluster: needs the real node infra-0 on the default pair (KMT_E2E_REAL_NODE=${KMT_E2E_REAL_NODE:-1}, KMT_E2E_MATRIX=${KMT_E2E_MATRIX:-default})"
  summary 0 1
  exit 1
fi

archive=${KMT_INCLUSTER_ARCHIVE:-}
if [[ -z $archive ]]; then
  if ! archive=$(hack/image.sh | tail -n 1) || [[ ! -s $archive ]]; then
    echo "incluster: building the image failed (hack/image.sh)"
    summary 0 1
    exit 1
  fi
fi
t_image=$((SECONDS - t0))

log=$(mktemp /tmp/kmt-incluster.XXXXXX.log)
KMT_E2E_IN_CLUSTER=1 KMT_E2E_REAL_NODE=1 KMT_E2E_NO_OPERATOR=1 KMT_E2E_TIER=incluster \
  KMT_INCLUSTER_ARCHIVE=$archive KMT_E2E_HOOK=e2e/incluster/hook.sh \
  KMT_E2E_ARTIFACTS=${KMT_E2E_ARTIFACTS:-/tmp/kmt-incluster-artifacts} \
  KMT_E2E_RUN=${KMT_INCLUSTER_RUN:-^TestInCluster} e2e/run.sh 2>&1 | tee "$log"
rc=${PIPESTATUS[0]}
line=$(grep -E '^incluster: [0-9]+ passed, [0-9]+ failed' "$log" | tail -n 1)
passed=$(sed -E 's/^incluster: ([0-9]+) passed.*/\1/' <<<"$line")
failed=$(sed -E 's/.* ([0-9]+) failed$/\1/' <<<"$line")
[[ -n $line ]] || { passed=0 failed=1; }
skipped=$(grep -cE '^\s*--- SKIP: ' "$log")
if ((skipped > 0)); then
  echo "incluster: $skipped scenario(s) skipped; every scenario of this tier must run"
  failed=$((failed + skipped))
fi
if ((passed == 0 && failed == 0)); then
  echo "incluster: no scenario ran"
  failed=1
fi
rm -f "$log"
echo "incluster: timings: image ${t_image}s, total $((SECONDS - t0))s"
summary "$passed" "$failed"
[[ $rc -eq 0 && $failed -eq 0 ]]
