// webhook/routes.h — the operator's admission endpoints, ready for AdmissionServer.
//
//   /validate-vmim  VMIM CREATE/UPDATE (webhook/vmim_validator.h)
//   /mutate-pod     Pod CREATE of migration targets (webhook/pod_mutator.h)
//   /mutate-vmim    VMIM CREATE of evacuations: a MigrationTargetPolicy's term
//                   (webhook/policy_attacher.h)
//   /validate-policy  MigrationTargetPolicy CREATE/UPDATE (webhook/policy_attacher.h)
//
// The paths match manifests/default/webhooks.yaml. Usage in the operator binary:
//
//   kmt::webhook::SubjectAccessReviewer access(client);
//   kmt::webhook::KubeClusterView cluster(client);
//   kmt::webhook::AdmissionServer server(
//       {.port = 9443, .cert_file = dir + "/tls.crt", .key_file = dir + "/tls.key"},
//       kmt::webhook::AdmissionRoutes(access, cluster, kmt::webhook::VmimPolicy{}));
//   server.Start();   // Ready() once a certificate is loaded; Stop() on shutdown
#pragma once

#include <string_view>
#include <vector>

#include "webhook/access_review.h"
#include "webhook/cluster_view.h"
#include "webhook/server.h"
#include "webhook/vmim_validator.h"

namespace kmt::webhook {

inline constexpr std::string_view kValidateVmimPath = "/validate-vmim";
inline constexpr std::string_view kMutatePodPath = "/mutate-pod";
inline constexpr std::string_view kMutateVmimPath = "/mutate-vmim";
inline constexpr std::string_view kValidatePolicyPath = "/validate-policy";

// `access` and `cluster` must outlive the routes (and the server serving them).
std::vector<Route> AdmissionRoutes(AccessReviewer& access, ClusterView& cluster,
                                   VmimPolicy policy = {});

}  // namespace kmt::webhook
