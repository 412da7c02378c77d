#!/usr/bin/env bash
# The image tier of ./hack/test.sh: builds the operator image from the project's Dockerfile
# (hack/image.sh) and runs it as a kubelet would run manifests/default's Deployment, without a
# registry: runc (the runtime containerd starts for a kubelet) on an OCI bundle whose config is
# made from the image's config and the Deployment's pod and container securityContext, args and
# volumes: the UID, a read-only root, no capabilities, no privilege escalation, the emptyDir at
# the certificate directory, the memory limit, a network namespace of its own (no API server).
# Ends with "image: N passed, M failed". Every check that cannot run counts as failed.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1

CACHE_ROOT=${KMT_CACHE:-$HOME/.cache/kubevirt-migration-target}
IMG_CACHE=$CACHE_ROOT/image
# One runroot (locks, mount state; tmpfs, so a reboot clears it) per storage.
RUNROOT=/run/kmt-image-buildah-$(echo "$IMG_CACHE" | cksum | cut -d' ' -f1)
RUNC_ROOT=/run/kmt-image-runc
bh() { buildah --root "$IMG_CACHE/storage" --runroot "$RUNROOT" --storage-driver overlay "$@"; }

pass=0 fail=0
ok() { pass=$((pass + 1)); echo "image: ok   $*"; }
bad() { fail=$((fail + 1)); echo "image: FAIL $*"; }
CHECKS=14  # how many checks follow the build; all count as failed when the build does
finish() {
  echo "image: $pass passed, $fail failed"
  exit $((fail > 0))
}

WORK=$(mktemp -d /tmp/kmt-image-check.XXXXXX)
CTR=""
# shellcheck disable=SC2317  # called by the trap
cleanup() {
  if [[ -n $CTR ]]; then
    bh umount "$CTR" >/dev/null 2>&1
    bh rm "$CTR" >/dev/null 2>&1
  fi
  rm -rf "$WORK"
}
trap cleanup EXIT

t0=$SECONDS
if ! hack/image.sh >"$WORK/archive.path" || ! archive=$(tail -1 "$WORK/archive.path") || [[ ! -s $archive ]]; then
  bad "the image builds from Dockerfile (hack/image.sh failed; see above)"
  fail=$((fail + CHECKS))
  finish
fi
ok "the image builds from Dockerfile ($(basename "$archive"), $(du -m "$archive" | cut -f1) MB, $((SECONDS - t0)) s)"
TAG=$(sed -n 's/^ *newTag: *//p' manifests/default/kustomization.yaml | head -1)
IMAGE=kmt.local/kubevirt-migration-target:$TAG

# The rootfs is the image as containerd would unpack it: the archive itself, loaded afresh.
if ! bh pull --quiet "oci-archive:$archive" >/dev/null || ! CTR=$(bh from --pull=never --name "kmt-image-check-$$" "$IMAGE") \
  || ! ROOTFS=$(bh mount "$CTR") || ! bh inspect --type image "$IMAGE" | python3 -c 'import json, sys; json.dump(json.load(sys.stdin)["OCIv1"]["config"], sys.stdout)' >"$WORK/image-config.json"; then
  bad "the image's root file system and config could not be read"
  fail=$((fail + CHECKS - 1))
  finish
fi

