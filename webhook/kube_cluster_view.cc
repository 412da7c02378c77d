#include "webhook/kube_cluster_view.h"

#include "base/blocking.h"
#include "base/json.h"
#include "kube/error.h"
#include "kube/paging.h"
#include "kube/reads.h"
#include "kube/resources.h"

namespace kmt::webhook {
std::optional<Json> KubeClusterView::GetMigration(std::string_view ns, std::string_view name) {
  return kube::GetIfExists(client_, kube::kVirtualMachineInstanceMigrations, ns, name);
}

std::optional<MigrationRef> KubeClusterView::GetMigrationRef(std::string_view ns,
                                                             std::string_view name,
                                                             std::string_view expected_uid) {
  if (cached_migration_) {
    std::optional<MigrationRef> cached = cached_migration_(ns, name);
    if (cached && cached->uid == expected_uid) return cached;
  }
  return ClusterView::GetMigrationRef(ns, name, expected_uid);
}

NodeList KubeClusterView::ListNodes() {
  if (cached_nodes_) {
    if (NodeList cached = cached_nodes_()) return cached;
  }
  if (node_list_ttl_.count() <= 0) return ListNodesNow();
  std::unique_lock lock(nodes_mu_);
  // Before the first list: wait for another review's attempt instead of starting a second.
  if (nodes_ == nullptr && refreshing_) base::MayBlock();
  nodes_cv_.wait(lock, [this] { return nodes_ != nullptr || !refreshing_; });
  const auto now = clock_.Now();
  if (nodes_ != nullptr && (now - nodes_fetched_ < node_list_ttl_ || refreshing_)) {
    return nodes_;  // fresh, or being refreshed by another review: use it meanwhile
  }
  refreshing_ = true;
  lock.unlock();
  NodeList fresh;
  try {
    fresh = ListNodesNow();
  } catch (...) {
    // The previous list (if any) stays expired, so the next review tries again.
    lock.lock();
    refreshing_ = false;
    nodes_cv_.notify_all();
    throw;
  }
  lock.lock();
  nodes_ = fresh;
  nodes_fetched_ = now;
  refreshing_ = false;
  nodes_cv_.notify_all();
  return fresh;
}

NodeList KubeClusterView::ListNodesNow() {
  kube::ListOptions opts;
  opts.limit = page_size_;
  opts.omit_managed_fields = true;       // projected to NodeInfo: never read
  opts.reads = &api::NodeInfo::Reads();  // nor anything else NodeInfo does not read
  Json list = kube::ListAll(client_, kube::kNodes, "", opts);
  std::vector<std::shared_ptr<const api::NodeInfo>> nodes;
  if (const auto items = base::Array(list, "items")) {
    nodes.reserve((*items)->size());
    for (const Json& node : **items) {
      nodes.push_back(std::make_shared<const api::NodeInfo>(api::NodeInfo::FromJson(node)));
    }
  }
  return std::make_shared<const std::vector<std::shared_ptr<const api::NodeInfo>>>(
      std::move(nodes));
}

std::optional<std::string> KubeClusterView::VmiNodeName(std::string_view ns,
                                                        std::string_view name) {
  if (cached_vmi_node_) {
    if (std::optional<std::string> cached = cached_vmi_node_(ns, name)) return cached;
  }
  auto vmi = kube::GetIfExists(client_, kube::kVirtualMachineInstances, ns, name);
  if (!vmi) return std::nullopt;
  return base::StringAt(*vmi, {"status", "nodeName"});
}

std::vector<Json> KubeClusterView::ListPolicies() {
  kube::ListOptions opts;
  opts.limit = page_size_;
  Json list = kube::ListAll(client_, kube::kMigrationTargetPolicies, "", opts);
  std::vector<Json> out;
  if (base::Array(list, "items")) {
    for (Json& p : list["items"]) out.push_back(std::move(p));
  }
  return out;
}

std::optional<Json> KubeClusterView::GetPolicy(std::string_view name) {
  return kube::GetIfExists(client_, kube::kMigrationTargetPolicies, "", name);
}

std::optional<Json> KubeClusterView::GetVmi(std::string_view ns, std::string_view name) {
  return kube::GetIfExists(client_, kube::kVirtualMachineInstances, ns, name);
}

std::optional<Json> KubeClusterView::GetNamespace(std::string_view name) {
  return kube::GetIfExists(client_, kube::kNamespaces, "", name);
}

}  // namespace kmt::webhook
