// webhook/pod_mutator.h — the mutating admitter of migration target pods (Pod CREATE),
// DESIGN.md §3 step 2.
//
// A pod is a migration target when it carries the labels kubevirt.io=virt-launcher and
// kubevirt.io/migrationJobUID (KubeVirt's RenderMigrationManifest sets both, and the
// annotation kubevirt.io/migrationJobName). Every other pod is allowed unchanged.
//
// For a target pod the mutator reads its VMIM (namespace of the pod, name from the
// annotation) and, when the VMIM carries the request (api::AddedTermSource, valid or not),
// answers with a JSON Patch adding the scheduling gate api::kSchedulingGate to
// spec.schedulingGates: the list (and spec) is created when absent, other gates are kept, and a
// gate already present is not added twice. A VMIM without the request: allowed unchanged.
//
// Failure policy. The term must never be bypassed, and KubeVirt's virt-controller retries a
// failed target pod creation for as long as the migration exists, so every doubt denies:
//   - annotation kubevirt.io/migrationJobName missing           → 400
//   - the VMIM does not exist (a live read, not a cache)         → 404: a target pod for a
//     migration that is gone is useless, and its request cannot be checked
//   - the VMIM's uid differs from the pod's label                → 409: a stale or foreign
//     pod, perhaps for an earlier VMIM of the same name; the uid is the reference KubeVirt
//     itself trusts
//   - the VMIM cannot be read (API unavailable, forbidden)       → 500, retried
//   - the pod's spec is not an object (no patch could add the gate) → 400
//   - the pod sets spec.nodeName (it would skip the scheduler, and the API server rejects
//     gates on such a pod)                                       → 422
// The controller's safety net (deleting a target pod that escaped the gate) stays the
// second line, not the first. The mutator has no side effects (sideEffects: None), so
// dry-run requests get the same answer.
#pragma once

#include "webhook/admission.h"
#include "webhook/cluster_view.h"

namespace kmt::webhook {

AdmissionResponse MutateTargetPod(const AdmissionRequest& request, ClusterView& cluster);

// The members of the pod MutateTargetPod reads (metadata's labels, annotations and namespace;
// spec, its schedulingGates and nodeName): the server decodes only those (ObjectReads). A
// change to what the mutator reads changes this list; pod_mutator_test answers every golden
// review both ways.
const ObjectReads& TargetPodReads();

}  // namespace kmt::webhook
