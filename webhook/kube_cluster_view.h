// webhook/kube_cluster_view.h — ClusterView over a KubeClient: live reads, because a VMIM
// created a moment ago must be found when its target pod arrives (a cache may lag).
#pragma once

#include <cstdint>

#include "kube/client.h"
#include "webhook/cluster_view.h"

namespace kmt::webhook {

class KubeClusterView : public ClusterView {
 public:
  // `page_size`: nodes per LIST page.
  explicit KubeClusterView(kube::KubeClient& client, int64_t page_size = 500)
      : client_(client), page_size_(page_size) {}

  std::optional<Json> GetMigration(std::string_view ns, std::string_view name) override;
  std::vector<api::NodeInfo> ListNodes() override;
  std::optional<std::string> VmiNodeName(std::string_view ns, std::string_view name) override;

 private:
  kube::KubeClient& client_;
  int64_t page_size_;
};

}  // namespace kmt::webhook
