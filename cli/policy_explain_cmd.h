// cli/policy_explain_cmd.h — `kubectl migrate policy explain NODE`: before a drain of NODE
// (or a descheduler run), which MigrationTargetPolicy would steer each VM's evacuation
// migration, and where that VM could then go, node by node.
//
// Reads NODE (from the node list: its labels are the source node's), every
// MigrationTargetPolicy, the VMIs running on NODE (every namespace, or only `ns`), the
// namespaces of those VMIs (only when some policy has a namespaceSelector), each VMI's
// virt-launcher pod, every node and every pod bound to one. The policy is chosen by the
// webhook's own code (api::ParsePolicies, api::EvacuationFactsOf, api::SelectPolicy): what
// this prints is what webhook/policy_attacher.cc would attach. `origin` is the eviction about
// to happen: "Descheduler" is one the descheduler asks for (virt-api then marks the VMI
// kubevirt.io/eviction-source: descheduler before virt-controller creates the VMIM); a VMI
// already carrying that mark counts as the descheduler's whatever `origin` says, as it
// does for the webhook.
//
// Per VMI: the policy (or "no policy: the scheduler alone decides"), then for every node but
// NODE (KubeVirt never migrates a VM to the node it leaves) the explainer's verdict
// (api/explain.h) for the VM's target pod ANDed with the policy's term, and a summary: how
// many nodes would take it, or why none would. Policies that do not parse are listed as
// skipped with their first cause, as the webhook skips them.
//
// Listing the VMIs of every namespace falls back, when the user may not list them
// cluster-wide, to each namespace the user may list them in; a note counts the others.
//
// output: "" or "text" (the layout above), "json":
//   {"node", "origin", "skippedPolicies": [{"name", "cause"}],
//    "vmis": [{"namespace", "name", "policy": null | {"name", "priority",
//              "addedNodeSelectorTerm"}, "nodes": [{"name", "fits", "reasons": [text]}],
//              "allowedNodes": [name], "summary", "error"?}]}
//
// Exit codes: 0 the explanation was printed (whatever its verdicts); 1 an API error or
// NODE does not exist.
#pragma once

#include <optional>
#include <string>

#include "cli/migrate.h"
#include "kube/client.h"

namespace kmt::cli {

int RunPolicyExplain(const std::string& node, const std::optional<std::string>& ns,
                     const std::string& origin, const std::string& output, kube::KubeClient& client,
                     Streams io);

}  // namespace kmt::cli
