// api/names.h — the names that make up this project's API contract
// (../shared/DESIGN.md section 2) and the KubeVirt names it relies on.
// e2e/tests/names_test.go parses this file and checks that the e2e suite's
// Go constants (and KubeVirt's own Go API) spell every name the same way:
// keep every name an `inline constexpr std::string_view` initialised with
// one string literal.
#pragma once

#include <cstddef>
#include <string_view>

namespace kmt::api {

// VMIM annotation carrying the JSON of a core/v1 NodeSelectorTerm. KubeVirt's
// VMIM CRD is structural, so an unknown spec field would be pruned; the
// request therefore travels as an annotation, read through AddedTermSource().
inline constexpr std::string_view kAddedTermAnnotation =
    "migration-target.kubevirt.io/added-node-selector-term";

// Scheduling gate held on the target virt-launcher pod until the term is ANDed in.
inline constexpr std::string_view kSchedulingGate =
    "migration-target.kubevirt.io/added-node-selector-term";

// The final phases of a VMIM (KubeVirt's MigrationSucceeded / MigrationFailed), spelled as a
// pod's (PodSucceeded / PodFailed).
inline constexpr std::string_view kPhaseSucceeded = "Succeeded";
inline constexpr std::string_view kPhaseFailed = "Failed";

// Condition statuses and Event types, as the API spells them.
inline constexpr std::string_view kStatusTrue = "True";
inline constexpr std::string_view kStatusFalse = "False";
inline constexpr std::string_view kEventTypeNormal = "Normal";
inline constexpr std::string_view kEventTypeWarning = "Warning";

// VMIM status.conditions[].type values this operator owns.
inline constexpr std::string_view kConditionTermApplied = "addedNodeSelectorTermApplied";
inline constexpr std::string_view kConditionTargetPodUnschedulable = "targetPodUnschedulable";

// Their reasons; a transition to one also records an Event with that reason.
inline constexpr std::string_view kReasonTermApplied = "TermApplied";
inline constexpr std::string_view kReasonTargetPodEscapedGate = "TargetPodEscapedGate";
inline constexpr std::string_view kReasonInvalidAddedTerm = "InvalidAddedTerm";
// addedNodeSelectorTermApplied=False while the gate holds a policy's target pod because
// every node it may go to has the policy's spec.maxInboundPerNode migrations inbound.
inline constexpr std::string_view kReasonInboundLimitReached = "InboundLimitReached";
inline constexpr std::string_view kReasonUnschedulable = "Unschedulable";
// No node the added term allows can ever take the target pod (api::Explainer::WhyNeverFits).
inline constexpr std::string_view kReasonPermanentlyUnschedulable = "PermanentlyUnschedulable";
inline constexpr std::string_view kReasonScheduled = "Scheduled";
// The Event reasons of targetPodUnschedulable's transitions (to True, to False).
inline constexpr std::string_view kEventTargetPodUnschedulable = "TargetPodUnschedulable";
inline constexpr std::string_view kEventTargetPodScheduled = "TargetPodScheduled";

// RBAC: who may set the request (checked by SubjectAccessReview).
inline constexpr std::string_view kRbacGroup = "migration-target.kubevirt.io";
inline constexpr std::string_view kRbacResource = "addednodeselectorterms";
inline constexpr std::string_view kRbacVerb = "use";

// MigrationTargetPolicy (api/policy.h): its API and the VMIM annotation naming the policy
// whose term the webhook attached to an evacuation migration.
inline constexpr std::string_view kPolicyGroup = "migration-target.kubevirt.io";
inline constexpr std::string_view kPolicyVersion = "v1alpha1";
inline constexpr std::string_view kPolicyResource = "migrationtargetpolicies";
inline constexpr std::string_view kPolicyKind = "MigrationTargetPolicy";
inline constexpr std::string_view kPolicyAnnotation = "migration-target.kubevirt.io/policy";
// The policy's spec.maxInboundPerNode, attached beside its name (decimal).
inline constexpr std::string_view kMaxInboundAnnotation =
    "migration-target.kubevirt.io/max-inbound-per-node";

// KubeVirt's marking of a VMI whose eviction the descheduler asked for (virt-api's
// pod eviction admitter, markVMI) and its value.
inline constexpr std::string_view kAnnotationEvictionSource = "kubevirt.io/eviction-source";
inline constexpr std::string_view kEvictionSourceDescheduler = "descheduler";

// KubeVirt's markings of a migration target virt-launcher pod.
inline constexpr std::string_view kLabelApp = "kubevirt.io";  // = "virt-launcher"
inline constexpr std::string_view kLabelAppValue = "virt-launcher";
inline constexpr std::string_view kLabelMigrationJobUID = "kubevirt.io/migrationJobUID";
inline constexpr std::string_view kAnnotationMigrationJobName = "kubevirt.io/migrationJobName";
inline constexpr std::string_view kLabelCreatedBy = "kubevirt.io/created-by";  // VMI uid
inline constexpr std::string_view kAnnotationEvacuationMigration =
    "kubevirt.io/evacuationMigration";
// The label virt-api and virt-controller put on every VMIM, naming its VMI
// (what virtctl's migrate-cancel selects on).
inline constexpr std::string_view kLabelMigrationVmiName = "kubevirt.io/vmi-name";

// The reason the scheduler gives in a pod's PodScheduled=False when no node fits it (a gated
// pod says SchedulingGated instead).
inline constexpr std::string_view kPodReasonUnschedulable = "Unschedulable";

// The pods the scheduler counts on nodes (bound, not finished): what the explainer needs
// for resources and anti-affinity, selected on the server.
inline constexpr std::string_view kBoundPodsFieldSelector =
    "spec.nodeName!=,status.phase!=Succeeded,status.phase!=Failed";
// Labels a bound pod may keep in the cache, in bytes (each label counted as its key plus the
// longest value a label may have, 63): a tenant decides how many labels its pods carry, and
// every replica would otherwise hold them all. 8 KiB keeps 90 labels of 20-byte keys.
inline constexpr size_t kBoundPodLabelBytes = 8 * 1024;
// The member the client's trim (kube/managed_fields.h) adds to an object's metadata when it
// left labels out: how many. metadata's fields are fixed, and none has a colon, so the API
// server never sends it.
inline constexpr std::string_view kMetadataLabelsDropped = "kmt:labelsDropped";

}  // namespace kmt::api
