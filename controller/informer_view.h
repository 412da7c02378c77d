// controller/informer_view.h — the operator's caches: four informers keeping
// projections only, behind CacheView, with handlers that enqueue VMIM keys.
//
//   VMIMs         all namespaces                          api::MigrationInfo
//   target pods   kubevirt.io=virt-launcher,kubevirt.io/migrationJobUID
//                 (indexed by that label's value)         api::TargetPod
//   nodes                                                 api::NodeInfo
//   bound pods    spec.nodeName!=, not Succeeded/Failed   api::BoundPod
//                 (labels cut to api::kBoundPodLabelBytes)
//
// Memory (DESIGN.md §6): only projections are cached; label strings are
// interned. Bound pods are every running pod of the cluster, as the
// scheduler's own cache: the explainer needs them for resource accounting and
// the VM's anti-affinity; a BoundPod keeps node, namespace, name, labels, requests, its
// required pod anti-affinity and whether it is being deleted. Namespaces are not cached:
// they are listed only when a pod affinity term has a namespaceSelector.
//
// Handlers: a VMIM with a target constraint (term or spec.addedNodeSelector),
// not in a final phase, enqueues itself (also on the periodic resync). A
// target pod enqueues its VMIM on every change. A node change that matters to
// scheduling (labels, taints, cordon, readiness, allocatable) enqueues the
// VMIMs whose target pods are unschedulable: the view keeps those pods in an
// index of their own (kept by the target pod handlers), so a node event costs
// the pods that wait, not a copy of every target pod. Bound pods have no
// handlers: the unschedulable report refreshes on its own timer.
//
// The initial lists are the caches filling, not changes (controller-runtime's
// isInInitialList): their VMIM and target-pod adds name keys that are handed to
// the controller once each, when all three lists are in; their node adds
// re-explain nothing (every pod that waits was listed, so its key is among them).
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "api/projections.h"
#include "base/clock.h"
#include "controller/cache_view.h"
#include "controller/controller.h"
#include "kube/client.h"
#include "kube/informer.h"

namespace kmt::controller {

struct InformerViewOptions {
  std::chrono::milliseconds vmim_resync{std::chrono::minutes(5)};
  // Items per initial LIST page. One page is parsed as a whole, so this bounds the sync's
  // transient memory; 250 measured 83 MiB peak / 78 MiB settled against 95 / 81 at 500
  // (bench/memory_benchmark, 25,000 objects) for 4 more requests per 1,000 objects.
  int64_t page_size = 250;
  // Start() leaves the bound-pod cache out; StartBoundPods() starts it (the operator's
  // standbys: only the leader explains, and every running pod of the cluster is the largest
  // cache). HasSynced() then means the other three; BoundPodsReady() says when it is there.
  bool bound_pods_on_demand = false;
  std::function<void(const kube::KubeError&)> on_error;
};

class InformerView : public CacheView {
 public:
  InformerView(kube::KubeClient& client, const base::Clock& clock,
               const InformerViewOptions& options = {});
  ~InformerView() override;  // Stop()

  // Routes cache events to `controller`. Call once, before Start().
  void Connect(Controller& controller);
  // Calls `fn` with the policy's name when a VMIM naming a MigrationTargetPolicy appears,
  // changes phase or goes (for the policies' status, and the waiters of its
  // maxInboundPerNode: Connect). Call before Start().
  void OnPolicyMigration(const std::function<void(const std::string& policy)>& fn);
  // The cached VMIMs that name a MigrationTargetPolicy.
  std::vector<api::MigrationInfo> PolicyMigrations() const;
  void Start();
  // Starts the bound-pod cache if Start() left it out (idempotent, thread-safe).
  void StartBoundPods();
  void Stop();
  bool HasSynced() const;
  bool WaitForSync(std::chrono::milliseconds timeout) const;