# spec BUNDLE_DIR ARGS_JSON [CMD_OVERRIDE_JSON [EXTRA_ENV_JSON]] — writes an OCI bundle config for the Deployment's operator container;
# the process is the image's ENTRYPOINT + the given args unless CMD_OVERRIDE (JSON list) is set.
mkdir -p "$WORK/certs" && chmod 0777 "$WORK/certs"  # a kubelet's emptyDir is 0777
spec() {
  local dir=$1 args_json=$2 override=${3:-} extra_env=${4:-[]}
  mkdir -p "$dir"
  python3 - "$dir/config.json" "$ROOTFS" "$WORK/image-config.json" "$WORK/certs" "$args_json" "$override" "$extra_env" <<'PY'
import json, os, sys, yaml
out, rootfs, image_config, certs, args_json, override, extra_env = sys.argv[1:]
img = json.load(open(image_config))
docs = list(yaml.safe_load_all(open("manifests/default/deployment.yaml")))
dep = next(d for d in docs if d and d.get("kind") == "Deployment")
pod = dep["spec"]["template"]["spec"]
c = next(c for c in pod["containers"] if c["name"] == "operator")
psc, csc = pod.get("securityContext", {}), c.get("securityContext", {})
sc = {**psc, **csc}

# User: as containerd's CRI plugin does. runAsUser overrides the image's USER uid; without
# runAsGroup the gid is the uid's group in the image's /etc/passwd, else 0.
user = img.get("User", "")
uid_s, _, gid_s = user.partition(":")
if sc.get("runAsUser") is not None:
    uid = int(sc["runAsUser"])
    gid = 0
    try:
        for line in open(os.path.join(rootfs, "etc/passwd")):
            f = line.split(":")
            if len(f) > 3 and f[2] == str(uid):
                gid = int(f[3])
    except OSError:
        pass
else:
    uid, gid = int(uid_s or 0), int(gid_s or 0)
if sc.get("runAsGroup") is not None:
    gid = int(sc["runAsGroup"])
if sc.get("runAsNonRoot") and uid == 0:
    sys.exit("runAsNonRoot: the container would run as root; the kubelet refuses to start it")

args = (json.loads(override) if override else
        (img.get("Entrypoint") or []) + json.loads(args_json))
caps = [] if "ALL" in csc.get("capabilities", {}).get("drop", []) else ["CAP_CHOWN"]
mounts = [
    {"destination": "/proc", "type": "proc", "source": "proc"},
    {"destination": "/dev", "type": "tmpfs", "source": "tmpfs",
     "options": ["nosuid", "strictatime", "mode=755", "size=65536k"]},
    {"destination": "/dev/pts", "type": "devpts", "source": "devpts",
     "options": ["nosuid", "noexec", "newinstance", "ptmxmode=0666", "mode=0620", "gid=5"]},
    {"destination": "/dev/shm", "type": "tmpfs", "source": "shm",
     "options": ["nosuid", "noexec", "nodev", "mode=1777", "size=65536k"]},
    {"destination": "/sys", "type": "sysfs", "source": "sysfs", "options": ["nosuid", "noexec", "nodev", "ro"]},
]
vols = {v["name"]: v for v in pod.get("volumes", [])}
for vm in c.get("volumeMounts", []):
    v = vols[vm["name"]]
    if "emptyDir" not in v:
        sys.exit("volume %s is not an emptyDir; this check knows only emptyDir" % vm["name"])
    mounts.append({"destination": vm["mountPath"], "type": "bind", "source": certs,
                   "options": ["rbind", "ro" if vm.get("readOnly") else "rw"]})
# The service account token volume a kubelet projects read-only into every pod that automounts it.
if os.environ.get("KMT_SA_DIR"):
    mounts.append({"destination": "/var/run/secrets/kubernetes.io/serviceaccount", "type": "bind",
                   "source": os.environ["KMT_SA_DIR"], "options": ["rbind", "ro"]})
limit = c.get("resources", {}).get("limits", {}).get("memory", "")
units = {"Ki": 1 << 10, "Mi": 1 << 20, "Gi": 1 << 30}
mem = next((int(limit[:-2]) * m for s, m in units.items() if limit.endswith(s)), None)
config = {
    "ociVersion": "1.0.2-dev",
    "process": {
        "terminal": False,
        "user": {"uid": uid, "gid": gid},
        "args": args,
        "env": (img.get("Env") or ["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"])
               + json.loads(extra_env),
        "cwd": img.get("WorkingDir") or "/",
        "capabilities": {k: caps for k in ("bounding", "effective", "permitted")},
        "noNewPrivileges": sc.get("allowPrivilegeEscalation") is False,
    },
    "root": {"path": rootfs, "readonly": bool(csc.get("readOnlyRootFilesystem"))},
    "hostname": "operator",
    "mounts": mounts,
    "linux": {
        "resources": {"devices": [{"allow": False, "access": "rwm"}],
                      **({"memory": {"limit": mem}} if mem else {})},
        "namespaces": [{"type": t} for t in ("pid", "network", "ipc", "uts", "mount")],
        "maskedPaths": ["/proc/acpi", "/proc/kcore", "/proc/keys", "/proc/latency_stats",
                        "/proc/timer_list", "/proc/timer_stats", "/proc/sched_debug",
                        "/sys/firmware", "/proc/scsi"],
        "readonlyPaths": ["/proc/asound", "/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys",
                          "/proc/sysrq-trigger"],
    },
}
json.dump(config, open(out, "w"), indent=1)
PY
}

