// api/pod_rules.h — kube-scheduler's inter-pod filters for one pod, precomputed over a cluster
// snapshot (part of api::Explainer; semantics of kube-scheduler v1.34):
//
//   - existing pods' anti-affinity (InterPodAffinity, satisfyExistingPodsAntiAffinity): a
//     bound pod's required anti-affinity term that selects the pod (its namespace by the
//     term's namespaces or namespaceSelector, its labels by the label selector) rules out
//     every node whose label `topologyKey` has the value it has on that pod's node.
//   - the pod's own required pod affinity (satisfyPodAffinity): the node carries every
//     term's topologyKey, and each term's domain there holds a counted pod. A bound pod is
//     counted only if it matches ALL the terms (podMatchesAllAffinityTerms), in each term's
//     domain of its node. When no pod is counted anywhere and the pod matches all its own
//     terms, any node carrying the keys passes (the first pod of a group with affinity to
//     itself).
//   - topology spread (PodTopologySpread, whenUnsatisfiable DoNotSchedule only): a node is
//     counted for a constraint when it carries every DoNotSchedule constraint's topologyKey,
//     passes the pod's required node affinity unless nodeAffinityPolicy is Ignore, and has
//     no untolerated NoSchedule/NoExecute taint when nodeTaintsPolicy is Honor; each
//     counted node's domain holds the bound pods of the pod's namespace that the selector
//     matches (not those being deleted; none when the selector is empty). The selector is
//     the constraint's labelSelector ANDed with matchLabelKeys' key=value from the pod's own
//     labels (v1.34's scheduler merges them for every pod; the API server's own merge at
//     creation selects the same pods). A node fails without the key, or when
//     count(domain) + (1 if the pod matches) − global minimum > maxSkew; the global minimum
//     is 0 when fewer domains than minDomains are counted.
//
// Terminal pods are the caller's to keep out or flag (BoundPod::terminal): they are
// ignored. Evaluate() allocates nothing; texts are rendered only on request.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "api/compiled_selector.h"
#include "api/labels.h"
#include "api/projections.h"

namespace kmt::api {

class PodRules {
 public:
  enum Rule : uint8_t { kOthersAntiAffinity = 1, kOwnPodAffinity = 2, kTopologySpread = 4 };

  // `node_affinity_ok(i)`: node i passes the pod's nodeSelector and required node affinity
  // as the scheduler sees the pod; `taints_ok(i)`: node i has no NoSchedule/NoExecute taint
  // the pod does not tolerate. `pod` and `nodes` must outlive this object; `bound`,
  // `namespaces` and the functions are only used here. `name_other_namespaces`: texts name
  // pods of other namespaces than the pod's (else they count them, see Disclosure).
  PodRules(const TargetPod& pod, std::span<const NodeInfo> nodes, std::span<const BoundPod> bound,
           std::span<const NamespaceInfo> namespaces,
           const std::function<bool(size_t)>& node_affinity_ok,
           const std::function<bool(size_t)>& taints_ok, bool name_other_namespaces);

  // The rules node i fails, as Rule bits. No allocation.
  uint8_t Evaluate(size_t i) const;
  // Texts of each failing rule on node i (cold path), e.g.
  //   "pod vms/db-0's anti-affinity (topologyKey zone) excludes it"
  //   "the anti-affinity of 2 pods in other namespaces (topologyKey zone) excludes it"
  //   "VM's own pod affinity (topologyKey zone, selector app=db) has no matching pod there"
  //   "topology spread (zone, maxSkew 1): 3 matching pods there, 1 in the emptiest domain"
  std::vector<std::string> OthersAntiAffinityTexts(size_t i) const;
  std::vector<std::string> OwnPodAffinityTexts(size_t i) const;
  std::vector<std::string> TopologySpreadTexts(size_t i) const;
  // Indices in `bound` of pods whose cached labels were cut (BoundPod::labels_dropped) where
  // the pod's own pod affinity or a spread constraint's selector names a key they lack: the
  // counts above took those labels as absent. In the order found; a pod may repeat.
  const std::vector<size_t>& CutLabelPods() const { return cut_label_pods_; }

 private:
  using Domain = std::pair<InternId, InternId>;  // topology key, value
  struct Blocker {
    Domain domain;
    std::string who;  // "ns/name", or "" for a pod of another namespace (not named)
    size_t pod;       // its index in `bound`: unnamed pods are counted once each
    std::string topology_key;
  };
  struct Spread {
    const TopologySpreadConstraint* constraint;
    InternedString topology;
    InternId key;
    int64_t min_match = 0;  // global minimum (minDomains applied)
    size_t domains = 0;     // domains counted
    bool self_match = false;
    bool FewerThanMinDomains() const { return std::cmp_less(domains, constraint->min_domains); }
  };

  bool AffinityTermHasPod(const CompiledPodTerm& t, InternId value) const;
  int64_t SpreadCount(size_t i, size_t c) const { return spread_counts_[i * spread_.size() + c]; }

  std::span<const NodeInfo> nodes_;
  std::vector<Domain> blocked_;  // sorted, unique: domains some pod's anti-affinity rules out
  std::vector<Blocker> blockers_;
  std::vector<CompiledPodTerm> affinity_;
  std::vector<Domain> affinity_domains_;  // sorted, unique: domains holding a counted pod
  bool self_matches_affinity_ = false;
  std::vector<Spread> spread_;
  std::vector<int64_t> spread_counts_;  // node × constraint: matching pods, -1 without the key
  std::vector<size_t> cut_label_pods_;
};

}  // namespace kmt::api
