#!/usr/bin/env bash
# hack/clang_tidy.sh [file...] — clang-tidy with the repository's .clang-tidy over every tracked
# C++ file (or the files given), as the README's test command runs it. Ends with
# "tidy: N passed, M failed", one check per file; exit 0 when none failed.
#
# Every tracked .cc is a translation unit of its own, with the flags Bazel compiles it with
# (third-party headers are Debian's, under /usr/include, so system headers). A header is checked through the
# translation units that include it (HeaderFilterRegex takes every non-system header); a
# tracked header that no .cc reaches is checked as a translation unit of its own.
#
# clang-tidy 22 (Debian's clang-tidy-22; KMT_CLANG_TIDY overrides) because it no longer runs
# the checks over system headers: on this machine it takes about a third of clang-tidy 14's
# CPU per file (controller/reconcile.cc: 3.6 s against 8.6 s), most of which was matching
# nlohmann's, Asio's and Catch2's templates.
#
# A clean result is cached under $KMT_CACHE/clang-tidy (outside the repository, keyed by the
# tool's version, .clang-tidy and the translation unit as the preprocessor sees it, comments
# kept so that a NOLINT counts): a file whose unit did not change since it last passed is not
# checked again. A finding is never cached. KMT_CLANG_TIDY_CACHE=0 checks everything.
set -uo pipefail
cd "$(dirname "$0")/.."

TIDY=${KMT_CLANG_TIDY:-clang-tidy-22}
# The preprocessor of the same LLVM (clang-tidy-22 brings clang++-22) gives the cache key.
CLANGXX=${KMT_CLANG_TIDY_CXX:-clang++-22}
for tool in "$TIDY" "$CLANGXX"; do
  command -v "$tool" >/dev/null || {
    echo "tidy: $tool is missing (hack/install-deps.sh installs it)" >&2
    echo "tidy: 0 passed, 1 failed"
    exit 1
  }
done
# Each file's flags as Bazel compiles it: its -D, -iquote, -I and -isystem flags from
# `bazel aquery` (the build's own compile commands; C++20 as .bazelrc says). Files of targets
# //... leaves out (tagged manual: the cluster benchmarks, kube/cluster_test, the fuzz
# targets) get the union of every target's flags.
FLAGS_DIR=$(mktemp -d /tmp/kmt-tidy-flags.XXXXXX)
OUT=$(mktemp -d /tmp/kmt-tidy.XXXXXX)
trap 'rm -rf "$OUT" "$FLAGS_DIR"' EXIT
bazel aquery --output=jsonproto 'mnemonic("CppCompile", //...)' 2>/dev/null |
  /usr/bin/python3 -c '
import json, os, sys
out = sys.argv[1]
actions = json.load(sys.stdin).get("actions", [])
union = []
for a in actions:
    args = a["arguments"]
    src = args[args.index("-c") + 1]
    keep, i = [], 0
    while i < len(args):
        x = args[i]
        if x in ("-iquote", "-I", "-isystem") and i + 1 < len(args):
            keep += [x, args[i + 1]]
            i += 2
            continue
        if x.startswith("-D") and not x.startswith("-D__"):
            keep.append(x)
        i += 1
    keep = ["-std=c++20"] + keep
    with open(os.path.join(out, src.replace("/", "_")), "w") as f:
        f.write("\n".join(keep))
    for k in keep:
        if k not in union:
            union.append(k)
with open(os.path.join(out, "_union"), "w") as f:
    f.write("\n".join(union or ["-std=c++20", "-iquote", "."]))
' "$FLAGS_DIR" || { echo "tidy: bazel aquery failed" >&2; echo "tidy: 0 passed, 1 failed"; exit 1; }

