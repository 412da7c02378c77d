# The Go toolchain for e2e (sourced, not run; needs hack/versions.env sourced first).
#   kmt_use_go      put a Go >= GO_MIN_VERSION first on PATH (the machine's own, or
#                   the one kmt_install_go cached); returns 1 when there is none.
#   kmt_install_go  kmt_use_go, else install one: Go toolchains are published as the
#                   Go module golang.org/toolchain, so Debian's golang-go (too old
#                   to build KubeVirt, new enough to download a module) fetches
#                   v0.0.1-go$GO_MIN_VERSION.linux-$ARCH through the Go module proxy
#                   into $KMT_CACHE/go/go$GO_MIN_VERSION (outside the repo, keyed by version).
# shellcheck shell=bash

KMT_CACHE=${KMT_CACHE:-$HOME/.cache/kubevirt-migration-target}
KMT_GO_ROOT=$KMT_CACHE/go/go$GO_MIN_VERSION

# kmt_go_ok GO: GO runs and reports a version >= GO_MIN_VERSION.
kmt_go_ok() {
  local v
  v=$(GOTOOLCHAIN=local "$1" env GOVERSION 2>/dev/null) || return 1
  v=${v#go}
  [[ -n $v && $(printf '%s\n%s\n' "$GO_MIN_VERSION" "$v" | sort -V | head -1) == "$GO_MIN_VERSION" ]]
}

kmt_use_go() {
  local c
  for c in "$(command -v go 2>/dev/null || true)" /usr/local/go/bin/go "$HOME/go/bin/go" \
    /usr/lib/go/bin/go "$KMT_GO_ROOT/bin/go"; do
    if [[ -n $c && -x $c ]] && kmt_go_ok "$c"; then
      PATH="$(dirname "$c"):$PATH"
      export PATH
      return 0
    fi
  done
  return 1
}

kmt_install_go() {
  kmt_use_go && return 0
  local boot=/usr/lib/go/bin/go sudo="" arch tmp dir
  [[ $(id -u) -eq 0 ]] || sudo=sudo
  if [[ ! -x $boot ]]; then
    echo "install-deps: no Go >= $GO_MIN_VERSION; installing Debian's golang-go to fetch golang.org/toolchain"
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends golang-go >/dev/null
  fi
  arch=$(dpkg --print-architecture)
  tmp=$(mktemp -d)
  dir=$(GOPATH=$tmp GOMODCACHE=$tmp/mod GOFLAGS=-mod=mod GOTOOLCHAIN=local "$boot" mod download -json \
    "golang.org/toolchain@v0.0.1-go$GO_MIN_VERSION.linux-$arch" |
    sed -n 's/^[[:space:]]*"Dir": "\(.*\)",\{0,1\}$/\1/p')
  if [[ -z $dir || ! -x $dir/bin || ! -f $dir/bin/go ]]; then
    chmod -R u+w "$tmp" 2>/dev/null; rm -rf "$tmp"
    echo "install-deps: could not download golang.org/toolchain@v0.0.1-go$GO_MIN_VERSION.linux-$arch" >&2
    return 1
  fi
  mkdir -p "$(dirname "$KMT_GO_ROOT")"
  rm -rf "$KMT_GO_ROOT.partial"
  cp -r "$dir" "$KMT_GO_ROOT.partial"
  chmod -R u+w "$KMT_GO_ROOT.partial" "$tmp"
  # module zips carry no file modes: make the toolchain's programs executable again
  chmod +x "$KMT_GO_ROOT.partial"/bin/* "$KMT_GO_ROOT.partial"/pkg/tool/*/*
  rm -rf "$tmp"
  mv "$KMT_GO_ROOT.partial" "$KMT_GO_ROOT"
  kmt_use_go
}
