#!/usr/bin/env bash
# Writes (or rewrites) the Go module a matrix pair builds its Kubernetes binaries from:
# kube-apiserver, kube-scheduler, kube-controller-manager, kubectl and etcd, as `tool`
# lines, with every k8s.io/<staging> module that k8s.io/kubernetes VERSION replaces by
# ./staging replaced by its v0.Y.Z release instead (what e2e/tools/k8s does for the default).
# Run by hand when a pair's versions change in hack/versions.env; the result is committed.
# Usage: e2e/matrix/gen-k8s-module.sh DIR KUBERNETES_VERSION ETCD_VERSION
set -euo pipefail
source "$(dirname "$0")/../lib.sh"
kmt_use_go
dir=$1 k8s=$2 etcd=$3
staging=v0.${k8s#v1.}
mkdir -p "$dir"
cd "$dir"
rm -f go.mod go.sum
go mod init "kmt.local/e2e/matrix/$(basename "$(dirname "$PWD")")/$(basename "$PWD")" 2>/dev/null
go mod edit -go="$GO_MIN_VERSION"
mod=$(go mod download -json "k8s.io/kubernetes@$k8s" | sed -n 's/.*"GoMod": "\(.*\)".*/\1/p')
for m in $(sed -n 's|^[[:space:]]*\(k8s.io/[^ ]*\) => ./staging/.*|\1|p' "$mod"); do
  go mod edit -replace="$m=$m@$staging"
done
go get -tool "k8s.io/kubernetes/cmd/kube-apiserver@$k8s" "k8s.io/kubernetes/cmd/kube-scheduler@$k8s" \
  "k8s.io/kubernetes/cmd/kube-controller-manager@$k8s" "k8s.io/kubernetes/cmd/kubectl@$k8s" \
  "go.etcd.io/etcd/server/v3@$etcd"
go mod tidy