# run NAME ARGS_JSON [CMD_OVERRIDE_JSON [EXTRA_ENV_JSON]] — runs the container, at most 30 s; output
# in $WORK/NAME.out, exit code in $WORK/NAME.rc (124 on timeout).
run() {
  local name=$1
  if ! spec "$WORK/$name" "$2" "${3:-}" "${4:-[]}" 2>"$WORK/$name.out"; then
    echo 125 >"$WORK/$name.rc"
    return
  fi
  timeout -k 5 30 runc --root "$RUNC_ROOT" run --bundle "$WORK/$name" "kmt-image-$name-$$" \
    </dev/null >"$WORK/$name.out" 2>&1
  echo $? >"$WORK/$name.rc"
  runc --root "$RUNC_ROOT" delete -f "kmt-image-$name-$$" >/dev/null 2>&1
}
rc() { cat "$WORK/$1.rc"; }
show() { sed 's/^/    /' "$WORK/$1.out" | head -"${2:-10}"; }

DEPLOY_ARGS=$(python3 -c '
import json, yaml
d = next(d for d in yaml.safe_load_all(open("manifests/default/deployment.yaml")) if d and d.get("kind") == "Deployment")
c = next(c for c in d["spec"]["template"]["spec"]["containers"] if c["name"] == "operator")
print(json.dumps(c.get("args", [])))')
CERT_DIR=$(python3 -c '
import yaml
d = next(d for d in yaml.safe_load_all(open("manifests/default/deployment.yaml")) if d and d.get("kind") == "Deployment")
c = next(c for c in d["spec"]["template"]["spec"]["containers"] if c["name"] == "operator")
print(c["volumeMounts"][0]["mountPath"])')

# 1. The image's own user: numeric, so a kubelet can verify runAsNonRoot before starting it.
user=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1])).get("User",""))' "$WORK/image-config.json")
if [[ $user == 65532:65532 ]]; then ok "image USER is $user"; else bad "image USER is '$user', want 65532:65532"; fi

# 2-3. --help through the ENTRYPOINT, and the plugin's.
run help '["--help"]'
if [[ $(rc help) == 0 ]] && grep -q -- '--webhook-cert-dir' "$WORK/help.out"; then
  ok "ENTRYPOINT --help exits 0 ($(head -1 "$WORK/help.out"))"
else
  bad "ENTRYPOINT --help: exit $(rc help)"; show help
fi
run plugin '[]' '["/usr/local/bin/kubectl-migrate", "--help"]'
if [[ $(rc plugin) == 0 ]]; then ok "kubectl-migrate --help exits 0"; else bad "kubectl-migrate --help: exit $(rc plugin)"; show plugin; fi
# --version of both: exit 0, the release manifests/default deploys, and a commit.
run version '["--version"]'
if [[ $(rc version) == 0 ]] && grep -qE "^migration-target-operator $TAG \(commit [0-9a-f]{12}(-dirty)?\)$" "$WORK/version.out"; then
  ok "ENTRYPOINT --version exits 0 ($(head -1 "$WORK/version.out"))"
else
  bad "ENTRYPOINT --version: exit $(rc version), want \"migration-target-operator $TAG (commit <sha>)\""; show version
fi
run plugin_version '[]' '["/usr/local/bin/kubectl-migrate", "--version"]'
if [[ $(rc plugin_version) == 0 ]] && grep -qE "^kubectl-migrate $TAG \(commit [0-9a-f]{12}(-dirty)?\)$" "$WORK/plugin_version.out"; then
  ok "kubectl-migrate --version exits 0 ($(head -1 "$WORK/plugin_version.out"))"
else
  bad "kubectl-migrate --version: exit $(rc plugin_version)"; show plugin_version
fi

# 4. Every shared library of both binaries resolves inside the runtime image.
run ldd '[]' '["/usr/bin/ldd", "/usr/local/bin/migration-target-operator", "/usr/local/bin/kubectl-migrate"]'
if [[ $(rc ldd) == 0 ]] && ! grep -q 'not found' "$WORK/ldd.out" && grep -q 'libssl' "$WORK/ldd.out"; then
  ok "ldd: every library resolves ($(grep -c '=>' "$WORK/ldd.out") entries)"
else
  bad "ldd: exit $(rc ldd)"; grep 'not found' "$WORK/ldd.out" | sed 's/^/    /'; show ldd 5
fi

# 5-7. The process's identity and file system, with the container's own settings.
run ids '[]' '["/bin/sh", "-c", "id -u; id -g; grep -E \"^Cap(Eff|Prm|Bnd)|^NoNewPrivs\" /proc/self/status"]'
if [[ $(rc ids) == 0 ]] && [[ $(sed -n 1p "$WORK/ids.out") == 65532 ]]; then
  ok "runs as UID 65532 (gid $(sed -n 2p "$WORK/ids.out"); $(grep -c ':[[:space:]]*0*$' "$WORK/ids.out")/3 capability sets empty, $(grep NoNewPrivs "$WORK/ids.out" | tr -s '\t ' ' '))"
