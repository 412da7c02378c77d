// api/policy.h — MigrationTargetPolicy (migration-target.kubevirt.io/v1alpha1): an admin's
// node selector term for KubeVirt's evacuation migrations (drains, node taints, the
// descheduler's evictions), chosen per VMIM and attached as the same annotation an admin's
// request carries (api/added_term.h), so gate → AND → report is unchanged.
//
//   spec.priority                   int, default 0: the highest wins when several match
//   spec.match.origin               Any (default) | Evacuation | Descheduler
//   spec.match.sourceNodeSelector   metav1.LabelSelector on the node being left
//   spec.match.namespaceSelector    metav1.LabelSelector on the VMI's namespace
//   spec.match.vmiSelector          metav1.LabelSelector on the VMI
//   spec.addedNodeSelectorTerm      core/v1 NodeSelectorTerm, validated as the annotation is
//   spec.maxInboundPerNode          int 1..10000, optional: at most that many of the
//                                   policy's migrations inbound to one node at a time
//                                   (controller/reconcile.h)
//
// An absent selector matches everything; an empty one ({}) too, as in Kubernetes. Origin:
// KubeVirt's virt-api marks a VMI evicted at the descheduler's request with the annotation
// kubevirt.io/eviction-source: descheduler (pod-eviction-admitter.go markVMI); every other
// evacuation (kubectl drain, a node taint) is Evacuation.
//
// Precedence: among the policies that match, the highest spec.priority wins, then the
// smallest metadata.name (names are unique), so the choice never depends on list order.
//
// The operator's webhook (webhook/policy_attacher.h) and `kubectl migrate policy explain`
// (cli/policy_explain_cmd.h) both go through ParsePolicies, EvacuationFactsOf and
// SelectPolicy, so what the plugin predicts is what the webhook attaches.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "api/cause.h"
#include "api/node_selector.h"

namespace kmt::api {

// metav1.LabelSelector: matchLabels and matchExpressions, ANDed.
struct PolicyLabelSelector {
  struct Requirement {
    std::string key;
    std::string op;  // In, NotIn, Exists, DoesNotExist
    std::vector<std::string> values;
  };
  std::vector<Requirement> requirements;  // matchLabels first (as In with one value)

  // labels: an object of strings, or null.
  bool Matches(const nlohmann::json& labels) const;
};

enum class PolicyOrigin { kAny, kEvacuation, kDescheduler };

struct MigrationTargetPolicy {
  std::string name;
  int64_t priority = 0;
  PolicyOrigin origin = PolicyOrigin::kAny;
  std::optional<PolicyLabelSelector> source_node_selector, namespace_selector, vmi_selector;
  NodeSelectorTerm term;
  std::optional<int64_t> max_inbound_per_node;  // attached as api::kMaxInboundAnnotation
  // The annotation text attached to a VMIM: the term as stored (compact JSON, members in
  // sorted order), so the validator can compare it byte for byte.
  std::string term_text;
};

struct PolicyParse {
  std::optional<MigrationTargetPolicy> policy;  // set iff causes is empty
  std::vector<Cause> causes;                    // field paths from the object's root
};

// Parses and validates a MigrationTargetPolicy object (as the API server stores or a review
// carries it): unknown members and wrong types in spec are causes; the term gets every
// check of ParseAddedTerm, its causes under spec.addedNodeSelectorTerm.
PolicyParse ParsePolicy(const nlohmann::json& object);

// What a policy is matched against: one evacuation VMIM's VMI, its namespace and the node
// it leaves.
struct EvacuationFacts {
  bool descheduler = false;           // the VMI carries eviction-source: descheduler
  nlohmann::json vmi_labels;          // object or null
  nlohmann::json namespace_labels;    // object or null
  nlohmann::json source_node_labels;  // object or null
};

// The value of api::kMaxInboundAnnotation a VMIM carries: a decimal integer 1..10000 as the
// webhook writes it. Anything else (written around the webhook) reads as 1, the tightest
// limit, so a damaged annotation never lifts the policy's limit. nullopt when absent.
std::optional<int64_t> ParseMaxInbound(const std::optional<std::string>& annotation);
inline constexpr int64_t kMaxInboundLimit = 10000;

bool PolicyMatches(const MigrationTargetPolicy& p, const EvacuationFacts& facts);

// The facts of an evacuation of `vmi` (an object as stored: its metadata.labels and its
// kubevirt.io/eviction-source annotation are read) in the namespace `ns` (the object, for its
// labels) from the node labelled `source_node_labels`. Any of them may be null (not read, or
// absent): its labels are then null, which only an absent or empty selector matches.
EvacuationFacts EvacuationFactsOf(const nlohmann::json& vmi, const nlohmann::json& ns,
                                  const nlohmann::json& source_node_labels);

// A policy that does not parse: skipped, never matched.
struct SkippedPolicy {
  std::string name;
  std::string cause;  // its first cause (api::ToString), "invalid" when there is none
  // "MigrationTargetPolicy \"NAME\" is skipped: CAUSE" (the webhook's admission warning).
  std::string Warning() const;
};

struct PolicySet {
  std::vector<MigrationTargetPolicy> policies;  // those that parse, in list order
  std::vector<SkippedPolicy> skipped;           // those that do not, in list order
  // Some policy has a namespaceSelector: only then are namespaces worth reading.
  bool wants_namespace = false;
};

// Every policy object of a LIST, parsed by ParsePolicy.
PolicySet ParsePolicies(const std::vector<nlohmann::json>& objects);

// The winning policy by the precedence above, or nullptr when none matches.
const MigrationTargetPolicy* SelectPolicy(const std::vector<MigrationTargetPolicy>& policies,
                                          const EvacuationFacts& facts);

}  // namespace kmt::api
