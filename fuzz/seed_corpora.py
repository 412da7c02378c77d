#!/usr/bin/env python3
"""Writes the seed inputs of the fuzz targets under fuzz/ from the project's test data.

    fuzz/seed_corpora.py      (from the workspace root; rewrites only seed-* files)

Sources: webhook/testdata (golden AdmissionReviews), kube/testdata (watch streams), the
tables of api/quantity_test.cc and kube/selector_test.cc, the kubeconfig cases of
kube/kubeconfig_test.cc, and the policies and evacuation VMIMs below (the cases of
api/policy_test.cc and webhook/policy_attacher_test.cc). Inputs the fuzzer found are kept next to the seeds under other
names (crash-*, found-*) and are never touched here.
"""
import glob
import hashlib
import json
import os
import re

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def write(target, name, data):
    d = os.path.join(ROOT, "fuzz", target, "corpus")
    os.makedirs(d, exist_ok=True)
    if isinstance(data, str):
        data = data.encode()
    with open(os.path.join(d, "seed-" + name), "wb") as f:
        f.write(data)


def clear(target):
    for p in glob.glob(os.path.join(ROOT, "fuzz", target, "corpus", "seed-*")):
        os.remove(p)


def admitters():
    clear("admitters")
    # Control byte: bit 0 admitter; bits 1-2 SAR; bits 3-4 VMIM state; 5, 6 read failures.
    vmim_controls = [0x00, 0x02, 0x04, 0x06, 0x20, 0x40, 0x80]
    pod_controls = [0x01, 0x09, 0x11, 0x19, 0x21]
    for i, p in enumerate(sorted(glob.glob(os.path.join(ROOT, "webhook/testdata/vmim/*.request.json")))):
        body = json.dumps(json.load(open(p)), separators=(",", ":"))
        name = os.path.basename(p)[: -len(".request.json")]
        write("admitters", f"vmim-{name}", bytes([0x00]) + body.encode())
        c = vmim_controls[1 + i % (len(vmim_controls) - 1)]
        write("admitters", f"vmim-{name}-{c:02x}", bytes([c]) + body.encode())
    for i, p in enumerate(sorted(glob.glob(os.path.join(ROOT, "webhook/testdata/pod/*.request.json")))):
        body = json.dumps(json.load(open(p)), separators=(",", ":"))
        name = os.path.basename(p)[: -len(".request.json")]
        for c in pod_controls:
            write("admitters", f"pod-{name}-{c:02x}", bytes([c]) + body.encode())


def watch():
    clear("watch")
    pods = []
    for line in open(os.path.join(ROOT, "kube/testdata/watch_pods.jsonl"), encoding="utf-8"):
        if line.strip():
            pods.append(json.loads(line)["object"])
    page = json.dumps({"kind": "PodList", "apiVersion": "v1",
                       "metadata": {"resourceVersion": "100"}, "items": pods[:1]},
                      separators=(",", ":"))
    controls = [bytes([0x00]), bytes([0x03, 7, 200, 1]), bytes([0x0b, 0, 13, 255]),
                bytes([0x1a, 5, 80]), bytes([0x2f, 1, 2, 3, 4, 5, 6, 7])]
    for fname in ["watch_pods.jsonl", "watch_pods_crlf.jsonl"]:
        stream = open(os.path.join(ROOT, "kube/testdata", fname), "rb").read()
        for i, c in enumerate(controls):
            write("watch", f"{fname}-{i}", c + page.encode() + b"\n" + stream)
    gone = b'{"type":"ERROR","object":{"kind":"Status","apiVersion":"v1","status":"Failure",' \
           b'"reason":"Expired","code":410,"message":"too old resource version: 1 (5)"}}\n'
    bookmark = b'{"type":"BOOKMARK","object":{"kind":"Pod","metadata":{"resourceVersion":"7"}}}\n'
    managed = b'{"type":"MODIFIED","object":{"metadata":{"resourceVersion":"8","managedFields":' \
              b'[{"manager":"m"}],"labels":{"managedFields":"x"}}}}\n'
    write("watch", "gone", bytes([0x08]) + page.encode() + b"\n" + bookmark + gone)
    write("watch", "bookmark-managed", bytes([0x0a, 30, 9]) + page.encode() + b"\n" + bookmark + managed)
    write("watch", "continue", bytes([0x00]) + b'{"items":[],"metadata":{"continue":"abc"}}\n' + bookmark)
    write("watch", "partial", bytes([0x01, 3]) + page.encode() + b"\n" + bookmark + b'{"type":"ADD')
    write("watch", "unknown-type", bytes([0x00]) + page.encode() + b"\n" + b'{"type":"X","object":{}}\n')


