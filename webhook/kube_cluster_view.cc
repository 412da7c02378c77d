#include "webhook/kube_cluster_view.h"

#include "kube/error.h"
#include "kube/paging.h"
#include "kube/resources.h"

namespace kmt::webhook {
namespace {

// GET that maps 404 to nullopt; every other error propagates.
std::optional<Json> GetOrNothing(kube::KubeClient& client, const kube::Resource& r,
                                 std::string_view ns, std::string_view name) {
  try {
    return client.Get(r, ns, name);
  } catch (const kube::KubeError& e) {
    if (e.kind() == kube::ErrorKind::kNotFound) return std::nullopt;
    throw;
  }
}

}  // namespace

std::optional<Json> KubeClusterView::GetMigration(std::string_view ns, std::string_view name) {
  return GetOrNothing(client_, kube::kVirtualMachineInstanceMigrations, ns, name);
}

std::vector<api::NodeInfo> KubeClusterView::ListNodes() {
  if (node_list_ttl_.count() <= 0) return ListNodesNow();
  std::lock_guard lock(nodes_mu_);
  const auto now = std::chrono::steady_clock::now();
  if (!nodes_valid_ || now - nodes_fetched_ >= node_list_ttl_) {
    nodes_ = ListNodesNow();  // on error the previous list is kept but not reused
    nodes_fetched_ = now;
    nodes_valid_ = true;
  }
  return nodes_;
}

std::vector<api::NodeInfo> KubeClusterView::ListNodesNow() {
  kube::ListOptions opts;
  opts.limit = page_size_;
  opts.omit_managed_fields = true;  // projected to NodeInfo: never read
  Json list = kube::ListAll(client_, kube::kNodes, "", opts);
  std::vector<api::NodeInfo> nodes;
  if (auto items = list.find("items"); items != list.end() && items->is_array()) {
    nodes.reserve(items->size());
    for (const Json& node : *items) nodes.push_back(api::NodeInfo::FromJson(node));
  }
  return nodes;
}

std::optional<std::string> KubeClusterView::VmiNodeName(std::string_view ns,
                                                        std::string_view name) {
  auto vmi = GetOrNothing(client_, kube::kVirtualMachineInstances, ns, name);
  if (!vmi) return std::nullopt;
  const Json& obj = *vmi;
  auto status = obj.find("status");
  if (!obj.is_object() || status == obj.end() || !status->is_object()) return std::string();
  auto node = status->find("nodeName");
  return node != status->end() && node->is_string() ? node->get<std::string>() : std::string();
}

}  // namespace kmt::webhook
