#!/usr/bin/env python3
"""Writes the AdmissionReview request files of the admitter golden tests.

The requests are data; this script only keeps them consistent. Run it from the
repository root after changing a case, then regenerate the responses with
  KMT_WRITE_GOLDEN=$PWD/webhook/testdata bazel test //webhook:vmim_validator_test \
      //webhook:pod_mutator_test
and review every changed response by hand.
"""
import copy
import json
import os

HERE = os.path.dirname(os.path.abspath(__file__))
ANNOTATION = "migration-target.kubevirt.io/added-node-selector-term"

USERS = {
    "admin": {"username": "admin", "uid": "a-1", "groups": ["system:authenticated", "ops-admins"]},
    "vm-owner": {"username": "vm-owner", "uid": "o-1", "groups": ["system:authenticated"],
                 "extra": {"authentication.kubernetes.io/credential-id": ["X509SHA256=ab12"]}},
    "granted-owner": {"username": "granted-owner", "uid": "g-1",
                      "groups": ["system:authenticated"]},
    "virt-controller": {"username": "system:serviceaccount:kubevirt:kubevirt-controller",
                        "uid": "sa-1",
                        "groups": ["system:serviceaccounts", "system:serviceaccounts:kubevirt",
                                   "system:authenticated"]},
}


def vmim(term=None, added_node_selector=None, labels=None, uid="9b4c3e0a-vmim-0001"):
    obj = {
        "apiVersion": "kubevirt.io/v1",
        "kind": "VirtualMachineInstanceMigration",
        "metadata": {"name": "mig-1", "namespace": "ns1"},
        "spec": {"vmiName": "vm1"},
    }
    if uid:
        obj["metadata"]["uid"] = uid
    if labels:
        obj["metadata"]["labels"] = labels
    if term is not None:
        obj["metadata"]["annotations"] = {
            ANNOTATION: term if isinstance(term, str) else json.dumps(term, separators=(",", ":"))}
    if added_node_selector is not None:
        obj["spec"]["addedNodeSelector"] = added_node_selector
    return obj


def review(uid, operation, user, obj, old=None, resource=None, kind=None, sub="", dry=False,
           name="mig-1"):
    resource = resource or {"group": "kubevirt.io", "version": "v1",
                            "resource": "virtualmachineinstancemigrations"}
    kind = kind or {"group": "kubevirt.io", "version": "v1",
                    "kind": "VirtualMachineInstanceMigration"}
    req = {
        "uid": uid,
        "kind": kind,
        "resource": resource,
        "requestKind": kind,
        "requestResource": resource,
        "name": name,
        "namespace": "ns1",
        "operation": operation,
        "userInfo": USERS[user],
        "object": obj,
        "oldObject": old,
        "dryRun": dry,
        "options": {"kind": operation.capitalize() + "Options", "apiVersion": "meta.k8s.io/v1"},
    }
    if sub:
        req["subResource"] = sub
        req["requestSubResource"] = sub
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": req}


TO_NODE_2 = {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["node-2"]}]}
ZONE_B = {"matchExpressions": [{"key": "topology.kubernetes.io/zone", "operator": "In",
                                "values": ["b"]}]}