else
  bad "UID: exit $(rc ids)"; show ids
fi
# shellcheck disable=SC2016  # $d is the container shell's
run rofs '[]' '["/bin/sh", "-c", "for d in / /tmp /usr/local/bin /var/tmp; do if touch $d/.kmt-probe 2>/dev/null; then echo writable $d; fi; done; echo finished"]'
if [[ $(rc rofs) == 0 ]] && grep -qx finished "$WORK/rofs.out" && ! grep -q writable "$WORK/rofs.out"; then
  ok "the root file system is read-only (/, /tmp, /usr/local/bin, /var/tmp)"
else
  bad "read-only root: exit $(rc rofs)"; show rofs
fi
run certdir '[]' "[\"/bin/sh\", \"-c\", \"echo x > $CERT_DIR/tls.crt && mv $CERT_DIR/tls.crt $CERT_DIR/tls.key && cat $CERT_DIR/tls.key\"]"
if [[ $(rc certdir) == 0 ]] && [[ $(cat "$WORK/certdir.out") == x ]]; then
  ok "the certificate directory $CERT_DIR (the Deployment's emptyDir) is writable"
else
  bad "certificate directory: exit $(rc certdir)"; show certdir
fi

# 8-9. The Deployment's args, as the kubelet passes them, with no API server: accepted, then one
# clear error line (JSON, --log-format=json) naming the configuration problem, and exit 1 within
# 10 s. Once as above (no kubeconfig, no in-cluster variables), once with the variables every
# pod gets from the kubelet but no service account token mounted.
deploy_check() {
  local name=$1 want=$2 env=$3 t=$SECONDS
  run "$name" "$DEPLOY_ARGS" "" "$env"
  if python3 - "$WORK/$name.out" "$(rc "$name")" "$((SECONDS - t))" "$want" <<'PY'; then
import json, sys
path, rc, secs, want = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
lines = [l for l in open(path, errors="replace").read().splitlines() if l.strip()]
errors = []
for l in lines:
    try:
        rec = json.loads(l)
    except ValueError:
        sys.exit("a line that is not JSON: %r" % l)
    if str(rec.get("level", "")).lower() == "error":
        errors.append(rec)
if rc != 1 or secs > 10:
    sys.exit("exit %d after %d s, want 1 within 10 s" % (rc, secs))
if len(errors) != 1:
    sys.exit("%d error lines, want 1" % len(errors))
text = json.dumps(errors[0])
if "API server configuration" not in text or want not in text:
    sys.exit("the error does not name %r: %s" % (want, text))
print("image: %s: exit 1 after %d s: %s" % (path.rsplit("/", 1)[-1], secs, errors[0].get("error", text)))
PY
    ok "the Deployment's args are accepted; $name: one error line naming '$want', exit 1"
  else
    bad "the Deployment's args, $name (exit $(rc "$name"))"; show "$name"
  fi
}
deploy_check no-config kubeconfig '[]'
deploy_check in-cluster-no-token serviceaccount/token \
  '["KUBERNETES_SERVICE_HOST=10.96.0.1", "KUBERNETES_SERVICE_PORT=443", "KUBERNETES_PORT=tcp://10.96.0.1:443"]'

# 10-11. Started as a pod's container: the kubelet's in-cluster variables and a service account
# token volume, the API server unreachable (nothing listens in the container's network namespace).
# The operator itself (not a shell) must run as UID 65532 with no capabilities, keep running and
# retrying, listen on every containerPort of the Deployment, answer the liveness probe (/healthz
# 200) and fail the readiness probe (/readyz, nothing synced), all under the read-only root; then
# stop on SIGTERM well within the default 30 s grace period.
mkdir -p "$WORK/sa"
openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=kmt-image-check-ca \
  -keyout "$WORK/sa/ca.key" -out "$WORK/sa/ca.crt" >/dev/null 2>&1
