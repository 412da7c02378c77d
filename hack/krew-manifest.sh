#!/usr/bin/env bash
# Writes the krew manifest for a release archive:
#   hack/krew-manifest.sh VERSION URI ARCHIVE HOMEPAGE > migrate.yaml
set -euo pipefail
[[ $# -eq 4 ]] || { echo "usage: $0 VERSION URI ARCHIVE HOMEPAGE" >&2; exit 2; }
sha=$(sha256sum "$3" | awk '{print $1}')
sed -e "s|@VERSION@|$1|" -e "s|@URI@|$2|" -e "s|@SHA256@|$sha|" -e "s|@HOMEPAGE@|$4|" \
  "$(dirname "$0")/../cli/krew/migrate.yaml.in"
