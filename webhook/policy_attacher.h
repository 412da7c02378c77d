// webhook/policy_attacher.h — the mutating admitter of VirtualMachineInstanceMigrations:
// attaches a MigrationTargetPolicy's term (api/policy.h) to KubeVirt's evacuation
// migrations, DESIGN.md §7.
//
// Only a CREATE by KubeVirt's virt-controller (its evacuation controller, which turns
// drains, node taints and the descheduler's evictions into VMIMs) of a VMIM carrying
// kubevirt.io/evacuationMigration: <node> is considered; anyone else's VMIM is left alone,
// and so is one that already carries a term. The winning policy (highest priority, then
// name) is matched against the VMI's labels and eviction source, its namespace's labels and
// the labels of the node being left. The patch adds two annotations:
//   migration-target.kubevirt.io/added-node-selector-term: the policy's term as stored
//   migration-target.kubevirt.io/policy: the policy's name
//   migration-target.kubevirt.io/max-inbound-per-node: its spec.maxInboundPerNode, if set
// and from there gate → AND → report runs as for an admin's request. The validating admitter
// (vmim_validator.h) lets such a VMIM through without the admin check only when the named
// policy exists now with exactly that term (and limit) and the requester is virt-controller,
// so no VMIM creator can forge them.
// A read that fails (policies, the VMI, the namespace, the nodes) denies with 500: the VMIM
// is not created and virt-controller's evacuation controller tries again, so a policy is
// never skipped silently. A policy that does not parse is skipped with a warning (the
// validating webhook for policies refuses such a policy; one can still exist if it was
// written while the operator's webhook was not registered).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "api/policy.h"
#include "webhook/admission.h"
#include "webhook/cluster_view.h"

namespace kmt::webhook {

// KubeVirt's virt-controller service account in a default install (namespace kubevirt).
inline constexpr std::string_view kDefaultVirtControllerUsername =
    "system:serviceaccount:kubevirt:kubevirt-controller";

struct PolicyAttacherOptions {
  std::string virt_controller_username = std::string(kDefaultVirtControllerUsername);
};

// A VMIM CREATE of KubeVirt's evacuation path: by virt-controller, with the annotation
// kubevirt.io/evacuationMigration. Returns the node being left, or nullopt.
std::optional<std::string> EvacuationSource(const AdmissionRequest& req,
                                            const PolicyAttacherOptions& options);

struct PolicyChoice {
  std::optional<api::MigrationTargetPolicy> winner;
  std::vector<std::string> warnings;  // policies skipped because they do not parse
};

// The policy for an evacuation VMIM in `ns` leaving `source_node`. Throws when a read fails.
PolicyChoice ChoosePolicy(const Json& vmim, std::string_view ns, std::string_view source_node,
                          ClusterView& cluster);

AdmissionResponse AttachPolicy(const AdmissionRequest& req, ClusterView& cluster,
                               const PolicyAttacherOptions& options);

// The validating admitter of MigrationTargetPolicies (CREATE, UPDATE): every rule of
// api::ParsePolicy, the term checked by the same code as the annotation → 422 with every
// cause. Anything else is allowed.
AdmissionResponse ValidatePolicy(const AdmissionRequest& req);

}  // namespace kmt::webhook
