#!/usr/bin/env bash
# Runs the e2e tier once per pair of the compatibility matrix (hack/versions.env) and writes
# each pair's result, scenario by scenario, into e2e/COMPATIBILITY.md.
#   e2e/matrix.sh [PAIR...]           pairs: default, old, new (default: all three, in that order)
#   e2e/matrix.sh --report PAIR...    only rewrite COMPATIBILITY.md from the pairs' last results
#                                     (kept in $KMT_MATRIX_DIR, default /tmp/kmt-e2e-matrix)
# Each pair is `KMT_E2E_MATRIX=PAIR e2e/run.sh`: its binaries are built once into caches keyed
# by its versions (e2e/build-binaries.sh), then the same scenarios run on it. A scenario that
# needs what a pair's KubeVirt or Kubernetes lacks is skipped by the scenario itself, with the
# reason, and listed as skipped. Exit status non-zero when any pair failed.
set -uo pipefail
cd "$(dirname "$0")/.."
source e2e/lib.sh

report_only=0
if [[ ${1:-} == --report ]]; then report_only=1; shift; fi
pairs=("$@")
[[ ${#pairs[@]} -gt 0 ]] || pairs=(default old new)
out=e2e/COMPATIBILITY.md
results=${KMT_MATRIX_DIR:-/tmp/kmt-e2e-matrix}
mkdir -p "$results"

run_pairs() {
  # The operator and the plugin the scenarios run, built once for all pairs.
  bazel build --disk_cache="$KMT_CACHE/bazel-disk" //cmd/operator:operator //cli:kubectl-migrate \
    //cli:kubectl_complete-migrate || exit 1
  for pair in "${pairs[@]}"; do
    kmt_log "matrix: pair $pair"
    start=$SECONDS
    KMT_E2E_MATRIX=$pair e2e/run.sh >"$results/$pair.log" 2>&1
    prc=$?
    [[ $prc -eq 0 ]] || rc=1
    echo "$((SECONDS - start)) $prc $(git rev-parse --short HEAD) $(date -u +%F)" >"$results/$pair.meta"
    kmt_log "matrix: pair $pair: $(grep -E '^e2e: [0-9]+ passed' "$results/$pair.log" | tail -1) ($((SECONDS - start)) s)"
  done
}

rc=0
[[ $report_only == 1 ]] || run_pairs

# COMPATIBILITY.md: one section per pair that has a result (this run's or an earlier one's).
python3 - "$out" "$results" "${pairs[@]}" <<'PY'
import os, re, subprocess, sys
out, results = sys.argv[1], sys.argv[2]
def versions(pair):
    env = dict(os.environ, KMT_E2E_MATRIX=pair)
    cmd = 'source e2e/lib.sh >/dev/null 2>&1; echo "$KUBERNETES_VERSION $ETCD_VERSION $KUBEVIRT_VERSION"'
    return subprocess.run(["bash", "-c", cmd], env=env, capture_output=True, text=True).stdout.split()
# Sections of pairs this run did not run are kept from the file as it was.
sections = {}
if os.path.exists(out):
    for m in re.finditer(r"^## (\w+):.*?(?=^## |\Z)", open(out).read(), re.M | re.S):
        sections[m.group(1)] = m.group(0).rstrip()
for pair in sys.argv[3:]:
    # the pair's e2e/run.sh output: the scenarios' `go test -v` lines and its summary line
    log, meta = f"{results}/{pair}.log", f"{results}/{pair}.meta"
    if not (os.path.exists(log) and os.path.exists(meta)):
        continue
    secs, prc, commit, day = open(meta).read().split()
    k8s, etcd, kv = versions(pair)
    text = open(log, errors="replace").read()
    rows, skips = [], {}
    for m in re.finditer(r"^\s*--- (PASS|FAIL|SKIP): (\S+) \(([\d.]+)s\)", text, re.M):
        rows.append((m.group(2), m.group(1), m.group(3)))
    # framework.SkipWithout prints "<test> skipped: <reason>" as its skip message.
    for m in re.finditer(r"^\s+\S+\.go:\d+: (Test\S+) skipped: (.*)$", text, re.M):
        skips[m.group(1)] = m.group(2)
    summary = re.search(r"^e2e: (\d+) passed, (\d+) failed", open(f"{results}/{pair}.log", errors="replace").read(), re.M)
    # Every scenario, and the parts of scenarios (subtests) that skipped themselves.
    top = [r for r in rows if "/" not in r[0] or r[1] == "SKIP"]
    n = {s: sum(1 for r in top if r[1] == s and "/" not in r[0]) for s in ("PASS", "FAIL", "SKIP")}
    n["SUBSKIP"] = sum(1 for r in top if r[1] == "SKIP" and "/" in r[0])
    lines = [f"## {pair}: Kubernetes {k8s}, KubeVirt {kv} (etcd {etcd})", "",
             f"Run {day} at commit {commit}, {int(secs) // 60} min {int(secs) % 60} s including builds: "
             f"**{n['PASS']} passed, {n['FAIL']} failed, {n['SKIP']} skipped**, {n['SUBSKIP']} parts of scenarios skipped "
             f"(e2e/run.sh: {summary.group(1) + ' passed, ' + summary.group(2) + ' failed' if summary else 'no summary line'}).", "",
             "| scenario | result | seconds |", "| --- | --- | --- |"]
    for name, res, sec in top:
        cell = {"PASS": "passed", "FAIL": "**failed**", "SKIP": "skipped: " + skips.get(name, "(see log)")}[res]
        lines.append(f"| {name} | {cell} | {sec} |")
    sections[pair] = "\n".join(lines)
head = """# Compatibility

The e2e tier (e2e/tests) on each pair of the matrix in `hack/versions.env`, written by
`e2e/matrix.sh` (which runs `KMT_E2E_MATRIX=<pair> e2e/run.sh` per pair). CI runs the default pair
on every submission; this file keeps the last result of each pair. Scenarios that need what a
pair lacks skip themselves and say why; docs/install.md "Requirements" lists them.
"""
open(out, "w").write(head + "\n" + "\n\n".join(sections[p] for p in ["default", "old", "new"] if p in sections) + "\n")
PY
exit $rc
