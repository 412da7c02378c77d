// cli/policy_explain_cmd.h — `kubectl migrate policy explain NODE`: the drain plan of NODE.
// Before a drain of NODE (or a descheduler run): what the drain would do to each VM on it
// (leave by live migration, stay and block the drain, or be shut down), which
// MigrationTargetPolicy would steer each evacuation migration, and where each VM could then
// go, node by node, with the VMs placed one after another (api/drain_plan.h).
//
// Reads NODE (from the node list: its labels are the source node's), every
// MigrationTargetPolicy, the VMIs running on NODE (every namespace, or only `ns`), the
// KubeVirt CR (its evictionStrategy and migration limits; KubeVirt's defaults with a note when
// it cannot be read), the namespaces of those VMIs (only when some policy has a
// namespaceSelector), each VMI's virt-launcher pod, every node and every pod bound to one, and
// the PodDisruptionBudgets of the namespaces of VMs the drain would evict (a note, and none
// assumed, where the user may not list them). The policy is chosen by the webhook's own code
// (api::ParsePolicies, api::EvacuationFactsOf, api::SelectPolicy): what this prints is what
// webhook/policy_attacher.cc would attach. `origin` is the eviction about to happen:
// "Descheduler" is one the descheduler asks for (virt-api then marks the VMI
// kubevirt.io/eviction-source: descheduler before virt-controller creates the VMIM); a VMI
// already carrying that mark counts as the descheduler's whatever `origin` says, as it
// does for the webhook.
//
// Per VMI, in namespace/name order (the plan's order): the policy (or "no policy: the
// scheduler alone decides"); for a VM that migrates, every node but NODE (KubeVirt never
// migrates a VM to the node it leaves) with the explainer's verdict (api/explain.h) for its
// target pod ANDed with the policy's term, at its turn in the plan (the VMs placed before it
// take their capacity), and a summary: how many nodes would take it, or why none would; then
// its fate. Last, the drain's summary: "N of M VMs can leave; K would stay (reasons); S shut
// down", the cluster's eviction strategy and its source, and the nodes that take VMs with
// their cpu, memory and pods requested after the drain against allocatable. Policies that do
// not parse are listed as skipped with their first cause, as the webhook skips them.
//
// Listing the VMIs of every namespace falls back, when the user may not list them
// cluster-wide, to each namespace the user may list them in; a note counts the others.
//
// output: "" or "text" (the layout above), "json" or "yaml" (the same document):
//   {"node", "origin", "skippedPolicies": [{"name", "cause"}],
//    "vmis": [{"namespace", "name", "policy": null | {"name", "priority",
//              "addedNodeSelectorTerm", "maxInboundPerNode"?}, "nodes": [{"name", "fits",
//              "reasons": [text]}], "allowedNodes": [name], "summary", "evictionStrategy",
//              "fate": "leaves" | "stays" | "shut down", "stayReason": null | text, "detail",
//              "placedOn": null | node, "waitsForInbound", "error"?}],
//    "drain": {"vmis", "leaving", "staying", "shutDown", "clusterEvictionStrategy",
//              "parallelOutboundMigrationsPerNode", "configSource",
//              "nodesAfter": [{"name", "incomingVMs", "cpu": {"requested", "allocatable"},
//                              "memory": {...}, "pods": {...}}]}}
//
// Exit codes: 0 every VM on NODE leaves or is shut down; 3 some VM would stay and hold the
// drain (so scripts can gate maintenance on it); 1 an API error or NODE does not exist (2 stays
// the usage errors', cli/args.h).
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
