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
// KubeVirt's `virtualmachines/migrate` subresource (virtctl migrate) creates the VMIM as
// virt-api's service account, after virt-api has checked that the person may `update`
// virtualmachines/migrate; the person's name does not reach this webhook. With
// trust_virt_api_added_node_selector, a VMIM from virt_api_username may carry KubeVirt's
// spec.addedNodeSelector without the `use` check (virt-api's authorisation stands in for
// it); the annotation is checked as for anyone. Without it (the default), such a VMIM is
// denied like any other requester without `use`, and the message says what happened.
// A VMIM carrying migration-target.kubevirt.io/policy (webhook/policy_attacher.h) passes
// without the `use` check only when all of these hold; otherwise it is denied (403) naming
// the annotation and what failed, so no creator can forge a policy's term:
//   the requester is virt_controller_username, the VMIM carries kubevirt.io/evacuationMigration,
//   the named MigrationTargetPolicy exists now and parses, and its term is exactly the
//   annotation's term. A failed read of the policy → 500, fail closed.
// UPDATE: adding, changing or removing the annotation → 422 for everyone (the request is
// fixed at creation; the controller acts on it once). Changes to spec.addedNodeSelector are
// left to KubeVirt, which refuses any spec change of a VMIM. The policy annotation is fixed
// the same way.
// Anything else (other resources, subresources, operations) is allowed: this admitter has
// no opinion on it.
#pragma once

#include <string>
#include <string_view>

#include "webhook/access_review.h"
#include "webhook/admission.h"
#include "webhook/cluster_view.h"
#include "webhook/policy_attacher.h"

namespace kmt::webhook {

// KubeVirt's virt-api service account in a default install (namespace kubevirt).
inline constexpr std::string_view kDefaultVirtApiUsername =
    "system:serviceaccount:kubevirt:kubevirt-apiserver";

struct VmimPolicy {
  // Apply the admin check to KubeVirt's spec.addedNodeSelector too.
  bool check_kubevirt_added_node_selector = true;
  // The user virt-api creates VMIMs as (the `virtualmachines/migrate` subresource).
  std::string virt_api_username = std::string(kDefaultVirtApiUsername);
  // Let VMIMs from virt_api_username carry spec.addedNodeSelector without the check.
  bool trust_virt_api_added_node_selector = false;
  // The user KubeVirt's evacuation controller creates VMIMs as (policy provenance).
  std::string virt_controller_username = std::string(kDefaultVirtControllerUsername);
};

struct VmimValidatorDeps {
  AccessReviewer& access;
  ClusterView& cluster;
  VmimPolicy policy = {};
};

AdmissionResponse ValidateVmim(const AdmissionRequest& request, const VmimValidatorDeps& deps);

// The message of a denied SubjectAccessReview, e.g.
// user "vm-owner" may not set metadata.annotations[...]: requires "use" on
// addednodeselectorterms.migration-target.kubevirt.io in namespace "ns1"
std::string PermissionMessage(const std::string& username, const std::string& fields,
                              const std::string& ns);

}  // namespace kmt::webhook
