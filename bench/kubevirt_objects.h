// bench/kubevirt_objects.h — realistic objects for the benchmarks, shaped as KubeVirt and
// its KWOK performance tests leave them: nodes labelled by KubeVirt's node-labeller
// (~120 labels, some taints, KubeVirt device plugins in allocatable), virt-launcher pods
// bound to them, migration target pods as virt-controller renders them (labels
// kubevirt.io=virt-launcher and kubevirt.io/migrationJobUID, the job name annotation,
// KubeVirt's required node affinity and anti-affinity to the source pod), and VMIMs
// carrying the added-term annotation.
//
// Deterministic: object i is always the same, so every run measures the same data.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace kmt::bench {

using Json = nlohmann::json;

// "node-<i>" (zero-padded to 5 digits so names sort as numbers).
std::string NodeName(int i);

// A KWOK-like KubeVirt node. Every 13th is cordoned, every 17th not Ready, every 7th
// tainted dedicated=gpu:NoSchedule, every 11th maintenance:NoExecute, every 10th carries
// node-labeller.kubevirt.io/obsolete-host-model; zone-<i%3>.
Json KwokNode(int i);

// A running virt-launcher pod of VMI "vm-<i>" bound to `node` (no apiVersion-level
// status beyond phase Running).
Json BoundLauncherPod(int i, const std::string& ns, const std::string& node);

// The migration target pod virt-controller creates for VMIM `vmim_name` (uid `vmim_uid`)
// of VMI "vm-<i>" running on `source_node`; with the operator's scheduling gate when
// `gated` (as the mutating webhook leaves it). No metadata.uid/resourceVersion: ready to
// create. Name "virt-launcher-vm-<i>-target".
Json TargetPod(int i, const std::string& ns, const std::string& vmim_name,
               const std::string& vmim_uid, const std::string& source_node, bool gated);

// VMI "vm-<i>" as a user writes it (128Mi of memory, no devices), which virt-api's
// webhooks accept and default. The cluster benchmarks create it before its VMIM because
// virt-api refuses a VMIM whose VMI does not exist; with virt-controller stopped nothing
// runs it, so it stays Pending, which virt-api still lets migrate.
Json Vmi(int i, const std::string& ns);

// A VMIM "mig-<i>" of VMI "vm-<i>", with the added-term annotation when `term` is not empty.
Json Vmim(int i, const std::string& ns, const std::string& term);

// The admin's term naming one node: matchFields metadata.name In [node].
std::string NodeTerm(const std::string& node);

}  // namespace kmt::bench
