#!/usr/bin/env bash
# Builds the plugin's release: the archive and its krew manifest, with Bazel and the shell only.
#   hack/krew-release.sh VERSION URI_BASE HOMEPAGE [OUT_DIR]
# writes OUT_DIR (default dist/) kubectl-migrate_VERSION_OS_ARCH.tar.gz (this machine's
# platform) and migrate.yaml whose uri is URI_BASE/<archive name>. Install it with
#   kubectl krew install --manifest=dist/migrate.yaml --archive=dist/kubectl-migrate_....tar.gz
set -euo pipefail
[[ $# -eq 3 || $# -eq 4 ]] || { echo "usage: $0 VERSION URI_BASE HOMEPAGE [OUT_DIR]" >&2; exit 2; }
version=$1 uri_base=${2%/} homepage=$3
cd "$(dirname "$0")/.."
out=${4:-dist}
mkdir -p "$out"

case $(uname -s) in Linux) os=linux ;; Darwin) os=darwin ;; *) echo "$0: unsupported OS $(uname -s)" >&2; exit 1 ;; esac
case $(uname -m) in x86_64 | amd64) arch=amd64 ;; aarch64 | arm64) arch=arm64 ;; *) echo "$0: unsupported arch $(uname -m)" >&2; exit 1 ;; esac

cache=${KMT_CACHE:-$HOME/.cache/kubevirt-migration-target}
mkdir -p "$cache/bazel-disk"
bazel build --disk_cache="$cache/bazel-disk" //cli:kubectl-migrate //cli:kubectl_complete-migrate
bin=$(bazel info bazel-bin 2>/dev/null)/cli

name=kubectl-migrate_${version}_${os}_${arch}.tar.gz
# The archive's timestamps are the commit's, so a rebuild of the same commit is byte-identical.
SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || echo 0)} \
  hack/krew-archive.sh "$out/$name" "$bin/kubectl-migrate" "$bin/kubectl_complete-migrate" LICENSE
hack/krew-manifest.sh "$version" "$uri_base/$name" "$out/$name" "$homepage" >"$out/migrate.yaml"
echo "$out/$name"
echo "$out/migrate.yaml"