def vmim_cases():
    c = {}
    n = 0

    def add(name, operation, user, obj, old=None, **kw):
        nonlocal n
        n += 1
        c[name] = review(f"vmim-{n:04d}", operation, user, obj, old, **kw)

    add("create_plain_by_owner", "CREATE", "vm-owner", vmim())
    add("create_term_by_admin", "CREATE", "admin", vmim(TO_NODE_2))
    add("create_term_by_owner_denied", "CREATE", "vm-owner", vmim(TO_NODE_2))
    add("create_term_by_owner_denied_dry_run", "CREATE", "vm-owner", vmim(TO_NODE_2), dry=True)
    add("create_term_by_owner_granted_in_namespace", "CREATE", "granted-owner", vmim(ZONE_B))
    add("create_term_by_virt_controller_denied", "CREATE", "virt-controller", vmim(TO_NODE_2))
    add("create_term_review_fails", "CREATE", "admin", vmim(TO_NODE_2))
    add("create_term_denied_with_reason", "CREATE", "vm-owner", vmim(TO_NODE_2))
    # Bad terms, by the admin (authorization passes, validation speaks).
    add("invalid_malformed_json", "CREATE", "admin", vmim('{"matchFields": [{"key": '))
    add("invalid_not_an_object", "CREATE", "admin", vmim('["node-2"]'))
    add("invalid_unknown_member", "CREATE", "admin",
        vmim({"matchExpressions": ZONE_B["matchExpressions"], "nodeName": "node-2"}))
    add("invalid_unknown_member_in_requirement", "CREATE", "admin", vmim(
        {"matchExpressions": [{"key": "a", "operator": "In", "values": ["b"], "value": "b"}]}))
    add("invalid_wrong_type", "CREATE", "admin", vmim(
        {"matchExpressions": [{"key": "a", "operator": "In", "values": "b"}]}))
    add("invalid_empty_term", "CREATE", "admin", vmim({}))
    add("invalid_empty_lists", "CREATE", "admin", vmim({"matchExpressions": [], "matchFields": []}))
    add("invalid_empty_string", "CREATE", "admin", vmim(""))
    ops = [
        ("in_without_values", {"key": "a", "operator": "In", "values": []}),
        ("notin_without_values", {"key": "a", "operator": "NotIn"}),
        ("exists_with_values", {"key": "a", "operator": "Exists", "values": ["x"]}),
        ("doesnotexist_with_values", {"key": "a", "operator": "DoesNotExist", "values": ["x"]}),
        ("gt_two_values", {"key": "a", "operator": "Gt", "values": ["1", "2"]}),
        ("gt_not_integer", {"key": "a", "operator": "Gt", "values": ["one"]}),
        ("lt_without_values", {"key": "a", "operator": "Lt"}),
        ("unknown_operator", {"key": "a", "operator": "Equals", "values": ["x"]}),
        ("missing_operator", {"key": "a", "values": ["x"]}),
        ("bad_label_key", {"key": "-a/b_", "operator": "Exists"}),
        ("bad_label_value", {"key": "a", "operator": "In", "values": ["not valid!"]}),
    ]
    for name, req in ops:
        add(f"invalid_expression_{name}", "CREATE", "admin", vmim({"matchExpressions": [req]}))
    fields = [
        ("other_key", {"key": "metadata.labels", "operator": "In", "values": ["node-2"]}),
        ("exists", {"key": "metadata.name", "operator": "Exists"}),
        ("two_values", {"key": "metadata.name", "operator": "In", "values": ["node-1", "node-2"]}),
        ("not_dns_subdomain", {"key": "metadata.name", "operator": "In", "values": ["Node_2"]}),
    ]
    for name, req in fields:
        add(f"invalid_fields_{name}", "CREATE", "admin", vmim({"matchFields": [req]}))
    add("invalid_several_causes", "CREATE", "admin", vmim({
        "matchExpressions": [{"key": "a", "operator": "In"},
                             {"key": "b", "operator": "Exists", "values": ["x"]}],
        "matchFields": [{"key": "spec.nodeName", "operator": "In", "values": ["n"]}]}))
    add("invalid_oversized", "CREATE", "admin", vmim(
        {"matchExpressions": [{"key": "a", "operator": "In",
                               "values": [f"v{i:05d}" for i in range(3000)]}]}))
    add("invalid_term_by_owner_denied_first", "CREATE", "vm-owner", vmim({}))
    # Warnings.
    add("warn_no_node_matches", "CREATE", "admin", vmim(
        {"matchExpressions": [{"key": "topology.kubernetes.io/zone", "operator": "In",
                               "values": ["c"]}]}))
    add("warn_only_source_node", "CREATE", "admin", vmim(
        {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["node-1"]}]}))
    add("warn_nodes_unreadable", "CREATE", "admin", vmim(TO_NODE_2))
    add("warn_vmi_unreadable", "CREATE", "admin", vmim(
        {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["node-1"]}]}))
    add("no_warning_zone_with_two_nodes", "CREATE", "admin", vmim(ZONE_B))
    # KubeVirt's own spec.addedNodeSelector.
    add("kubevirt_selector_by_owner_denied", "CREATE", "vm-owner",
        vmim(added_node_selector={"kubernetes.io/hostname": "node-2"}))
    add("kubevirt_selector_by_admin", "CREATE", "admin",
        vmim(added_node_selector={"kubernetes.io/hostname": "node-2"}))
    add("kubevirt_selector_empty_by_owner", "CREATE", "vm-owner", vmim(added_node_selector={}))
    add("kubevirt_selector_and_term_by_owner_denied", "CREATE", "vm-owner",
        vmim(TO_NODE_2, added_node_selector={"kubernetes.io/hostname": "node-2"}))
    add("kubevirt_selector_check_off_by_owner", "CREATE", "vm-owner",
        vmim(added_node_selector={"kubernetes.io/hostname": "node-2"}))
    # UPDATE.
    add("update_adds_term", "UPDATE", "admin", vmim(TO_NODE_2), vmim())
    add("update_changes_term", "UPDATE", "admin", vmim(ZONE_B), vmim(TO_NODE_2))
    add("update_reformats_term", "UPDATE", "admin",
        vmim(json.dumps(TO_NODE_2, indent=1)), vmim(TO_NODE_2))
    add("update_removes_term", "UPDATE", "admin", vmim(), vmim(TO_NODE_2))
    add("update_keeps_term_by_virt_controller", "UPDATE", "virt-controller",
        vmim(TO_NODE_2, labels={"kubevirt.io/vmi-name": "vm1"}), vmim(TO_NODE_2))
    add("update_keeps_invalid_term", "UPDATE", "vm-owner", vmim({}), vmim({}))
    add("update_kubevirt_selector_left_to_kubevirt", "UPDATE", "vm-owner",
        vmim(added_node_selector={"kubernetes.io/hostname": "node-2"}), vmim())
    # No opinion.
    add("delete_with_term", "DELETE", "vm-owner", None, vmim(TO_NODE_2))
    add("status_update", "UPDATE", "vm-owner", vmim(), vmim(TO_NODE_2), sub="status")
    return c


