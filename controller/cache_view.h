// controller/cache_view.h — what the reconcile loop reads, behind one seam.
//
// The loop never lists the API server per key: in the operator the view is
// backed by informer caches (controller/informer_view.h). ApiView reads the
// API directly instead; component tests use it over kube::FakeClient, where
// "the cache" is simply the fake server's current state.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "api/projections.h"
#include "base/clock.h"
#include "kube/client.h"

namespace kmt::controller {

class CacheView {
 public:
  virtual ~CacheView() = default;

  // The VMIM, or nullopt when it does not exist (deleted).
  virtual std::optional<api::MigrationInfo> Migration(const std::string& ns,
                                                      const std::string& name) = 0;
  // Target virt-launcher pods of the VMIM: label kubevirt.io/migrationJobUID == uid.
  virtual std::vector<api::TargetPod> TargetPods(const std::string& ns,
                                                 const std::string& vmim_uid) = 0;
  // Every node, and every pod bound to a node that is not finished: the
  // explainer's inputs. Only asked for when a target pod needs explaining.
  virtual std::vector<api::NodeInfo> Nodes() = 0;
  virtual std::vector<api::BoundPod> BoundPods() = 0;
  // Whether BoundPods() is complete (a cache that has synced, or a live read). False on a
  // replica that caches bound pods only while it leads and has not listed them yet: a plan
  // that needs them waits.
  virtual bool BoundPodsReady() { return true; }
  // Every namespace (a LIST, not cached): only asked for when a pod (anti-)affinity term
  // has a namespaceSelector (api::WantsNamespaces).
  virtual std::vector<api::NamespaceInfo> Namespaces() = 0;
  // When the view first saw the target pod (for the gate-release latency), if known.
  virtual std::optional<base::SteadyTime> TargetPodSeenAt(const std::string& pod_uid) = 0;
  // The target pods of every migration that names `policy` and is not final, except the
  // VMIM `except_uid`'s (for its maxInboundPerNode).
  virtual std::vector<api::TargetPod> PolicyTargetPods(const std::string& policy,
                                                       const std::string& except_uid) = 0;
  // Resolves `pod.claims` (api/pod_volumes.h): GETs of each PVC, then its StorageClass or
  // PV as needed, straight from the API (the operator caches no volumes: only the pods
  // being explained need them). Only asked for a target pod the explainer will judge.
  // Throws kube::KubeError on a failed read (404 is an answer, not a failure).
  virtual void ResolveClaims(api::TargetPod& pod) = 0;
};

// CacheView::ResolveClaims through `client`, for both views.
void ResolveClaimsFromApi(kube::KubeClient& client, api::TargetPod& pod);

// The node the VMI runs on now: the VMIM's status.migrationState.sourceNode,
// else the node of the VMI's running virt-launcher pod (same
// kubevirt.io/created-by as the target pod, not a target of this VMIM).
std::string SourceNode(const api::MigrationInfo& vmim, const std::vector<api::TargetPod>& targets,
                       const std::vector<api::BoundPod>& bound);

// Reads straight from the API (no cache).
class ApiView : public CacheView {
 public:
  explicit ApiView(kube::KubeClient& client) : client_(client) {}
  std::optional<api::MigrationInfo> Migration(const std::string& ns,
                                              const std::string& name) override;
  std::vector<api::TargetPod> TargetPods(const std::string& ns,
                                         const std::string& vmim_uid) override;
  std::vector<api::NodeInfo> Nodes() override;
  std::vector<api::BoundPod> BoundPods() override;
  std::vector<api::NamespaceInfo> Namespaces() override;
  std::optional<base::SteadyTime> TargetPodSeenAt(const std::string&) override {
    return std::nullopt;
  }
  std::vector<api::TargetPod> PolicyTargetPods(const std::string& policy,
                                               const std::string& except_uid) override;
  void ResolveClaims(api::TargetPod& pod) override { ResolveClaimsFromApi(client_, pod); }

 private:
  kube::KubeClient& client_;
};

}  // namespace kmt::controller
