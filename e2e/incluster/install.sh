#!/usr/bin/env bash
# Installs the operator the way the README's "Install on a real cluster" tells users to, on the
# e2e cluster's real node infra-0 (called by e2e/incluster/hook.sh, after `e2e/cluster.sh up`
# with KMT_E2E_IN_CLUSTER=1 and without the out-of-cluster operator):
#
#   e2e/incluster/install.sh ARCHIVE
#
# 1. the image: ARCHIVE (hack/image.sh's OCI archive, kmt.local/kubevirt-migration-target:TAG)
#    loaded into the node's containerd with `ctr -n k8s.io images import`, as the README says for
#    a cluster without a registry;
# 2. what this cluster imposes on the namespace, as an admin would on a cluster whose
#    infrastructure nodes are tainted: the namespace created first with PodNodeSelector's and
#    PodTolerationRestriction's annotations (node selector kmt.local/infra=true, a toleration of
#    the node's taint), so both replicas run on infra-0 and never on a fake node. The manifests
#    are not changed for it;
# 3. a copy of manifests/default where only `kustomize edit set image` ran (the images: entry
#    written as kustomize writes it when there is no kustomize binary, see e2e/README.md);
# 4. `kubectl apply -k` of that copy, as the admin.
# The scenarios (e2e/tests/incluster*_test.go) wait for the result themselves.
set -euo pipefail
# shellcheck source=e2e/lib.sh
source "$(dirname "$0")/../lib.sh"
cd "$KMT_ROOT"

ARCHIVE=${1:?usage: e2e/incluster/install.sh ARCHIVE}
RUN=$KMT_E2E_DIR
NS=kubevirt-migration-target
TAG=$(sed -n 's/^ *newTag: *//p' manifests/default/kustomization.yaml | head -1)
IMAGE=kmt.local/kubevirt-migration-target:$TAG
KUBECTL=${KMT_KUBECTL:-$KMT_K8S_BIN/kubectl}
k() { "$KUBECTL" --kubeconfig "$RUN/admin.kubeconfig" "$@"; }
t0=$SECONDS

# 1. The image.
[[ -s $ARCHIVE ]] || { kmt_log "incluster: no image archive at $ARCHIVE"; exit 1; }
ctr --address "$KMT_E2E_NODE_CTR_ADDRESS" -n k8s.io images import "$ARCHIVE" >/dev/null
# The list read whole first: under pipefail, `ctr … | grep -q` fails whenever grep exits at its
# match before ctr has written the rest (SIGPIPE), which a CI run hit once.
images=$(ctr --address "$KMT_E2E_NODE_CTR_ADDRESS" -n k8s.io images ls -q)
grep -qx "$IMAGE" <<<"$images" ||
  { kmt_log "incluster: $IMAGE not in the node's containerd after the import: ${images//$'\n'/, }"; exit 1; }

# 2. The cluster's defaults for the namespace. Created and annotated imperatively: an apply would
#    record the annotations as applied, and `apply -k` of namespace.yaml would then remove them.
k get namespace "$NS" >/dev/null 2>&1 || k create namespace "$NS" >/dev/null
k annotate --overwrite namespace "$NS" >/dev/null \
  scheduler.alpha.kubernetes.io/node-selector=kmt.local/infra=true \
  'scheduler.alpha.kubernetes.io/defaultTolerations=[{"key":"kmt.local/infra","operator":"Exists","effect":"NoSchedule"}]'

# 3. The copy and `kustomize edit set image kubevirt-migration-target=$IMAGE`.
dir=$RUN/install/default
rm -rf "$RUN/install" && mkdir -p "$RUN/install" && cp -r manifests/default "$dir"
if command -v kustomize >/dev/null; then
  (cd "$dir" && kustomize edit set image "kubevirt-migration-target=$IMAGE")
else
  # What kustomize v5's `edit set image NAME=NEWNAME:NEWTAG` does to an images: entry that
  # already names NAME: newName and newTag set, digest dropped, everything else as it was.
  python3 - "$dir/kustomization.yaml" "kubevirt-migration-target" "${IMAGE%:*}" "$TAG" <<'PY'
import sys, yaml
path, name, new_name, new_tag = sys.argv[1:]
doc = yaml.safe_load(open(path))
entries = [e for e in doc.get("images") or [] if e.get("name") == name]
if len(entries) != 1:
    sys.exit(f"{path}: expected one images: entry named {name}, found {len(entries)}")
e = entries[0]
e.pop("digest", None)
e["newName"], e["newTag"] = new_name, new_tag
doc["images"] = [dict(sorted(x.items(), key=lambda kv: ["name", "newName", "newTag"].index(kv[0])
                             if kv[0] in ("name", "newName", "newTag") else 3)) for x in doc["images"]]
yaml.safe_dump(doc, open(path, "w"), sort_keys=False)
PY
fi
# Nothing but the images: entry differs from manifests/default.
if ! diff -r -x kustomization.yaml manifests/default "$dir" >/dev/null; then
  kmt_log "incluster: the copy differs from manifests/default beyond kustomization.yaml"; exit 1
fi
python3 - manifests/default/kustomization.yaml "$dir/kustomization.yaml" <<'PY'
import sys, yaml
a, b = (yaml.safe_load(open(p)) for p in sys.argv[1:])
a.pop("images"); b.pop("images")
if a != b:
    sys.exit("the copy's kustomization.yaml differs beyond images:")
PY

# 4. Install.
k apply -k "$dir" >"$RUN/install/apply.log"
kmt_log "incluster: $IMAGE imported and manifests/default applied in $((SECONDS - t0))s ($(wc -l <"$RUN/install/apply.log") objects)"