  // CacheView
  std::optional<api::MigrationInfo> Migration(const std::string& ns,
                                              const std::string& name) override;
  std::vector<api::TargetPod> TargetPods(const std::string& ns,
                                         const std::string& vmim_uid) override;
  std::vector<api::NodeInfo> Nodes() override;
  std::vector<api::BoundPod> BoundPods() override;
  bool BoundPodsReady() override;
  // Not cached: a LIST each call (rare: only for namespaceSelectors).
  std::vector<api::NamespaceInfo> Namespaces() override;
  std::optional<base::SteadyTime> TargetPodSeenAt(const std::string& pod_uid) override;
  std::vector<api::TargetPod> PolicyTargetPods(const std::string& policy,
                                               const std::string& except_uid) override;
  // Not cached: GETs through the client (ResolveClaimsFromApi).
  void ResolveClaims(api::TargetPod& pod) override;

  // The cached nodes as one shared, immutable list (for the webhook's placement warnings):
  // null until the node cache has synced. Rebuilt (pointer copies, no projection copies)
  // only after a node was added, deleted or changed in a way NodeChangeMatters.
  using NodeSnapshot = std::shared_ptr<const std::vector<std::shared_ptr<const api::NodeInfo>>>;
  NodeSnapshot NodeList();

  // What waits, for the waiting gauges (controller/waiting_metrics.h): when each target pod
  // that still holds the gate was first seen, and every cached VMIM (shared, not copied).
  std::vector<base::SteadyTime> GatedTargetPodsSeenAt() const;
  std::vector<std::shared_ptr<const api::MigrationInfo>> MigrationList() const;

  // Cache sizes, for logs and the memory benchmark.
  struct Sizes {
    size_t vmims, target_pods, nodes, bound_pods;
  };
  Sizes sizes() const;
  // Cached bound pods whose labels the cache cut (a scan of the cache: for /metrics).
  size_t BoundPodsLabelsCut() const;

  // Target pods handed to the controller because a node changed, since construction (the
  // work node events cost; for tests).
  uint64_t node_rechecks() const;
  // VMIM keys the handlers handed to the controller (repeats included), since construction:
  // the work cache events cost the queue (for tests).
  uint64_t keys_handed_over() const;

 private:
  void TrackWaiting(const std::string& key, const kube::Informer<api::TargetPod>::Ptr& pod);
  // controller.OnTargetPod, counted.
  void HandOver(Controller& controller, const api::TargetPod& pod);
  // A key named by an initial list's add; the last of the three lists hands them over.
  void AddInitialKey(std::string key);
  void InitialListDone(Controller& controller);

  kube::KubeClient& client_;
  const base::Clock& clock_;
  kube::Informer<api::MigrationInfo> vmims_;
  kube::Informer<api::TargetPod> targets_;
  kube::Informer<api::NodeInfo> nodes_;
  kube::Informer<api::BoundPod> bound_;
  const bool bound_on_demand_;
  std::once_flag bound_started_;
  std::atomic<uint64_t> node_generation_{0};  // bumped by node changes that matter
  std::mutex snapshot_mu_;
  NodeSnapshot snapshot_;
  uint64_t snapshot_generation_ = 0;
  mutable std::mutex seen_mu_;
  std::unordered_map<std::string, base::SteadyTime> seen_;  // target pod uid -> first seen
  std::mutex waiting_mu_;
  // Target pods that WaitsUnschedulable, by informer key.
  std::map<std::string, kube::Informer<api::TargetPod>::Ptr> waiting_;
  std::atomic<uint64_t> node_rechecks_{0};
  std::atomic<uint64_t> keys_handed_over_{0};
  std::mutex initial_mu_;
  std::set<std::string> initial_keys_;  // named by the initial lists' adds so far
  int initial_lists_left_ = 3;          // VMIMs, target pods, nodes
};

// The values of the target-pod index: the pod's kubevirt.io/migrationJobUID label. Any
// JSON (no metadata, labels that are no object, a value that is no string): none, and
// never an exception or undefined behaviour.
std::vector<std::string> MigrationJobIndexValues(const nlohmann::json& pod);

// Whether a node change can change a scheduling verdict.
bool NodeChangeMatters(const api::NodeInfo& a, const api::NodeInfo& b);

}  // namespace kmt::controller