HEAD = "current-context: x\ncontexts: [{name: x, context: {cluster: c, user: u}}]\n"
CLUSTER = "clusters: [{name: c, cluster: {server: 'https://s'}}]\n"
KUBECONFIGS = {
    "full": """apiVersion: v1
kind: Config
current-context: dev
clusters:
- name: dev
  cluster:
    server: https://10.0.0.1:6443/
    certificate-authority: ca.crt
    tls-server-name: api.example
contexts:
- name: dev
  context: {cluster: dev, user: admin, namespace: team-a}
- name: c
  context: {cluster: dev}
users:
- name: admin
  user:
    token: abc
    client-certificate: client.crt
    client-key: client.key
""",
    "exec": HEAD + CLUSTER + """users:
- name: u
  user:
    exec:
      apiVersion: client.authentication.k8s.io/v1
      command: ./bin/get-token
      args: [--region, eu]
      env: [{name: A, value: b}, {name: B}]
      provideClusterInfo: true
      installHint: install it
""",
    "data": HEAD + "clusters: [{name: c, cluster: {server: 'http://s:80', certificate-authority-data: aGVsbG8=}}]\n"
            "users: [{name: u, user: {client-certificate-data: aGVsbG8=, client-key-data: aGVsbG8=}}]\n",
    "insecure": HEAD + "clusters: [{name: c, cluster: {server: 'https://s', insecure-skip-tls-verify: true}}]\n"
                "users: [{name: u, user: {tokenFile: t}}]\n",
    "bad-yaml": "current-context: [unclosed\n",
    "sequence": "- a\n- b\n",
    "no-context": "contexts: [{name: x, context: {cluster: c}}]\n",
    "bad-insecure": HEAD + "clusters: [{name: c, cluster: {server: 'https://s', insecure-skip-tls-verify: maybe}}]\n",
    "token-list": HEAD + CLUSTER + "users: [{name: u, user: {token: [1]}}]\n",
    "auth-provider": HEAD + CLUSTER + "users: [{name: u, user: {auth-provider: {name: gcp}}}]\n",
    "clusters-map": "clusters: {c: 1}\n",
    "empty": "",
}


def kubeconfig():
    clear("kubeconfig")
    for name, text in KUBECONFIGS.items():
        write("kubeconfig", name, b"\x00" + text.encode())
        write("kubeconfig", name + "-context", b"\x02" + text.encode())
    # Two files merged through KUBECONFIG, split at the NUL byte.
    write("kubeconfig", "merge", b"\x01" + ("current-context: x\n" + CLUSTER).encode() + b"\0" +
          (HEAD + "clusters: [{name: c, cluster: {server: 'https://other'}}]\nusers: [{name: u, user: {}}]\n").encode())
    write("kubeconfig", "merge-context", b"\x03" + KUBECONFIGS["full"].encode() + b"\0" + KUBECONFIGS["exec"].encode())


