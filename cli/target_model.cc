#include "cli/target_model.h"

#include "api/added_term.h"
#include "api/names.h"
#include "api/pod_volumes.h"
#include "api/term_and.h"
#include "base/json.h"
#include "kube/error.h"
#include "kube/paging.h"
#include "kube/reads.h"
#include "kube/resources.h"
#include "kube/volume_reads.h"

namespace kmt::cli {
namespace {

using nlohmann::json;

// The VM's running pod may be the target pod of an earlier placed migration: its
// required affinity then carries that migration's added term, which the next target pod
// (rendered from the VMI again) will not. Returns that term, to take out with
// api::WithoutTerm; nullopt when the pod was not placed that way (or the VMIM is gone,
// which is noted on `err`).
std::optional<api::NodeSelectorTerm> EarlierAddedTerm(const json& pod, kube::KubeClient& client,
                                                      const std::string& ns, std::ostream& err) {
  if (base::Member(pod, {"metadata", "labels", api::kLabelMigrationJobUID}) == nullptr) {
    return std::nullopt;
  }
  const std::string job =
      base::StringAt(pod, {"metadata", "annotations", api::kAnnotationMigrationJobName});
  std::optional<json> vmim;
  if (!job.empty())
    vmim = kube::GetIfExists(client, kube::kVirtualMachineInstanceMigrations, ns, job);
  if (!vmim) {
    err << "note: the VM's pod was created by migration " << (job.empty() ? "<unknown>" : job)
        << ", which no longer exists; its node affinity may still include that migration's "
           "request\n";
    return std::nullopt;
  }
  auto text = api::AddedTermSource(*vmim);
  if (!text) return std::nullopt;
  return api::ParseAddedTerm(*text).term;
}

}  // namespace

void ResolveTargetClaims(kube::KubeClient& client, api::TargetPod& pod, std::ostream& err) {
  try {
    api::ResolveClaims(pod.claims, kube::VolumeReads(client, pod.ns));
  } catch (const kube::KubeError& e) {
    if (e.kind() != kube::ErrorKind::kForbidden) throw;
    err << "note: cannot read the volumes of " << pod.ns << "/" << pod.name << " (" << e.what()
        << "); volumes not read are not checked\n";
  }
  for (const api::PodClaim& c : pod.claims) {
    if (c.resolution.state == api::ClaimState::kWaitForFirstConsumer) {
      err << "note: claim " << pod.ns << "/" << c.name
          << " is not bound and waits for its first consumer (WaitForFirstConsumer); where it "
             "can be provisioned is not checked\n";
    } else if (c.resolution.state == api::ClaimState::kVolumeNotClaimed) {
      err << "note: claim " << pod.ns << "/" << c.name << " names PersistentVolume "
          << c.resolution.volume
          << ", whose claimRef names another claim; that volume is not checked\n";
    }
  }
}

std::vector<json> ListItems(kube::KubeClient& client, const kube::Resource& r,
                            const std::string& ns, kube::ListOptions opts) {
  opts.omit_managed_fields = true;                 // projected for the explainer: never read
  json list = kube::ListAll(client, r, ns, opts);  // items is an array
  std::vector<json> items;
  for (auto& it : list["items"]) {
    if (it.is_object()) items.push_back(std::move(it));
  }
  return items;
}

std::optional<api::TargetPod> ModelTargetPod(kube::KubeClient& client, const std::string& ns,
                                             const json& vmi, std::ostream& err) {
  const std::string uid = base::StringAt(vmi, {"metadata", "uid"});
  const std::string source_node = base::StringAt(vmi, {"status", "nodeName"});
  if (source_node.empty()) return std::nullopt;
  kube::ListOptions lo;
  lo.label_selector = std::string(api::kLabelApp) + "=" + std::string(api::kLabelAppValue) + "," +
                      std::string(api::kLabelCreatedBy) + "=" + uid;
  for (const auto& p : ListItems(client, kube::kPods, ns, lo)) {
    const std::string phase = base::StringAt(p, {"status", "phase"});
    if (base::StringAt(p, {"spec", "nodeName"}) != source_node || phase == "Succeeded" ||
        phase == "Failed") {
      continue;
    }
    api::TargetPod pod = api::TargetPod::FromJson(p);
    if (auto earlier = EarlierAddedTerm(p, client, ns, err)) {
      pod.mutable_shape().required_affinity = api::WithoutTerm(pod.required_affinity(), *earlier);
    }
    ResolveTargetClaims(client, pod, err);
    return pod;
  }
  return std::nullopt;
}

std::vector<api::NodeInfo> ListNodeInfos(kube::KubeClient& client) {
  std::vector<api::NodeInfo> nodes;
  for (const auto& n : ListItems(client, kube::kNodes, "")) {
    nodes.push_back(api::NodeInfo::FromJson(n));
  }
  return nodes;
}

std::vector<api::BoundPod> ListBoundPods(kube::KubeClient& client) {
  kube::ListOptions opts;
  opts.field_selector = std::string(api::kBoundPodsFieldSelector);
  std::vector<api::BoundPod> bound;
  for (const auto& p : ListItems(client, kube::kPods, "", opts)) {
    api::BoundPod b = api::BoundPod::FromJson(p);
    if (!b.node_name.empty()) bound.push_back(std::move(b));
  }
  return bound;
}

std::vector<api::NamespaceInfo> ListNamespaceInfos(kube::KubeClient& client, std::ostream& err) {
  std::vector<api::NamespaceInfo> out;
  try {
    for (const auto& n : ListItems(client, kube::kNamespaces, "")) {
      out.push_back(api::NamespaceInfo::FromJson(n));
    }
  } catch (const kube::KubeError& e) {
    if (e.kind() != kube::ErrorKind::kForbidden) throw;
    err << "note: you may not list namespaces: pod affinity namespaceSelectors are judged "
           "without their labels\n";
  }
  return out;
}

}  // namespace kmt::cli
