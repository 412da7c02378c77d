#!/usr/bin/env python3
"""Writes the AND golden files: and/<case>.pod.json (input), and/<case>.term.json (the
added term) and and/<case>.golden.json (the pod after the patch).

Each golden is written out by hand below (explicit edits per case, not a generic merge),
so the C++ under test is checked against an independent statement of DESIGN.md "The AND".
Re-run after editing: python3 api/testdata/make_and_cases.py
"""
import copy
import json
import os

HERE = os.path.dirname(os.path.abspath(__file__))
GATE = "migration-target.kubevirt.io/added-node-selector-term"
VMI_UID = "7ac26e32-a799-4eec-9a2a-cc8ae86621b0"
REQ = "requiredDuringSchedulingIgnoredDuringExecution"

# The added term used by every case: zone In [a], and node-3 by name.
ZONE = {"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["a"]}
NODE3 = {"key": "metadata.name", "operator": "In", "values": ["node-3"]}
HOST_MODEL = {"key": "node-labeller.kubevirt.io/obsolete-host-model", "operator": "DoesNotExist"}
TERM = {"matchExpressions": [ZONE], "matchFields": [NODE3]}

# KubeVirt's anti-affinity of a migration target pod to its source virt-launcher pod
# (pkg/virt-controller/watch/migration: createTargetPod).
ANTI = {"podAntiAffinity": {REQ: [{
    "labelSelector": {"matchLabels": {"kubevirt.io/created-by": VMI_UID}},
    "topologyKey": "kubernetes.io/hostname"}]}}


def base_pod():
    """A migration target virt-launcher pod as KubeVirt's virt-controller renders it
    (pkg/virt-controller/services/template.go), gated by our webhook, plus a few fields
    no version of Kubernetes knows (they must survive untouched)."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "annotations": {
                "kubectl.kubernetes.io/default-container": "compute",
                "kubevirt.io/domain": "rhel9",
                "kubevirt.io/migrationJobName": "move-rhel9",
                "kubevirt.io/migrationTransportUnix": "true",
                "post.hook.backup.velero.io/command": "[\"/usr/bin/virt-freezer\", \"--unfreeze\", \"--name\", \"rhel9\", \"--namespace\", \"vms\"]",
            },
            "creationTimestamp": "2026-11-30T01:00:00Z",
            "generateName": "virt-launcher-rhel9-",
            "labels": {
                "kubevirt.io": "virt-launcher",
                "kubevirt.io/created-by": VMI_UID,
                "kubevirt.io/migrationJobUID": "5f0e9b8a-2c1d-4e5f-8a9b-0c1d2e3f4a5b",
                "vm.kubevirt.io/name": "rhel9",
            },
            "name": "virt-launcher-rhel9-x7k2q",
            "namespace": "vms",
            "ownerReferences": [{"apiVersion": "kubevirt.io/v1", "blockOwnerDeletion": True,
                                 "controller": True, "kind": "VirtualMachineInstance",
                                 "name": "rhel9", "uid": VMI_UID}],
            "resourceVersion": "48213",
            "uid": "cfad06b0-b6ec-4b1b-9f88-10d009f4c3ab",
            "x-future-metadata": {"keep": ["me", 1, None, 2.5]},
        },
        "spec": {
            "automountServiceAccountToken": False,
            "containers": [{
                "command": ["/usr/bin/virt-launcher-monitor", "--qemu-timeout", "301s", "--name", "rhel9"],
                "image": "quay.io/kubevirt/virt-launcher:v1.6.0",
                "name": "compute",
                "resources": {
                    "limits": {"devices.kubevirt.io/kvm": "1", "devices.kubevirt.io/tun": "1",
                               "devices.kubevirt.io/vhost-net": "1"},
                    "requests": {"cpu": "100m", "devices.kubevirt.io/kvm": "1",
                                 "devices.kubevirt.io/tun": "1",
                                 "devices.kubevirt.io/vhost-net": "1",
                                 "ephemeral-storage": "50M", "memory": "2294Mi"},
                },
                "securityContext": {"allowPrivilegeEscalation": False,
                                    "capabilities": {"add": ["NET_BIND_SERVICE"], "drop": ["ALL"]},
                                    "runAsNonRoot": True, "runAsUser": 107},
            }, {
                "command": ["/usr/bin/virt-tail", "--logfile", "/var/run/kubevirt-private/" + VMI_UID + "/virt-serial0-log"],
                "image": "quay.io/kubevirt/virt-launcher:v1.6.0",
                "name": "guest-console-log",
                "resources": {"limits": {"cpu": "15m", "memory": "60M"},
                              "requests": {"cpu": "15m", "memory": "60M"}},
            }],
            "hostname": "rhel9",
            "nodeSelector": {"cpu-model-migration.node.kubevirt.io/Skylake-Client-IBRS": "true",
                             "kubernetes.io/arch": "amd64",
                             "kubevirt.io/schedulable": "true"},
            "priority": 0,
            "readinessGates": [{"conditionType": "kubevirt.io/virtual-machine-unpaused"}],
            "restartPolicy": "Never",
            "schedulerName": "default-scheduler",
            "schedulingGates": [{"name": GATE}],
            "terminationGracePeriodSeconds": 210,
            "tolerations": [
                {"effect": "NoExecute", "key": "node.kubernetes.io/not-ready", "operator": "Exists", "tolerationSeconds": 300},
                {"effect": "NoExecute", "key": "node.kubernetes.io/unreachable", "operator": "Exists", "tolerationSeconds": 300},
            ],
            "x-future-spec": {"nested": {"list": [{"a": 1}, {"b": [True, False]}]}},
        },
        "status": {
            "conditions": [{"lastProbeTime": None, "lastTransitionTime": "2026-11-30T01:00:00Z",
                            "message": "Scheduling is blocked due to non-empty scheduling gates",
                            "reason": "SchedulingGated", "status": "False", "type": "PodScheduled"}],
            "phase": "Pending",
            "qosClass": "Burstable",
        },
    }


def with_affinity(affinity):
    pod = base_pod()
    if affinity is not None:
        pod["spec"]["affinity"] = affinity
    return pod


def ungate(pod):
    pod["spec"]["schedulingGates"] = [g for g in pod["spec"]["schedulingGates"] if g["name"] != GATE]
    return pod


def required(pod):
    return pod["spec"]["affinity"]["nodeAffinity"][REQ]


CASES = {}

# 1. No affinity at all: required = {nodeSelectorTerms: [term]}.
pod = with_affinity(None)
gold = ungate(copy.deepcopy(pod))
gold["spec"]["affinity"] = {"nodeAffinity": {REQ: {"nodeSelectorTerms": [TERM]}}}
CASES["no_affinity"] = (pod, TERM, gold)

# 2. Only KubeVirt's pod anti-affinity: nodeAffinity is added beside it.
pod = with_affinity(copy.deepcopy(ANTI))
gold = ungate(copy.deepcopy(pod))
gold["spec"]["affinity"]["nodeAffinity"] = {REQ: {"nodeSelectorTerms": [TERM]}}
CASES["only_pod_anti_affinity"] = (pod, TERM, gold)

# 3. nodeAffinity with only preferred terms: required is added, preferred untouched.
PREFERRED = [{"weight": 50, "preference": {"matchExpressions": [
    {"key": "disktype", "operator": "In", "values": ["ssd"]}]}}]
pod = with_affinity(dict(copy.deepcopy(ANTI), nodeAffinity={
    "preferredDuringSchedulingIgnoredDuringExecution": PREFERRED}))
gold = ungate(copy.deepcopy(pod))
gold["spec"]["affinity"]["nodeAffinity"][REQ] = {"nodeSelectorTerms": [TERM]}
CASES["only_preferred"] = (pod, TERM, gold)

# 4. required with zero terms (invalid for the API server, but possible in a raw object).
pod = with_affinity(dict(copy.deepcopy(ANTI), nodeAffinity={REQ: {"nodeSelectorTerms": []}}))
gold = ungate(copy.deepcopy(pod))
required(gold)["nodeSelectorTerms"] = [TERM]
CASES["required_zero_terms"] = (pod, TERM, gold)

# 5. One term (KubeVirt's host-model term): expressions appended, matchFields created.
pod = with_affinity(dict(copy.deepcopy(ANTI), nodeAffinity={REQ: {"nodeSelectorTerms": [
    {"matchExpressions": [HOST_MODEL]}]}}))
gold = ungate(copy.deepcopy(pod))
required(gold)["nodeSelectorTerms"] = [{"matchExpressions": [HOST_MODEL, ZONE], "matchFields": [NODE3]}]
CASES["one_term"] = (pod, TERM, gold)

# 6. Three terms mixing matchExpressions and matchFields: appended to every term.
GPU = {"key": "nvidia.com/gpu.present", "operator": "Exists"}
NOT_NODE1 = {"key": "metadata.name", "operator": "NotIn", "values": ["node-1"]}
RACK = {"key": "rack", "operator": "NotIn", "values": ["r7", "r8"]}
pod = with_affinity(dict(copy.deepcopy(ANTI), nodeAffinity={REQ: {"nodeSelectorTerms": [
    {"matchExpressions": [HOST_MODEL, GPU]},
    {"matchFields": [NOT_NODE1]},
    {"matchExpressions": [RACK], "matchFields": [NOT_NODE1]},
]}}))
gold = ungate(copy.deepcopy(pod))
required(gold)["nodeSelectorTerms"] = [
    {"matchExpressions": [HOST_MODEL, GPU, ZONE], "matchFields": [NODE3]},
    {"matchFields": [NOT_NODE1, NODE3], "matchExpressions": [ZONE]},
    {"matchExpressions": [RACK, ZONE], "matchFields": [NOT_NODE1, NODE3]},
]
CASES["three_terms"] = (pod, TERM, gold)

# 7. The added term itself carries KubeVirt's host-model requirement, which the pod's term
#    already has: only the rest is added.
pod = with_affinity(dict(copy.deepcopy(ANTI), nodeAffinity={REQ: {"nodeSelectorTerms": [
    {"matchExpressions": [HOST_MODEL]}]}}))
gold = ungate(copy.deepcopy(pod))
required(gold)["nodeSelectorTerms"] = [{"matchExpressions": [HOST_MODEL, ZONE], "matchFields": [NODE3]}]
CASES["host_model_already_present"] = (
    pod, {"matchExpressions": [HOST_MODEL, ZONE], "matchFields": [NODE3]}, gold)

# 8. The zone requirement is already in term 0 (values in another order): not duplicated
#    there, added to term 1 once (the added term lists it twice).
ZONE_AB = {"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["a", "b"]}
ZONE_BA = {"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["b", "a"]}
pod = with_affinity(dict(copy.deepcopy(ANTI), nodeAffinity={REQ: {"nodeSelectorTerms": [
    {"matchExpressions": [HOST_MODEL, ZONE_BA], "matchFields": [NODE3]},
    {"matchExpressions": [HOST_MODEL, GPU]},
]}}))
gold = ungate(copy.deepcopy(pod))
required(gold)["nodeSelectorTerms"][1] = {"matchExpressions": [HOST_MODEL, GPU, ZONE_AB], "matchFields": [NODE3]}
CASES["requirement_already_present"] = (
    pod, {"matchExpressions": [ZONE_AB, ZONE_AB], "matchFields": [NODE3]}, gold)

# 9. Other scheduling gates stay, in order.
pod = with_affinity(copy.deepcopy(ANTI))
pod["spec"]["schedulingGates"] = [{"name": "example.com/quota"}, {"name": GATE}, {"name": "example.com/storage"}]
gold = copy.deepcopy(pod)
gold["spec"]["schedulingGates"] = [{"name": "example.com/quota"}, {"name": "example.com/storage"}]
gold["spec"]["affinity"]["nodeAffinity"] = {REQ: {"nodeSelectorTerms": [TERM]}}
CASES["other_gates_kept"] = (pod, TERM, gold)

# 10. Unknown fields inside the affinity itself (on the selector, a term and a requirement)
#     survive; the new requirements are appended after them.
pod = with_affinity(dict(copy.deepcopy(ANTI), nodeAffinity={
    "x-future-node-affinity": 1,
    REQ: {"x-future-selector": "s", "nodeSelectorTerms": [
        {"x-future-term": [1], "matchExpressions": [dict(HOST_MODEL, **{"x-future-req": {"k": "v"}})]}]}}))
gold = ungate(copy.deepcopy(pod))
t0 = required(gold)["nodeSelectorTerms"][0]
t0["matchExpressions"].append(ZONE)
t0["matchFields"] = [NODE3]
CASES["unknown_fields_untouched"] = (pod, TERM, gold)

os.makedirs(os.path.join(HERE, "and"), exist_ok=True)
for name, (pod, term, gold) in CASES.items():
    for suffix, obj in (("pod", pod), ("term", term), ("golden", gold)):
        with open(os.path.join(HERE, "and", f"{name}.{suffix}.json"), "w") as f:
            json.dump(obj, f, indent=2, sort_keys=True)
            f.write("\n")
print("\n".join(sorted(CASES)))