TERM_B = {"matchExpressions": [{"key": "rack", "operator": "In", "values": ["b"]}]}
TERM_NOT_A1 = {"matchFields": [{"key": "metadata.name", "operator": "NotIn", "values": ["a-1"]}]}
POLICIES = {
    "plain": {"addedNodeSelectorTerm": TERM_B},
    "full": {"priority": 5, "maxInboundPerNode": 3,
             "match": {"origin": "Evacuation",
                       "sourceNodeSelector": {"matchLabels": {"rack": "a"}},
                       "namespaceSelector": {"matchExpressions": [{"key": "t", "operator": "NotIn", "values": ["x"]}]},
                       "vmiSelector": {}},
             "addedNodeSelectorTerm": TERM_B},
    "limit-0": {"maxInboundPerNode": 0, "addedNodeSelectorTerm": TERM_B},
    "limit-string": {"maxInboundPerNode": "1", "addedNodeSelectorTerm": TERM_B},
    "bad-origin": {"match": {"origin": "Drain"}, "addedNodeSelectorTerm": TERM_B},
    "bad-selector": {"match": {"vmiSelector": {"matchLabels": {"bad key!": "v"}}},
                     "addedNodeSelectorTerm": {"matchFields": [{"key": "metadata.labels", "operator": "In", "values": ["x"]}]}},
    "empty-term": {"addedNodeSelectorTerm": {}},
    "no-term": {},
}


def policy():
    clear("policy")
    for name, spec in POLICIES.items():
        obj = {"apiVersion": "migration-target.kubevirt.io/v1alpha1", "kind": "MigrationTargetPolicy",
               "metadata": {"name": name}, "spec": spec}
        write("policy", "policy-" + name, b"\x00" + json.dumps(obj, separators=(",", ":")).encode())
    write("policy", "policy-no-spec", b"\x00" + b'{"metadata":{"name":"n"}}')
    evac = {"kubevirt.io/evacuationMigration": "a-1"}
    vmims = {
        "evacuation": evac,
        "evacuation-b": {"kubevirt.io/evacuationMigration": "b-1"},
        "plain": None,
        "with-term": dict(evac, **{"migration-target.kubevirt.io/added-node-selector-term": json.dumps(TERM_B, separators=(",", ":"))}),
        "forged": dict(evac, **{"migration-target.kubevirt.io/added-node-selector-term": json.dumps(TERM_B, separators=(",", ":")),
                                "migration-target.kubevirt.io/policy": "rack-a-to-b",
                                "migration-target.kubevirt.io/max-inbound-per-node": "2"}),
        "forged-limit": dict(evac, **{"migration-target.kubevirt.io/added-node-selector-term": json.dumps(TERM_B, separators=(",", ":")),
                                      "migration-target.kubevirt.io/policy": "rack-a-to-b",
                                      "migration-target.kubevirt.io/max-inbound-per-node": "50"}),
        "limit-alone": {"migration-target.kubevirt.io/max-inbound-per-node": "1"},
        "other-policy": dict(evac, **{"migration-target.kubevirt.io/added-node-selector-term": json.dumps(TERM_NOT_A1, separators=(",", ":")),
                                      "migration-target.kubevirt.io/policy": "web"}),
    }
    for name, annotations in vmims.items():
        obj = {"apiVersion": "kubevirt.io/v1", "kind": "VirtualMachineInstanceMigration",
               "metadata": {"generateName": "kubevirt-evacuation-", "namespace": "ns1"},
               "spec": {"vmiName": "vm1"}}
        if annotations is not None:
            obj["metadata"]["annotations"] = annotations
        body = json.dumps(obj, separators=(",", ":")).encode()
        for control in (0x01, 0x05, 0x02, 0x06):
            write("policy", f"vmim-{name}-{control:02x}", bytes([control]) + body)
    for text in ["1", "2", "10000", "10001", "0", "03", "-1", "2.5", "", " 7", "99999999999"]:
        write("policy", "limit-" + hashlib.sha1(text.encode()).hexdigest()[:8], b"\x03" + text.encode())


