// webhook/kube_cluster_view.h — ClusterView over a KubeClient: live reads, because a VMIM
// created a moment ago must be found when its target pod arrives (a cache may lag).
// The node list, which only feeds advisory warnings, is reused for `node_list_ttl` so a
// burst of VMIM reviews costs one LIST, not one per request (bench/RESULTS.md).
#pragma once

#include <chrono>
#include <cstdint>
#include <mutex>

#include "kube/client.h"
#include "webhook/cluster_view.h"

namespace kmt::webhook {

class KubeClusterView : public ClusterView {
 public:
  // `page_size`: nodes per LIST page.
  // `node_list_ttl`: how long a node list is reused (0: every call lists).
  explicit KubeClusterView(kube::KubeClient& client, int64_t page_size = 500,
                           std::chrono::milliseconds node_list_ttl = std::chrono::seconds(2))
      : client_(client), page_size_(page_size), node_list_ttl_(node_list_ttl) {}

  std::optional<Json> GetMigration(std::string_view ns, std::string_view name) override;
  std::vector<api::NodeInfo> ListNodes() override;
  std::optional<std::string> VmiNodeName(std::string_view ns, std::string_view name) override;

 private:
  std::vector<api::NodeInfo> ListNodesNow();

  kube::KubeClient& client_;
  int64_t page_size_;
  std::chrono::milliseconds node_list_ttl_;
  std::mutex nodes_mu_;
  std::chrono::steady_clock::time_point nodes_fetched_{};
  bool nodes_valid_ = false;
  std::vector<api::NodeInfo> nodes_;
};

}  // namespace kmt::webhook