# One check is off in the Catch2 tests (*_test.cc), and only there:
# bugprone-chained-comparison, because every REQUIRE(a == b) expands to Catch's expression
# decomposer, `Catch::Decomposer() <= a == b`, which the check reports as a chained
# comparison (no test writes one by hand).
TEST_CHECKS=-bugprone-chained-comparison
JOBS=${KMT_CLANG_TIDY_JOBS:-$(nproc)}
CACHE=${KMT_CACHE:-$HOME/.cache/kubevirt-migration-target}/clang-tidy
USE_CACHE=${KMT_CLANG_TIDY_CACHE:-1}
VERSION=$("$TIDY" --version | sed -n 's/.*version \([0-9][0-9.]*\).*/\1/p' | head -1)
CONFIG_HASH=$(sha256sum .clang-tidy | cut -c1-64)
mkdir -p "$CACHE/$VERSION"

if (($#)); then
  FILES=("$@")
else
  mapfile -t FILES < <(git ls-files '*.cc')
  # Headers no .cc includes (directly or through other headers) get a run of their own.
  mapfile -t ORPHANS < <(
    /usr/bin/python3 - <<'PY'
import re, subprocess
files = subprocess.run(["git", "ls-files", "*.cc", "*.h"], capture_output=True, text=True,
                       check=True).stdout.split()
include = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
edges = {}
for f in files:
    with open(f, errors="replace") as fh:
        edges[f] = include.findall(fh.read())
reached, todo = set(), [f for f in files if f.endswith(".cc")]
while todo:
    f = todo.pop()
    for h in edges.get(f, []):
        if h not in reached:
            reached.add(h)
            todo.append(h)
for f in files:
    if f.endswith(".h") and f not in reached:
        print(f)
PY
  )
  FILES+=("${ORPHANS[@]}")
fi

# One file: its result in $OUT/<n>.{rc,log}. Run through xargs, so it is a function of this
# script exported to the child shells.
check_one() {
  local n=$1 f=$2 lang=() only=() key flags=() ff
  ff=$FLAGS_DIR/${f//\//_}
  [[ -e $ff ]] || ff=$FLAGS_DIR/_union
  mapfile -t flags <"$ff"
  [[ $f == *.h ]] && lang=(-x c++)
  [[ $f == *_test.cc ]] && only=("--checks=$TEST_CHECKS")
  if [[ $USE_CACHE == 1 ]]; then
    key=$({
      echo "$VERSION $CONFIG_HASH ${only[*]} ${flags[*]} $f"
      "$CLANGXX" "${lang[@]}" "${flags[@]}" -E -P -C "$f" 2>&1
    } | sha256sum | cut -c1-64)
    if [[ -e $CACHE/$VERSION/$key ]]; then
      echo 0 >"$OUT/$n.rc"
      echo "cached" >"$OUT/$n.log"
      return
    fi
  fi
  "$TIDY" --quiet "${only[@]}" "$f" -- "${lang[@]}" "${flags[@]}" >"$OUT/$n.log" 2>&1
  local rc=$?
  echo "$rc" >"$OUT/$n.rc"
  if [[ $rc -eq 0 && $USE_CACHE == 1 ]]; then
    : >"$CACHE/$VERSION/$key"
  fi
}
export -f check_one
export TIDY CLANGXX VERSION CONFIG_HASH CACHE USE_CACHE OUT TEST_CHECKS FLAGS_DIR

start=$SECONDS
for i in "${!FILES[@]}"; do printf '%s\0%s\0' "$i" "${FILES[$i]}"; done |
  xargs -0 -n2 -P"$JOBS" bash -c 'check_one "$1" "$2"' _

pass=0 fail=0 cached=0
for i in "${!FILES[@]}"; do
  f=${FILES[$i]}
  rc=$(cat "$OUT/$i.rc" 2>/dev/null || echo 1)
  if [[ $rc -eq 0 ]]; then
    pass=$((pass + 1))
    grep -qx cached "$OUT/$i.log" && cached=$((cached + 1))
  else
    fail=$((fail + 1))
    echo "tidy: $f: clang-tidy exit $rc"
    grep -E 'error:|warning:' "$OUT/$i.log" | head -20 | sed 's/^/  /'
  fi
done
echo "tidy: ${#FILES[@]} files ($cached unchanged since they last passed) with $TIDY $VERSION in $((SECONDS - start)) s"
echo "tidy: $pass passed, $fail failed"
((fail == 0))
