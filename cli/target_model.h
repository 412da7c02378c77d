// cli/target_model.h — what the plugin reads to explain where a VMI's migration target pod
// could go (api/explain.h): the pod modelled on the VM's running virt-launcher pod, the
// nodes, the pods bound to them, and the namespaces when a namespaceSelector needs them. `explain`
// reads them for one VMI, `policy explain` for every VMI on a node (nodes and bound pods once).
//
// The target pod is rendered by KubeVirt from the same VMI as the running one, so it carries
// the same requests, tolerations, nodeSelector and affinity, except for the added term of an
// earlier placed migration, which is taken out again (below). Every read goes through
// kube::ListAll / Get and throws kube::KubeError on failure; odd answers (wrong JSON types)
// read as absent fields.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "api/projections.h"
#include "kube/client.h"

namespace kmt::cli {

// Every item of a paged LIST that is an object; managed fields omitted.
std::vector<nlohmann::json> ListItems(kube::KubeClient& client, const kube::Resource& r,
                                      const std::string& ns, kube::ListOptions opts = {});

// The target pod of a migration of `vmi` (in `ns`): modelled on its virt-launcher pod that
// runs on status.nodeName (not Succeeded or Failed). When that pod is itself the target pod of
// a placed migration, that migration's term is taken out of its required node affinity (the
// next target pod will not carry it); if that migration is gone, a note says so on `err`.
// Its claims are resolved (ResolveTargetClaims). Nullopt when the VMI has no such pod.
std::optional<api::TargetPod> ModelTargetPod(kube::KubeClient& client, const std::string& ns,
                                             const nlohmann::json& vmi, std::ostream& err);

// Resolves `pod.claims` (api/pod_volumes.h) with GETs of each PVC and its StorageClass or
// PV. The target pod uses the VM's running pod's claims: the same PVCs. A read the user is
// forbidden leaves the claims not read yet unchecked, with a note on `err`; a claim waiting
// for its first consumer is noted as not checked.
void ResolveTargetClaims(kube::KubeClient& client, api::TargetPod& pod, std::ostream& err);

// Every node, projected.
std::vector<api::NodeInfo> ListNodeInfos(kube::KubeClient& client);

// Every pod bound to a node and not finished (what the scheduler counts), projected.
std::vector<api::BoundPod> ListBoundPods(kube::KubeClient& client);

// Every namespace, projected, for the namespaceSelectors of pod (anti-)affinity terms (read
// only when api::WantsNamespaces). A user who may not list namespaces gets a note on `err`
// and none: such a selector then matches only as the empty selector does.
std::vector<api::NamespaceInfo> ListNamespaceInfos(kube::KubeClient& client, std::ostream& err);

}  // namespace kmt::cli