def pod(labels=None, annotations=None, gates=None, node_name=None, extra_spec=None):
    obj = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"generateName": "virt-launcher-vm1-", "namespace": "ns1",
                     "labels": labels if labels is not None else {},
                     "annotations": annotations if annotations is not None else {}},
        "spec": {"containers": [{"name": "compute", "image": "virt-launcher"}],
                 "schedulerName": "default-scheduler"},
    }
    if gates is not None:
        obj["spec"]["schedulingGates"] = gates
    if node_name:
        obj["spec"]["nodeName"] = node_name
    if extra_spec:
        obj["spec"].update(extra_spec)
    return obj


TARGET_LABELS = {"kubevirt.io": "virt-launcher", "kubevirt.io/created-by": "vmi-uid-1",
                 "kubevirt.io/migrationJobUID": "9b4c3e0a-vmim-0001"}
TARGET_ANNOTATIONS = {"kubevirt.io/domain": "vm1", "kubevirt.io/migrationJobName": "mig-1"}
POD_RESOURCE = {"group": "", "version": "v1", "resource": "pods"}
POD_KIND = {"group": "", "version": "v1", "kind": "Pod"}


def pod_cases():
    c = {}
    n = 0

    def add(name, obj, operation="CREATE", old=None, user="virt-controller", **kw):
        nonlocal n
        n += 1
        c[name] = review(f"pod-{n:04d}", operation, user, obj, old, resource=POD_RESOURCE,
                         kind=POD_KIND, name="", **kw)

    add("not_a_launcher", pod(labels={"app": "web"}))
    add("launcher_not_a_target", pod(labels={"kubevirt.io": "virt-launcher",
                                             "kubevirt.io/created-by": "vmi-uid-1"},
                                     annotations={"kubevirt.io/domain": "vm1"}))
    add("target_gated", pod(TARGET_LABELS, TARGET_ANNOTATIONS))
    add("target_gated_dry_run", pod(TARGET_LABELS, TARGET_ANNOTATIONS), dry=True)
    add("target_keeps_other_gates",
        pod(TARGET_LABELS, TARGET_ANNOTATIONS, gates=[{"name": "example.com/other"}]))
    add("target_already_gated",
        pod(TARGET_LABELS, TARGET_ANNOTATIONS,
            gates=[{"name": "example.com/other"},
                   {"name": "migration-target.kubevirt.io/added-node-selector-term"}]))
    add("target_empty_gate_list", pod(TARGET_LABELS, TARGET_ANNOTATIONS, gates=[]))
    null_gates = pod(TARGET_LABELS, TARGET_ANNOTATIONS)
    null_gates["spec"]["schedulingGates"] = None
    add("target_null_gates", null_gates)
    add("target_vmim_without_term", pod(dict(TARGET_LABELS, **{
        "kubevirt.io/migrationJobUID": "9b4c3e0a-vmim-0002"}),
        dict(TARGET_ANNOTATIONS, **{"kubevirt.io/migrationJobName": "mig-plain"})))
    add("target_vmim_with_invalid_term", pod(dict(TARGET_LABELS, **{
        "kubevirt.io/migrationJobUID": "9b4c3e0a-vmim-0003"}),
        dict(TARGET_ANNOTATIONS, **{"kubevirt.io/migrationJobName": "mig-invalid"})))
    add("target_uid_mismatch", pod(dict(TARGET_LABELS, **{
        "kubevirt.io/migrationJobUID": "0ld-uid"}), TARGET_ANNOTATIONS))
    add("target_vmim_not_found", pod(TARGET_LABELS, dict(TARGET_ANNOTATIONS, **{
        "kubevirt.io/migrationJobName": "mig-gone"})))
    add("target_vmim_unreadable", pod(TARGET_LABELS, TARGET_ANNOTATIONS))
    add("target_without_job_name", pod(TARGET_LABELS, {"kubevirt.io/domain": "vm1"}))
    add("target_with_node_name", pod(TARGET_LABELS, TARGET_ANNOTATIONS, node_name="node-2"))
    add("target_update_ignored", pod(TARGET_LABELS, TARGET_ANNOTATIONS), operation="UPDATE",
        old=pod(TARGET_LABELS, TARGET_ANNOTATIONS))
    return c


def write(directory, cases):
    for name, body in cases.items():
        with open(os.path.join(HERE, directory, name + ".request.json"), "w") as f:
            json.dump(body, f, indent=2, sort_keys=True)
            f.write("\n")


if __name__ == "__main__":
    write("vmim", vmim_cases())
    write("pod", pod_cases())