def json_reads():
    # Byte 0: where the JSON is grafted (0 root, 1 metadata, 2 spec, 3 status, 4 spec.affinity,
    # 5 a container, 6 a condition, 7 the annotations); the rest is the JSON.
    clear("json")
    objects = {}
    for p in ["api/testdata/node.json", "api/testdata/vmim.json"] + sorted(glob.glob(os.path.join(ROOT, "api/testdata/and/*.pod.json"))):
        objects[os.path.basename(p)[: -len(".json")]] = json.load(open(os.path.join(ROOT, p)))
    for i, line in enumerate(open(os.path.join(ROOT, "kube/testdata/watch_pods.jsonl"), encoding="utf-8")):
        if line.strip() and i < 3:
            objects[f"watch-pod-{i}"] = json.loads(line)["object"]
    for name, obj in objects.items():
        body = json.dumps(obj, separators=(",", ":")).encode()
        write("json", name, b"\x00" + body)
        for part, control in (("metadata", 1), ("spec", 2), ("status", 3)):
            if isinstance(obj.get(part), dict):
                write("json", f"{name}-{part}", bytes([control]) + json.dumps(obj[part], separators=(",", ":")).encode())
    odd = {
        "null": (0, "null"),
        "not-json": (0, "{not json"),
        "array-root": (0, "[1,2,{\"metadata\":{}}]"),
        "meta-null": (0, '{"metadata":null,"spec":null,"status":null}'),
        "meta-string": (0, '{"metadata":"x","spec":7,"status":[]}'),
        "name-object": (1, '{"name":{"a":1},"uid":5,"labels":[],"annotations":"a"}'),
        "big-ints": (2, '{"topologySpreadConstraints":[{"maxSkew":18446744073709551615,"minDomains":-9223372036854775808,"topologyKey":"z"}],"nodeName":1e400}'),
        "floats": (2, '{"topologySpreadConstraints":[{"maxSkew":1.5,"minDomains":3.0}]}'),
        "gate": (2, '{"schedulingGates":[{"name":"migration-target.kubevirt.io/added-node-selector-term"}],"affinity":null}'),
        "gate-bad-utf8": (0, '{"metadata":{"uid":"\xff\xfe"},"spec":{"schedulingGates":[{"name":"migration-target.kubevirt.io/added-node-selector-term"}]}}'),
        "affinity-wrong": (4, '{"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":[1]},"podAntiAffinity":"x"}'),
        "container-requests": (5, '{"resources":{"requests":{"cpu":"1e30","memory":7,"pods":"3","x":"1Ki"}}}'),
        "condition-odd": (6, '{"type":"Ready","status":true}'),
        "annotations": (7, '{"migration-target.kubevirt.io/policy":"p","migration-target.kubevirt.io/max-inbound-per-node":{"a":1},"kubevirt.io/evacuationMigration":null}'),
        "volumes": (2, '{"volumes":[{"persistentVolumeClaim":{"claimName":"c"}},{"persistentVolumeClaim":null},7]}'),
        "empty-keys": (0, '{"":{"":{"":null}},"a/b":{"~":1}}'),
        "deep": (0, '{"a":' * 40 + '1' + '}' * 40),
    }
    for name, (control, text) in odd.items():
        write("json", name, bytes([control]) + text.encode("utf-8", "surrogateescape"))


def literals(path, pattern):
    text = open(os.path.join(ROOT, path), encoding="utf-8").read()
    return [bytes(m, "utf-8").decode("unicode_escape") for m in re.findall(pattern, text)]


def table(target, path, extra):
    clear(target)
    values = literals(path, r'\{\s*"((?:[^"\\]|\\.)*)"\s*,') + extra
    for v in sorted(set(values)):
        write(target, hashlib.sha1(v.encode()).hexdigest()[:12], v)


if __name__ == "__main__":
    admitters()
    policy()
    json_reads()
    watch()
    kubeconfig()
    table("quantity", "api/quantity_test.cc", ["9223372036854775807m", "-9223372036854775807",
                                                "1e1000", "0.000000000000000000000000000000000000001"])
    table("selector", "kube/selector_test.cc", ["a in (,)", "a notin (b,,c)", "k8s.io/a>5",
                                                 "a>9223372036854775807", "a<-0"])
