#!/usr/bin/env bash
# Builds one fuzz target with clang + libFuzzer (ASan, UBSan) outside Bazel and runs it for
# a bounded time. See fuzz/README.md for the targets and their input formats.
#
#   fuzz/run.sh TARGET [SECONDS]     TARGET: admitters policy json watch kubeconfig quantity selector http
#                                    admission (the older webhook/fuzz target); default 300 s
#   fuzz/run.sh all [SECONDS]        every target, one after the other
#
# Needs clang-14 and libclang-rt-14-dev (hack/install-deps.sh) and bazel (only to list the
# target's sources: `bazel query`, no build). The working corpus lives in
# $KMT_FUZZ_OUT/TARGET (default /tmp/kmt-fuzz/TARGET), seeded from the committed corpus, so
# a run never edits the repository; crashes land in $KMT_FUZZ_OUT/TARGET/artifacts. To keep
# a finding, copy the input into the target's corpus directory (its Bazel replay_test
# replays that directory) and fix the bug.
set -euo pipefail
cd "$(dirname "$0")/.."
target=${1:?usage: fuzz/run.sh TARGET [SECONDS]}
seconds=${2:-300}
if [[ $target == all ]]; then
  for t in admission admitters policy json watch kubeconfig quantity selector http; do "$0" "$t" "$seconds"; done
  exit 0
fi
cxx=${CXX_FUZZ:-clang++-14}
out=${KMT_FUZZ_OUT:-/tmp/kmt-fuzz}/$target

libs=()
case $target in
  admission)
    label=//webhook/fuzz:fuzz_entry harness=webhook/fuzz/fuzz_target.cc
    corpus=webhook/fuzz/corpus dict=webhook/fuzz/admission.dict ;;
  admitters | policy | json | watch | kubeconfig | quantity | selector)
    label=//fuzz/$target:entry harness=fuzz/libfuzzer_main.cc
    corpus=fuzz/$target/corpus dict=fuzz/$target/$target.dict ;;
  http)
    label=//fuzz/$target:entry harness=fuzz/libfuzzer_main.cc
    corpus=fuzz/$target/corpus dict=fuzz/$target/$target.dict libs=(-lssl -lcrypto -pthread) ;;
  *) echo "fuzz: unknown target $target" >&2; exit 2 ;;
esac

# The project's sources of the entry library and everything it depends on.
mapfile -t srcs < <(bazel query "kind('source file', deps($label))" 2>/dev/null |
  grep -v '^@' | grep '\.cc$' | sed -e 's|^//||' -e 's|:|/|' -e 's|^/||')
[[ ${#srcs[@]} -gt 0 ]] || { echo "fuzz: no sources for $label" >&2; exit 1; }

mkdir -p "$out/corpus" "$out/artifacts"
echo "fuzz: building $out/fuzzer ($target, ${#srcs[@]} sources) with $cxx"
"$cxx" -std=c++20 -O1 -g -fno-omit-frame-pointer \
  -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
  -I. "$harness" "${srcs[@]}" -lfmt -lyaml-cpp "${libs[@]}" -o "$out/fuzzer"

echo "fuzz: running $target for ${seconds}s"
start=$(date +%s)
set +e
"$out/fuzzer" -max_total_time="$seconds" -dict="$dict" \
  -max_len=65536 -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
  -artifact_prefix="$out/artifacts/" "$out/corpus" "$corpus" 2>&1 | tee "$out/last-run.log"
rc=${PIPESTATUS[0]}
set -e
echo "fuzz: $target ran $(( $(date +%s) - start ))s, exit code $rc," \
  "corpus $(ls "$out/corpus" | wc -l) inputs, artifacts: $(ls "$out/artifacts" | wc -l)"
exit "$rc"
