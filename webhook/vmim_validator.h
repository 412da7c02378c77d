// webhook/vmim_validator.h — the validating admitter of VirtualMachineInstanceMigrations
// (CREATE and UPDATE), DESIGN.md §3 step 1.
//
// CREATE, when the VMIM carries the request (api::AddedTermSource) or, with the flag on,
// KubeVirt's own spec.addedNodeSelector:
//   1. the requester must be allowed `use` on addednodeselectorterms.migration-target.
//      kubevirt.io in the VMIM's namespace (SubjectAccessReview). Authorization comes first,
//      as in the API server: a user who may not set the request learns that, not the
//      details of a term they cannot use.
//        denied                  → 403 Forbidden naming the user, the field and the
//                                  missing permission
//        review cannot be made   → 500, fail closed
//   2. the term must parse and validate (api::ParseAddedTerm) → else 422 Invalid with every
//      cause;
//   3. allowed, with warnings for likely mistakes: no node matches the term now; the term
//      matches only the node the VMI runs on now (KubeVirt keeps the target off the source
//      node, so the migration could not be scheduled). The warnings are advisory: a failed
//      read becomes a warning that says so, never a denial.
// UPDATE: adding, changing or removing the annotation → 422 for everyone (the request is
// fixed at creation; the controller acts on it once). Changes to spec.addedNodeSelector are
// left to KubeVirt, which refuses any spec change of a VMIM.
// Anything else (other resources, subresources, operations) is allowed: this admitter has
// no opinion on it.
#pragma once

#include "webhook/access_review.h"
#include "webhook/admission.h"
#include "webhook/cluster_view.h"

namespace kmt::webhook {

struct VmimValidatorDeps {
  AccessReviewer& access;
  ClusterView& cluster;
  // Apply the admin check to KubeVirt's spec.addedNodeSelector too.
  bool check_kubevirt_added_node_selector = true;
};

AdmissionResponse ValidateVmim(const AdmissionRequest& request, const VmimValidatorDeps& deps);

// The message of a denied SubjectAccessReview, e.g.
// user "vm-owner" may not set metadata.annotations[...]: requires "use" on
// addednodeselectorterms.migration-target.kubevirt.io in namespace "ns1"
std::string PermissionMessage(const std::string& username, const std::string& fields,
                              const std::string& ns);

}  // namespace kmt::webhook
