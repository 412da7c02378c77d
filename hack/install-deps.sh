#!/usr/bin/env bash
# Installs every system dependency of the build and the tests, idempotently.
# Debian packages through apt-get. The Go toolchain: the machine's own when it is new
# enough (hack/versions.env), else the Go module golang.org/toolchain (hack/go.sh).
# Kubernetes, etcd and KubeVirt binaries are built from Go modules by
# e2e/build-binaries.sh, cached outside the repo.
# --build-only: only what the C++ build needs (the container image's build stage).
set -euo pipefail
BUILD_ONLY=0
[[ ${1:-} == --build-only ]] && BUILD_ONLY=1

PACKAGES=(
  bazel-bootstrap          # Bazel 4.2.3, used fully offline (see WORKSPACE)
  g++
  libcpp-httplib-dev       # HTTP(S) client and server
  nlohmann-json3-dev
  catch2
  libboost-dev             # Asio
  libssl-dev
  zlib1g-dev
  libbrotli-dev
  libyaml-cpp-dev          # kubeconfig parsing
  libfmt-dev
  libcli11-dev
  libbenchmark-dev
  clang-format
  clang-14                 # fuzz/run.sh: libFuzzer targets
  libclang-rt-14-dev       # libFuzzer, ASan and UBSan runtimes for clang-14
  openssl                  # certificates for the e2e control plane
  curl
  procps
  iproute2                 # ss, used by e2e/operator.sh
  python3
  python3-yaml             # hack/rbac_check.py
)
# The image tier (hack/image.sh, hack/image_check.sh); not needed inside the image's build stage.
((BUILD_ONLY)) || PACKAGES+=(
  clang-tidy-22            # hack/clang_tidy.sh (22: no checks run over system headers, ~3x faster)
  buildah                  # builds the Dockerfile from local bases, no registry
  debootstrap              # the Debian bases, from this machine's apt mirror
  runc                     # runs the image as a kubelet's runtime would
  # The real node infra-0 (e2e/node.sh): its runtime, its pod network, kube-proxy's rules, the
  # test image's static busybox; nft deletes the empty iptables-nft tables on `down`.
  containerd
  containernetworking-plugins
  iptables
  nftables
  busybox-static
)

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "install-deps: installing ${missing[*]}"
  SUDO=""
  [[ $(id -u) -eq 0 ]] || SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

if ((BUILD_ONLY)); then
  echo "install-deps: ok (build only)"
  exit 0
fi

# shellcheck source=versions.env
source "$(dirname "$0")/versions.env"
# shellcheck source=go.sh
source "$(dirname "$0")/go.sh"
kmt_install_go || { echo "install-deps: no Go toolchain >= $GO_MIN_VERSION for e2e" >&2; exit 1; }
echo "install-deps: ok (bazel $(bazel --version 2>/dev/null | awk '{print $2}'), $(go version | awk '{print $3}'))"
