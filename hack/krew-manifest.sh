#!/usr/bin/env bash
# Writes the krew manifest for a release archive made by hack/krew-archive.sh:
#   hack/krew-manifest.sh VERSION URI ARCHIVE HOMEPAGE > migrate.yaml
# VERSION is krew's semantic version with a leading v (v0.1.0); the platform (os, arch)
# is read from the archive's name, kubectl-migrate_<VERSION>_<os>_<arch>.tar.gz, and the
# sha256 from its bytes.
set -euo pipefail
[[ $# -eq 4 ]] || { echo "usage: $0 VERSION URI ARCHIVE HOMEPAGE" >&2; exit 2; }
version=$1 uri=$2 archive=$3 homepage=$4
[[ $version =~ ^v[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?$ ]] ||
  { echo "$0: version \"$version\" is not v<major>.<minor>.<patch>" >&2; exit 2; }
base=$(basename "$archive")
[[ $base =~ ^kubectl-migrate_${version//./\\.}_([a-z0-9]+)_([a-z0-9]+)\.tar\.gz$ ]] ||
  { echo "$0: archive \"$base\" is not named kubectl-migrate_${version}_<os>_<arch>.tar.gz" >&2; exit 2; }
os=${BASH_REMATCH[1]} arch=${BASH_REMATCH[2]}
sha=$(sha256sum "$archive" | awk '{print $1}')
sed -e "s|@VERSION@|$version|" -e "s|@URI@|$uri|" -e "s|@SHA256@|$sha|" -e "s|@HOMEPAGE@|$homepage|" \
  -e "s|@OS@|$os|" -e "s|@ARCH@|$arch|" "$(dirname "$0")/../cli/krew/migrate.yaml.in"
