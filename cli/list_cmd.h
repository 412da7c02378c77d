// cli/list_cmd.h — `kubectl migrate list [-A] [-o wide|name|yaml|json]`: the placed
// migrations, i.e. the VMIMs that carry the request (api::AddedTermSource: the annotation
// migration-target.kubevirt.io/added-node-selector-term), of one namespace or of all.
//
// Table columns (kubectl's layout, "<none>" for an empty cell):
//   [NAMESPACE] NAME VMI PHASE TERM NODE APPLIED UNSCHEDULABLE AGE
// TERM is the request as messages print it (`zone In [a, b], metadata.name In [w3]`;
// "<invalid>" when the annotation does not parse), NODE the node the target pod was placed
// on (status.migrationState.targetNode once the migration has ended — KubeVirt fills the
// VMIM's migrationState only then — else the spec.nodeName of the pod labelled
// kubevirt.io/migrationJobUID=<VMIM uid>), APPLIED and UNSCHEDULABLE the status of this
// operator's conditions addedNodeSelectorTermApplied and targetPodUnschedulable, AGE as
// kubectl prints it. -o wide adds SOURCE (migrationState.sourceNode, else the
// node the VMI runs on now), TARGET POD and MESSAGE (why the
// migration is held: the message of targetPodUnschedulable=True, else of
// addedNodeSelectorTermApplied=False). -o yaml|json prints a v1 List of those VMIMs, -o name
// one resource/name per line.
//
// No placed migration: "No placed migrations found in NS namespace." on stderr (kubectl's
// "No resources found"), exit 0. An API error: exit 1 with the server's message.
#pragma once

#include <chrono>
#include <string>

#include "cli/args.h"
#include "cli/migrate.h"
#include "kube/client.h"

namespace kmt::cli {

// `ns` is ignored with inv.all_namespaces; `now` is the clock AGE is measured against.
int RunList(const Invocation& inv, const std::string& ns, kube::KubeClient& client, Streams io,
            std::chrono::system_clock::time_point now);

}  // namespace kmt::cli
