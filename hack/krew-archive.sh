#!/usr/bin/env bash
# Packs the plugin's release archive, the one a krew manifest points at:
#   hack/krew-archive.sh OUT.tar.gz KUBECTL_MIGRATE KUBECTL_COMPLETE_MIGRATE LICENSE
# The archive holds kubectl-migrate and kubectl_complete-migrate (0755) and LICENSE (0644) at
# its top level, as regular files only (krew extracts regular files and directories and
# refuses anything else), owner 0:0, names sorted, mtimes SOURCE_DATE_EPOCH (default 0) and no
# gzip timestamp, so the same inputs always give the same bytes and the same sha256.
# hack/krew-release.sh builds the inputs and calls this; cli/krew's test calls it too.
set -euo pipefail
[[ $# -eq 4 ]] || { echo "usage: $0 OUT.tar.gz KUBECTL_MIGRATE KUBECTL_COMPLETE_MIGRATE LICENSE" >&2; exit 2; }
out=$1
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
# install(1) copies what a symlink (Bazel's outputs are often symlinks) points to.
install -m 0755 "$2" "$stage/kubectl-migrate"
install -m 0755 "$3" "$stage/kubectl_complete-migrate"
install -m 0644 "$4" "$stage/LICENSE"
tar --format=ustar --sort=name --owner=0 --group=0 --numeric-owner \
  --mtime="@${SOURCE_DATE_EPOCH:-0}" -C "$stage" -cf - LICENSE kubectl-migrate kubectl_complete-migrate |
  gzip -n -9 >"$out.tmp"
mv "$out.tmp" "$out"
