// controller/cache_view.cc
#include "controller/cache_view.h"

#include "api/names.h"
#include "api/pod_volumes.h"
#include "controller/reconcile.h"
#include "kube/error.h"
#include "kube/paging.h"
#include "kube/reads.h"
#include "kube/resources.h"
#include "kube/volume_reads.h"

namespace kmt::controller {

std::string SourceNode(const api::MigrationInfo& vmim, const std::vector<api::TargetPod>& targets,
                       const std::vector<api::BoundPod>& bound) {
  if (!vmim.source_node.empty()) return vmim.source_node;
  for (const auto& t : targets) {
    if (t.created_by().empty()) continue;
    for (const auto& b : bound) {
      const std::string* vmi = b.labels.Find(api::kLabelCreatedBy);
      if (vmi == nullptr || *vmi != t.created_by()) continue;
      const std::string* job = b.labels.Find(api::kLabelMigrationJobUID);
      if (job != nullptr && *job == vmim.uid) continue;  // a target of this migration
      return b.node_name;
    }
  }
  return "";
}

void ResolveClaimsFromApi(kube::KubeClient& client, api::TargetPod& pod) {
  api::ResolveClaims(pod.claims, kube::VolumeReads(client, pod.ns));
}

namespace {

// Every item of a LIST (kube::ListAll follows the continue tokens), projected.
template <typename F>
void ListAll(kube::KubeClient& client, const kube::Resource& r, const std::string& ns,
             kube::ListOptions opts, F&& each) {
  opts.omit_managed_fields = true;  // every caller projects: never read
  nlohmann::json list = kube::ListAll(client, r, ns, opts);
  for (const auto& item : list["items"]) each(item);
}

}  // namespace

std::optional<api::MigrationInfo> ApiView::Migration(const std::string& ns,
                                                     const std::string& name) {
  auto vmim = kube::GetIfExists(client_, kube::kVirtualMachineInstanceMigrations, ns, name);
  if (!vmim) return std::nullopt;
  return api::MigrationInfo::FromJson(*vmim);
}

std::vector<api::TargetPod> ApiView::PolicyTargetPods(const std::string& policy,
                                                      const std::string& except_uid) {
  std::vector<api::MigrationInfo> vmims;
  ListAll(client_, kube::kVirtualMachineInstanceMigrations, "", {}, [&](const nlohmann::json& v) {
    api::MigrationInfo m = api::MigrationInfo::FromJson(v);
    if (m.policy == policy && !m.Final() && m.uid != except_uid) vmims.push_back(std::move(m));
  });
  std::vector<api::TargetPod> out;
  for (const api::MigrationInfo& m : vmims) {
    const std::vector<api::TargetPod> pods = TargetPods(m.ns, m.uid);
    std::vector<const api::TargetPod*> own;
    own.reserve(pods.size());
    for (const api::TargetPod& p : pods) own.push_back(&p);
    if (const api::TargetPod* p = InboundPodOf(m, own)) out.push_back(*p);
  }
  return out;
}

std::vector<api::TargetPod> ApiView::TargetPods(const std::string& ns,
                                                const std::string& vmim_uid) {
  std::vector<api::TargetPod> out;
  kube::ListOptions opts;
  opts.label_selector = std::string(api::kLabelApp) + "=" + std::string(api::kLabelAppValue) + "," +
                        std::string(api::kLabelMigrationJobUID) + "=" + vmim_uid;
  ListAll(client_, kube::kPods, ns, opts,
          [&](const nlohmann::json& p) { out.push_back(api::TargetPod::FromJson(p)); });
  return out;
}

std::vector<api::NodeInfo> ApiView::Nodes() {
  std::vector<api::NodeInfo> out;
  ListAll(client_, kube::kNodes, "", {},
          [&](const nlohmann::json& n) { out.push_back(api::NodeInfo::FromJson(n)); });
  return out;
}

std::vector<api::BoundPod> ApiView::BoundPods() {
  std::vector<api::BoundPod> out;
  kube::ListOptions opts;
  opts.field_selector = std::string(api::kBoundPodsFieldSelector);
  ListAll(client_, kube::kPods, "", opts,
          [&](const nlohmann::json& p) { out.push_back(api::BoundPod::FromJson(p)); });
  return out;
}

std::vector<api::NamespaceInfo> ApiView::Namespaces() {
  std::vector<api::NamespaceInfo> out;
  ListAll(client_, kube::kNamespaces, "", {},
          [&](const nlohmann::json& n) { out.push_back(api::NamespaceInfo::FromJson(n)); });
  return out;
}

}  // namespace kmt::controller
