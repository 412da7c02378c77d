// cli/explain_cmd.h — `kubectl migrate explain NAME [request]`: would the VMI's
// migration target pod fit, node by node, and if not, every reason why.
//
// Reads the VMI, its running virt-launcher pod (the target pod is rendered from
// the same template, so it carries the same requests, tolerations, nodeSelector
// and affinity), every node and every pod bound to a node, then runs the same
// explainer the operator uses (api/explain.h).
//
// Exit codes: 0 at least one node fits; 1 none fits, or an API error.
#pragma once

#include <optional>
#include <string>

#include "api/node_selector.h"
#include "cli/migrate.h"
#include "kube/client.h"

namespace kmt::cli {

int RunExplain(const std::string& ns, const std::string& vmi,
               const std::optional<api::NodeSelectorTerm>& term, kube::KubeClient& client,
               Streams io);

}  // namespace kmt::cli