echo kmt-image-check-token >"$WORK/sa/token"
echo kubevirt-migration-target >"$WORK/sa/namespace"
rm -f "$WORK/sa/ca.key" && chmod 0644 "$WORK/sa"/*
IN_CLUSTER_ENV='["KUBERNETES_SERVICE_HOST=127.0.0.1", "KUBERNETES_SERVICE_PORT=6443", "KUBERNETES_PORT=tcp://127.0.0.1:6443"]'
POD_ID=kmt-image-pod-$$
pod_state() { runc --root "$RUNC_ROOT" state "$POD_ID" 2>/dev/null | python3 -c 'import json,sys; s=json.load(sys.stdin); print(s["status"], s["pid"])'; }
PORTS=$(python3 -c '
import yaml
d = next(d for d in yaml.safe_load_all(open("manifests/default/deployment.yaml")) if d and d.get("kind") == "Deployment")
c = next(c for c in d["spec"]["template"]["spec"]["containers"] if c["name"] == "operator")
print(" ".join(str(p["containerPort"]) for p in c.get("ports", [])))
probe = c["livenessProbe"]["httpGet"]["port"]
print(next(p["containerPort"] for p in c["ports"] if p.get("name") == probe) if isinstance(probe, str) else probe)')
PROBE_PORT=$(sed -n 2p <<<"$PORTS") PORTS=$(sed -n 1p <<<"$PORTS")
: >"$WORK/pod.status"
if KMT_SA_DIR=$WORK/sa spec "$WORK/pod" "$DEPLOY_ARGS" "" "$IN_CLUSTER_ENV" 2>"$WORK/pod.out" \
  && runc --root "$RUNC_ROOT" run -d --bundle "$WORK/pod" "$POD_ID" </dev/null >"$WORK/pod.out" 2>&1; then
  sleep 5
  read -r status pid < <(pod_state)
  if [[ ${status:-} == running ]]; then
    grep -E '^(Uid|Gid|CapEff|CapPrm|NoNewPrivs):' "/proc/$pid/status" | tr -s '\t' ' ' >"$WORK/pod.status"
    healthz=$(nsenter -t "$pid" -n curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$PROBE_PORT/healthz")
    readyz=$(nsenter -t "$pid" -n curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$PROBE_PORT/readyz")
    listening=$(nsenter -t "$pid" -n ss -ltnH | awk '{print $4}' | sed 's/.*://' | sort -n | tr '\n' ' ')
    missing=""
    for p in $PORTS; do [[ " $listening " == *" $p "* ]] || missing+=" $p"; done
    if grep -qx 'Uid: 65532 65532 65532 65532' "$WORK/pod.status" && grep -qx 'CapEff: 0000000000000000' "$WORK/pod.status" \
      && grep -qx 'NoNewPrivs: 1' "$WORK/pod.status" && [[ $healthz == 200 && $readyz != 200 && -z $missing ]] \
      && grep -q '"source":"in-cluster"' "$WORK/pod.out"; then
      ok "as a pod with no reachable API server: the operator runs as UID 65532 ($(grep Gid "$WORK/pod.status")), no capabilities, listens on $PORTS, /healthz $healthz, /readyz $readyz"
    else
      bad "as a pod: healthz $healthz, readyz $readyz, listening on '$listening' (missing:${missing:-none})"
      sed 's/^/    /' "$WORK/pod.status"; show pod
    fi
    t=$SECONDS
    runc --root "$RUNC_ROOT" kill "$POD_ID" TERM >/dev/null 2>&1
    while [[ $(pod_state | cut -d' ' -f1) == running && $((SECONDS - t)) -lt 30 ]]; do sleep 0.5; done
    if [[ $(pod_state | cut -d' ' -f1) == stopped ]]; then
      ok "SIGTERM: stopped after $((SECONDS - t)) s ($(grep -c '"level":"error"' "$WORK/pod.out") error lines while the API server was unreachable)"
    else
      bad "SIGTERM: still running after $((SECONDS - t)) s"; show pod
    fi
  else
    bad "as a pod: the operator was not running after 5 s (state: ${status:-none})"; show pod
    bad "SIGTERM: not checked, the operator was not running"
  fi
else
  bad "as a pod: runc could not start it"; show pod
  bad "SIGTERM: not checked, the operator did not start"
fi
runc --root "$RUNC_ROOT" delete -f "$POD_ID" >/dev/null 2>&1

# 12. The same with one unknown flag is refused: the checks above would notice rejected args.
run badflag "$(python3 -c 'import json,sys; print(json.dumps(json.loads(sys.argv[1]) + ["--no-such-flag"]))' "$DEPLOY_ARGS")"
if [[ $(rc badflag) != 0 && $(rc badflag) != 124 ]] && grep -q -- '--no-such-flag' "$WORK/badflag.out"; then
  ok "an unknown flag next to the Deployment's args is refused (exit $(rc badflag))"
else
  bad "unknown flag: exit $(rc badflag)"; show badflag
fi

finish
