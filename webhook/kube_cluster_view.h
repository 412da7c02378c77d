// webhook/kube_cluster_view.h — ClusterView over a KubeClient: live reads, because a VMIM
// created a moment ago must be found when its target pod arrives (a cache may lag).
// The node list, which only feeds advisory warnings, is reused for `node_list_ttl` so a
// burst of VMIM reviews costs one LIST, not one per request (bench/RESULTS.md). When it
// expires, one review lists again while the others keep using the previous list, so a
// refresh never stalls concurrent reviews; only the very first list is waited for.
// In the operator, where the controller's informer already caches the nodes, the cache is
// used instead (SetCachedNodes) and no review lists nodes at all. Likewise the VMI's node
// (VmiNodeName) comes from the webhook's VMI cache (webhook/vmi_node_cache.h) where the
// operator wires it (SetCachedVmiNodes), with a GET only while it has not synced or on a miss:
// a hit reads no API and never blocks, so such a review is decided on the I/O thread.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>

#include "base/clock.h"
#include "kube/client.h"
#include "webhook/cluster_view.h"

namespace kmt::webhook {

class KubeClusterView : public ClusterView {
 public:
  // `page_size`: nodes per LIST page.
  // `node_list_ttl`: how long a node list is reused (0: every call lists), on `clock`'s
  // steady time.
  explicit KubeClusterView(kube::KubeClient& client, int64_t page_size = 500,
                           std::chrono::milliseconds node_list_ttl = std::chrono::seconds(2),
                           base::Clock& clock = base::SystemClock())
      : client_(client), page_size_(page_size), node_list_ttl_(node_list_ttl), clock_(clock) {}

  std::optional<Json> GetMigration(std::string_view ns, std::string_view name) override;
  NodeList ListNodes() override;

  // A source of cached nodes used instead of LIST whenever it returns non-null (e.g. an
  // informer's, null until it has synced). Set before the first review.
  void SetCachedNodes(std::function<NodeList()> source) { cached_nodes_ = std::move(source); }

  // From the cached VMI nodes when `source` answers; else a GET of the VMI.
  std::optional<std::string> VmiNodeName(std::string_view ns, std::string_view name) override;
  // A source of cached VMI nodes (e.g. VmiNodeCache::NodeName): status.nodeName of a cached
  // VMI, nullopt while it has not synced or does not hold the VMI. It must not block. Set
  // before the first review.
  using CachedVmiNode =
      std::function<std::optional<std::string>(std::string_view ns, std::string_view name)>;
  void SetCachedVmiNodes(CachedVmiNode source) { cached_vmi_node_ = std::move(source); }

  std::vector<Json> ListPolicies() override;
  std::optional<Json> GetPolicy(std::string_view name) override;
  std::optional<Json> GetVmi(std::string_view ns, std::string_view name) override;
  std::optional<Json> GetNamespace(std::string_view name) override;

  // From the cached migrations when `source` has one with `expected_uid`; else a GET (not
  // yet in the cache — virt-controller creates the target pod right after the VMIM — or
  // the cache's copy is another migration of the same name).
  std::optional<MigrationRef> GetMigrationRef(std::string_view ns, std::string_view name,
                                              std::string_view expected_uid) override;
  // A source of cached migrations (e.g. the controller's VMIM informer). Set before the
  // first review.
  using CachedMigration =
      std::function<std::optional<MigrationRef>(std::string_view ns, std::string_view name)>;
  void SetCachedMigrations(CachedMigration source) { cached_migration_ = std::move(source); }

 private:
  NodeList ListNodesNow();

  kube::KubeClient& client_;
  int64_t page_size_;
  std::chrono::milliseconds node_list_ttl_;
  base::Clock& clock_;
  std::function<NodeList()> cached_nodes_;
  CachedMigration cached_migration_;
  CachedVmiNode cached_vmi_node_;
  std::mutex nodes_mu_;
  std::condition_variable nodes_cv_;  // the first list arrived, or its attempt failed
  base::SteadyTime nodes_fetched_{};
  bool refreshing_ = false;
  NodeList nodes_;  // null until the first list succeeds
};

}  // namespace kmt::webhook
