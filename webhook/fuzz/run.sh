#!/usr/bin/env bash
# Builds the admission fuzz target with clang + libFuzzer (ASan, UBSan) outside Bazel and
# runs it for a bounded time.
#
#   webhook/fuzz/run.sh [SECONDS]      (default 300)
#
# Needs clang-14 and libclang-rt-14-dev (hack/install-deps.sh). The working corpus lives
# in $KMT_FUZZ_OUT (default /tmp/kmt-fuzz), seeded from the committed corpus, so a run never
# edits the repository; crashes land in $KMT_FUZZ_OUT/artifacts. To keep a finding, copy
# the input into webhook/fuzz/corpus/ (the Bazel test fuzz_replay_test replays that
# directory) and fix the bug.
set -euo pipefail
cd "$(dirname "$0")/../.."
seconds=${1:-300}
out=${KMT_FUZZ_OUT:-/tmp/kmt-fuzz}
cxx=${CXX_FUZZ:-clang++-14}
mkdir -p "$out/corpus" "$out/artifacts"

srcs=(webhook/fuzz/fuzz_target.cc webhook/fuzz/fuzz_entry.cc webhook/admission.cc
      webhook/shell.cc kube/base64.cc)
for f in api/*.cc; do
  case $f in *_test.cc|*_benchmark.cc|*_memory.cc) ;; *) srcs+=("$f") ;; esac  # no programs
done

echo "fuzz: building $out/admission_fuzz with $cxx"
"$cxx" -std=c++20 -O1 -g -fno-omit-frame-pointer \
  -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
  -I. "${srcs[@]}" -lfmt -o "$out/admission_fuzz"

echo "fuzz: running for ${seconds}s"
start=$(date +%s)
set +e
"$out/admission_fuzz" -max_total_time="$seconds" -dict=webhook/fuzz/admission.dict \
  -max_len=65536 -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
  -artifact_prefix="$out/artifacts/" "$out/corpus" webhook/fuzz/corpus 2>&1 | tee "$out/last-run.log"
rc=${PIPESTATUS[0]}
set -e
echo "fuzz: ran $(( $(date +%s) - start ))s, exit code $rc, corpus $(ls "$out/corpus" | wc -l) inputs," \
  "artifacts: $(ls "$out/artifacts" | wc -l)"
exit "$rc"
