#!/usr/bin/env bash
# Builds the operator image from the project's Dockerfile on a machine with no image registry,
# and writes it as an OCI archive that containerd can import.
#
#   hack/image.sh            build (or reuse) the image; prints the archive's path on the last line
#
# 1. The bases the Dockerfile names, debian:bookworm and debian:bookworm-slim, are made locally:
#    debootstrap --variant=minbase from the Debian mirror this machine's apt is configured with
#    (read from /etc/apt at run time), with the machine's apt sources and Acquire settings; the
#    slim one without docs, man pages and locales (what Debian's slim images leave out). Both are
#    committed into a buildah storage of our own and reused while their key does not change.
# 2. `buildah bud --pull=never --network host --layers` builds the Dockerfile unchanged (the same
#    file `docker build .` and `podman build .` use) from a copy of the tree's tracked and
#    untracked, not ignored files. Bazel's disk cache is the Dockerfile's `RUN --mount=type=cache`,
#    which buildah keeps under $TMPDIR (set to our cache directory here).
# 3. `buildah push` writes oci-archive $ARCHIVE with the name kmt.local/kubevirt-migration-target:TAG
#    (`ctr -n k8s.io images import $ARCHIVE` loads it into containerd).
# The image is keyed by a hash of the build context (paths, modes, contents), the bases and buildah's
# version: an unchanged tree does not rebuild.
#
# Everything lives under ${KMT_CACHE:-~/.cache/kubevirt-migration-target}/image.
set -euo pipefail
cd "$(dirname "$0")/.."

CACHE_ROOT=${KMT_CACHE:-$HOME/.cache/kubevirt-migration-target}
IMG_CACHE=$CACHE_ROOT/image
SUITE=bookworm
BASE_RECIPE=2  # bump when make_bases changes what goes into the bases
TAG=$(sed -n 's/^ *newTag: *//p' manifests/default/kustomization.yaml | head -1)
[[ -n $TAG ]] || { echo "image: no newTag in manifests/default/kustomization.yaml" >&2; exit 1; }
IMAGE=kmt.local/kubevirt-migration-target:$TAG

for tool in buildah debootstrap runc; do
  command -v "$tool" >/dev/null || { echo "image: $tool is missing (hack/install-deps.sh installs it)" >&2; exit 1; }
done
[[ $(id -u) -eq 0 ]] || { echo "image: needs root (debootstrap, buildah's overlay storage)" >&2; exit 1; }

mkdir -p "$IMG_CACHE"/{storage,bases,tmp,archives}
# buildah with a storage of its own, so nothing here touches (or is touched by) other users of
# buildah or podman on the machine; one runroot (locks and mount state, on tmpfs so a reboot
# clears it) per storage.
RUNROOT=/run/kmt-image-buildah-$(echo "$IMG_CACHE" | cksum | cut -d' ' -f1)
bh() { buildah --root "$IMG_CACHE/storage" --runroot "$RUNROOT" --storage-driver overlay "$@"; }
# buildah (1.28) keeps `RUN --mount=type=cache` directories under $TMPDIR/buildah-cache/<id>.
export TMPDIR=$IMG_CACHE/tmp

# The Debian mirror of this machine's apt sources (deb822 .sources or one-line .list).
apt_mirror() {
  python3 - "$SUITE" <<'PY'
import glob, sys
suite = sys.argv[1]
files = sorted(glob.glob("/etc/apt/sources.list.d/*.sources"))
for f in files:
    for stanza in open(f).read().split("\n\n"):
        kv = {}
        for line in stanza.splitlines():
            if line.startswith("#") or ":" not in line:
                continue
            k, v = line.split(":", 1)
            kv[k.strip().lower()] = v.split()
        if ("deb" in kv.get("types", []) and suite in kv.get("suites", [])
                and "main" in kv.get("components", []) and kv.get("uris")
                and kv.get("enabled", ["yes"])[0] != "no"):
            print(kv["uris"][0]); sys.exit(0)
for f in ["/etc/apt/sources.list"] + sorted(glob.glob("/etc/apt/sources.list.d/*.list")):
    try:
        lines = open(f).read().splitlines()
    except OSError:
        continue
    for line in lines:
        w = line.split("#", 1)[0].split()
        if w and w[0] == "deb":
            w = [x for x in w[1:] if not x.startswith("[")]
            if len(w) >= 3 and w[1] == suite and "main" in w[2:]:
                print(w[0]); sys.exit(0)
sys.exit("no apt source for %s main in /etc/apt" % suite)
PY
}

# Makes one base image NAME from the root file system archive ROOTFS unless it is in storage with the same key.
commit_base() {
  local name=$1 rootfs=$2 key=$3
  if [[ $(bh inspect --type image --format '{{index .ImageAnnotations "kmt.base-key"}}' "$name" 2>/dev/null) == "$key" ]]; then
    return 0
  fi
  local ctr
  ctr=$(bh from --pull=never scratch)
  bh add "$ctr" "$rootfs" / >/dev/null  # a local tar archive is extracted
  bh config --env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin --cmd bash \
    --annotation "kmt.base-key=$key" "$ctr"
  bh commit --rm --quiet "$ctr" "$name" >/dev/null
  echo "image: base $name committed (key $key)" >&2
}

make_bases() {
  local mirror deb_version key dir
  mirror=$(apt_mirror)
  deb_version=$(dpkg-query -W -f='${Version}' debootstrap)
  # The key: the suite, debootstrap's version, the mirror and the apt configuration copied in.
  key=$( { echo "$SUITE $deb_version $mirror $BASE_RECIPE"; apt_config_files | xargs -r cat; } | sha256sum | cut -c1-16)
  dir=$IMG_CACHE/bases/$SUITE-$key
  if [[ ! -f $dir/done ]]; then
    rm -rf "$IMG_CACHE/bases/$SUITE"-* && mkdir -p "$dir"  # one key at a time
    local t0=$SECONDS
    echo "image: debootstrap --variant=minbase $SUITE from this machine's apt mirror" >&2
    debootstrap --variant=minbase "$SUITE" "$dir/root" "$mirror" >"$dir/debootstrap.log" 2>&1 \
      || { tail -20 "$dir/debootstrap.log" >&2; echo "image: debootstrap failed" >&2; return 1; }
    # The machine's apt sources and Acquire settings (e.g. a snapshot mirror's validity), so
    # `apt-get update` in the Dockerfile sees what the host sees.
    rm -f "$dir/root/etc/apt/sources.list"
    apt_config_files | while read -r f; do cp "$f" "$dir/root$f"; done
    # As in Debian's official images (debuerreotype): apt keeps no package cache in a layer, so
    # `apt-get install … && rm -rf /var/lib/apt/lists/*` leaves nothing behind.
    cat >"$dir/root/etc/apt/apt.conf.d/docker-clean" <<'EOF'
DPkg::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };
APT::Update::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };
Dir::Cache::pkgcache "";
Dir::Cache::srcpkgcache "";
EOF
    echo 'APT::AutoRemove::SuggestsImportant "false";' >"$dir/root/etc/apt/apt.conf.d/docker-autoremove-suggests"
    rm -rf "$dir"/root/var/cache/apt/archives/*.deb "$dir"/root/var/cache/apt/*.bin "$dir"/root/var/lib/apt/lists/*
    # slim: as Debian's -slim images, no docs, man pages or locales (and dpkg keeps it so).
    cp -a "$dir/root" "$dir/slim"
    rm -rf "$dir"/slim/usr/share/{doc,man,info,groff,lintian,linda}/* "$dir"/slim/usr/share/locale/*
    cat >"$dir/slim/etc/dpkg/dpkg.cfg.d/slim" <<'EOF'
path-exclude /usr/share/doc/*
path-include /usr/share/doc/*/copyright
path-exclude /usr/share/man/*
path-exclude /usr/share/info/*
path-exclude /usr/share/groff/*
path-exclude /usr/share/lintian/*
path-exclude /usr/share/locale/*
EOF
    tar --numeric-owner -C "$dir/root" -cf "$dir/root.tar" . && tar --numeric-owner -C "$dir/slim" -cf "$dir/slim.tar" .
    rm -rf "$dir/root" "$dir/slim"
    touch "$dir/done"
    echo "image: debootstrap took $((SECONDS - t0)) s" >&2
  fi
  commit_base "debian:$SUITE" "$dir/root.tar" "$key"
  commit_base "debian:$SUITE-slim" "$dir/slim.tar" "$key"
}

# The apt configuration copied into the bases: the sources, and the apt.conf.d files that set
# Acquire:: options. Sorted paths, one a line.
apt_config_files() {
  {
    ls /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources 2>/dev/null || true
    grep -l -E '^[[:space:]]*Acquire::' /etc/apt/apt.conf.d/* 2>/dev/null || true
  } | sort
}

# The build context: the files git would track (tracked, plus untracked and not ignored), minus
# what .dockerignore leaves out of `docker build .`, copied so the context is exactly what is hashed.
make_context() {
  local ctx
  ctx=$(mktemp -d "$IMG_CACHE/tmp/context.XXXXXX")
  git ls-files -z --cached --others --exclude-standard \
    | python3 -c '
import os, sys
paths = [p for p in sys.stdin.buffer.read().decode().split("\0") if p and os.path.lexists(p)]
sys.stdout.write("\0".join(sorted(paths)))' \
    | tar --null -T - -c | tar -x -C "$ctx"
  echo "$ctx"
}

context_hash() {
  local ctx=$1
  (cd "$ctx" && find . -type f -print0 | sort -z | xargs -0 stat -c '%a %n' \
    && find . -type f -print0 | sort -z | xargs -0 sha256sum) | sha256sum | cut -c1-16
}

make_bases
ctx=$(make_context)
trap 'rm -rf "$ctx"' EXIT
base_ids=$(for b in "debian:$SUITE" "debian:$SUITE-slim"; do bh images --noheading --no-trunc --format '{{.ID}}' "$b"; done)
# The commit --version reports: HEAD, marked -dirty when the tree differs from it.
COMMIT=$(git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)
[[ $COMMIT == unknown ]] || git diff --quiet HEAD -- 2>/dev/null || COMMIT=$COMMIT-dirty
hash=$( { context_hash "$ctx"; echo "$base_ids"; buildah --version; echo "$COMMIT"; } | sha256sum | cut -c1-16)
ARCHIVE=$IMG_CACHE/archives/kubevirt-migration-target-$TAG-$hash.oci.tar

image_id() { bh images --noheading --no-trunc --format '{{.ID}}' "$IMAGE" 2>/dev/null; }
if [[ -f $ARCHIVE && -f $ARCHIVE.id ]] && [[ $(image_id) == "$(cat "$ARCHIVE.id")" ]]; then
  echo "image: $IMAGE is up to date (context $hash)" >&2
else
  t0=$SECONDS
  echo "image: buildah bud -f Dockerfile (context $hash)" >&2
  # --layers: the build stage's toolchain layer (hack/install-deps.sh) is reused while sources
  # change; --network host: apt-get in RUN steps without a CNI bridge or iptables rules.
  bh bud --pull=never --network host --layers --isolation oci --build-arg KMT_COMMIT="$COMMIT" \
    -t "$IMAGE" -f "$ctx/Dockerfile" "$ctx" >&2
  rm -f "$IMG_CACHE"/archives/kubevirt-migration-target-*.oci.tar*
  bh push --quiet --format oci "$IMAGE" "oci-archive:$ARCHIVE:$IMAGE" >&2
  image_id >"$ARCHIVE.id"
  echo "image: built and archived in $((SECONDS - t0)) s" >&2
fi
echo "image: $IMAGE, $(du -m "$ARCHIVE" | cut -f1) MB archive" >&2
echo "$ARCHIVE"
