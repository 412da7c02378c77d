#include "api/pod_rules.h"

#include <algorithm>
#include <climits>
#include <optional>
#include <string_view>
#include <unordered_map>

namespace kmt::api {
namespace {

void SortUnique(std::vector<std::pair<InternId, InternId>>& v) {
  std::ranges::sort(v);
  v.erase(std::ranges::unique(v).begin(), v.end());
}

bool Has(const std::vector<std::pair<InternId, InternId>>& sorted, InternId key, InternId value) {
  return std::ranges::binary_search(sorted, std::pair(key, value));
}

std::string Pods(int64_t n) {
  return std::to_string(n) + (n == 1 ? " matching pod" : " matching pods");
}

}  // namespace

PodRules::PodRules(const TargetPod& pod, std::span<const NodeInfo> nodes,
                   std::span<const BoundPod> bound, std::span<const NamespaceInfo> namespaces,
                   const std::function<bool(size_t)>& node_affinity_ok,
                   const std::function<bool(size_t)>& taints_ok, bool name_other_namespaces)
    : nodes_(nodes) {
  const NamespaceIndex ns_index(namespaces);
  const Labels* own_ns_labels = ns_index.Find(pod.ns);
  std::unordered_map<std::string_view, size_t> index;
  index.reserve(nodes.size());
  for (size_t i = 0; i < nodes.size(); ++i) index.emplace(nodes[i].name, i);
  // The node a counted pod runs on, or nullptr (terminal, unbound, or on no known node).
  auto node_of = [&](const BoundPod& b) -> const NodeInfo* {
    if (b.terminal || b.node_name.empty()) return nullptr;
    auto it = index.find(b.node_name);
    return it == index.end() ? nullptr : &nodes[it->second];
  };

  // Existing pods' required anti-affinity toward the pod.
  for (size_t bi = 0; bi < bound.size(); ++bi) {
    const BoundPod& b = bound[bi];
    if (b.anti_affinity.empty()) continue;
    const NodeInfo* node = node_of(b);
    if (node == nullptr) continue;
    for (const auto& t : b.anti_affinity) {
      const CompiledPodTerm term(t, b.ns);
      if (!term.Matches(pod.ns, pod.labels, own_ns_labels, /*unknown_as_unlabelled=*/true))
        continue;
      const InternId value = node->labels.FindId(term.topology_key);
      if (value == kNoIntern) continue;
      blocked_.emplace_back(term.topology_key, value);
      const bool named = name_other_namespaces || b.ns == pod.ns;
      blockers_.push_back(
          {{term.topology_key, value}, named ? b.ns + "/" + b.name : "", bi, t.topology_key});
    }
  }
  SortUnique(blocked_);

  // The pod's own required pod affinity.
  for (const auto& t : pod.pod_affinity()) affinity_.emplace_back(t, pod.ns);
  if (!affinity_.empty()) {
    auto matches_all = [&](std::string_view ns, const Labels& labels) {
      const Labels* ns_labels = ns_index.Find(ns);
      return std::ranges::all_of(
          affinity_, [&](const CompiledPodTerm& t) { return t.Matches(ns, labels, ns_labels); });
    };
    for (size_t bi = 0; bi < bound.size(); ++bi) {
      const BoundPod& b = bound[bi];
      const NodeInfo* node = node_of(b);
      if (node == nullptr) continue;
      if (std::ranges::any_of(affinity_, [&](const CompiledPodTerm& t) {
            return t.MayMissLabels(b, ns_index.Find(b.ns));
          })) {
        cut_label_pods_.push_back(bi);
      }
      if (!matches_all(b.ns, b.labels)) continue;
      for (const auto& t : affinity_) {
        const InternId value = node->labels.FindId(t.topology_key);
        if (value != kNoIntern) affinity_domains_.emplace_back(t.topology_key, value);
      }
    }
    SortUnique(affinity_domains_);
    self_matches_affinity_ = matches_all(pod.ns, pod.labels);
  }

  // Topology spread, DoNotSchedule constraints.
  std::vector<CompiledSelector> selectors;
  for (const auto& c : pod.topology_spread()) {
    if (!c.do_not_schedule) continue;
    InternedString topology(c.topology_key);
    const InternId key = topology.id();
    spread_.push_back({&c, std::move(topology), key});
    CompiledSelector& sel = selectors.emplace_back(c.selector, c.selector_null);
    if (sel.valid) {
      for (const auto& k : c.match_label_keys) {
        if (const std::string* v = pod.labels.Find(k))
          sel.match_labels.emplace_back(FindInternId(k), FindInternId(*v));
      }
    }
    spread_.back().self_match = sel.Matches(pod.labels);
  }
  if (spread_.empty()) return;
  const size_t n_constraints = spread_.size();
  // Per node and constraint: counted (eligible) or not.
  std::vector<char> eligible(nodes.size() * n_constraints, 0);
  for (size_t i = 0; i < nodes.size(); ++i) {
    const bool all_keys = std::ranges::all_of(
        spread_, [&](const Spread& s) { return nodes[i].labels.FindId(s.key) != kNoIntern; });
    if (!all_keys) continue;
    std::optional<bool> affinity_ok, taints_fine;
    for (size_t c = 0; c < n_constraints; ++c) {
      const TopologySpreadConstraint& tsc = *spread_[c].constraint;
      if (tsc.honor_node_affinity) {
        if (!affinity_ok) affinity_ok = node_affinity_ok(i);
        if (!*affinity_ok) continue;
      }
      if (tsc.honor_node_taints) {
        if (!taints_fine) taints_fine = taints_ok(i);
        if (!*taints_fine) continue;
      }
      eligible[i * n_constraints + c] = 1;
    }
  }
  std::vector<std::unordered_map<InternId, int64_t>> per_domain(n_constraints);
  for (size_t i = 0; i < nodes.size(); ++i) {
    for (size_t c = 0; c < n_constraints; ++c) {
      if (eligible[i * n_constraints + c]) per_domain[c][nodes[i].labels.FindId(spread_[c].key)];
    }
  }
  for (size_t bi = 0; bi < bound.size(); ++bi) {
    const BoundPod& b = bound[bi];
    if (b.deleting || b.ns != pod.ns) continue;
    const NodeInfo* node = node_of(b);
    if (node == nullptr) continue;
    const auto i = static_cast<size_t>(node - nodes.data());
    for (size_t c = 0; c < n_constraints; ++c) {
      if (!eligible[i * n_constraints + c] || selectors[c].Empty()) continue;
      if (selectors[c].MayMissLabels(b)) cut_label_pods_.push_back(bi);
      if (!selectors[c].Matches(b.labels)) continue;
      ++per_domain[c][node->labels.FindId(spread_[c].key)];
    }
  }
  for (size_t c = 0; c < n_constraints; ++c) {
    Spread& s = spread_[c];
    s.domains = per_domain[c].size();
    if (s.FewerThanMinDomains()) {
      s.min_match = 0;
    } else {
      s.min_match = INT32_MAX;  // no domain at all (minDomains 0 passes validation only)
      for (const auto& [v, n] : per_domain[c]) s.min_match = std::min(s.min_match, n);
    }
  }
  spread_counts_.assign(nodes.size() * n_constraints, -1);
  for (size_t i = 0; i < nodes.size(); ++i) {
    for (size_t c = 0; c < n_constraints; ++c) {
      const InternId v = nodes[i].labels.FindId(spread_[c].key);
      if (v == kNoIntern) continue;
      auto it = per_domain[c].find(v);
      spread_counts_[i * n_constraints + c] = it == per_domain[c].end() ? 0 : it->second;
    }
  }
}

bool PodRules::AffinityTermHasPod(const CompiledPodTerm& t, InternId value) const {
  return Has(affinity_domains_, t.topology_key, value);
}

uint8_t PodRules::Evaluate(size_t i) const {
  const Labels& labels = nodes_[i].labels;
  uint8_t out = 0;
  for (const auto& [key, value] : blocked_) {
    if (labels.FindId(key) == value) {
      out |= kOthersAntiAffinity;
      break;
    }
  }
  if (!affinity_.empty()) {
    bool keys = true, pods = true;
    for (const auto& t : affinity_) {
      const InternId v = labels.FindId(t.topology_key);
      if (v == kNoIntern) {
        keys = false;
        break;
      }
      if (!AffinityTermHasPod(t, v)) pods = false;
    }
    if (!keys || (!pods && !(affinity_domains_.empty() && self_matches_affinity_)))
      out |= kOwnPodAffinity;
  }
  for (size_t c = 0; c < spread_.size(); ++c) {
    const int64_t count = SpreadCount(i, c);
    const Spread& s = spread_[c];
    if (count < 0 || count + (s.self_match ? 1 : 0) - s.min_match > s.constraint->max_skew) {
      out |= kTopologySpread;
      break;
    }
  }
  return out;
}

std::vector<std::string> PodRules::OthersAntiAffinityTexts(size_t i) const {
  std::vector<std::string> out;
  const Labels& labels = nodes_[i].labels;
  // Pods not named: counted per topology key, each pod once (it may have several terms).
  std::vector<std::pair<std::string_view, size_t>> unnamed;  // topology key, pod
  for (const auto& b : blockers_) {
    if (labels.FindId(b.domain.first) != b.domain.second) continue;
    if (b.who.empty()) {
      unnamed.emplace_back(b.topology_key, b.pod);
      continue;
    }
    std::string text =
        "pod " + b.who + "'s anti-affinity (topologyKey " + b.topology_key + ") excludes it";
    if (std::ranges::find(out, text) == out.end()) out.push_back(std::move(text));
  }
  std::ranges::sort(unnamed);
  unnamed.erase(std::ranges::unique(unnamed).begin(), unnamed.end());
  for (size_t at = 0; at < unnamed.size();) {
    const std::string_view key = unnamed[at].first;
    size_t n = 0;
    for (; at < unnamed.size() && unnamed[at].first == key; ++at) ++n;
    out.push_back("the anti-affinity of " + std::to_string(n) + (n == 1 ? " pod" : " pods") +
                  " in other namespaces (topologyKey " + std::string(key) + ") excludes it");
  }
  return out;
}

std::vector<std::string> PodRules::OwnPodAffinityTexts(size_t i) const {
  std::vector<std::string> out;
  if ((Evaluate(i) & kOwnPodAffinity) == 0) return out;
  const Labels& labels = nodes_[i].labels;
  for (const auto& t : affinity_) {
    const std::string head = "VM's own pod affinity (topologyKey " + t.term->topology_key +
                             ", selector " + SelectorText(t.term->selector, t.term->selector_null) +
                             ")";
    const InternId v = labels.FindId(t.topology_key);
    if (v == kNoIntern) {
      out.push_back(head + ": the node has no " + t.term->topology_key + " label");
    } else if (!AffinityTermHasPod(t, v)) {
      out.push_back(head + " has no matching pod there" +
                    (affinity_.size() > 1 ? " (a pod counts only if it matches all " +
                                                std::to_string(affinity_.size()) + " terms)"
                                          : std::string()));
    }
  }
  return out;
}

std::vector<std::string> PodRules::TopologySpreadTexts(size_t i) const {
  std::vector<std::string> out;
  for (size_t c = 0; c < spread_.size(); ++c) {
    const Spread& s = spread_[c];
    const TopologySpreadConstraint& tsc = *s.constraint;
    const std::string head = "topology spread (" + tsc.topology_key + ", maxSkew " +
                             std::to_string(tsc.max_skew) + "): ";
    const int64_t count = SpreadCount(i, c);
    if (count < 0) {
      out.push_back(head + "the node has no " + tsc.topology_key + " label");
      continue;
    }
    if (count + (s.self_match ? 1 : 0) - s.min_match <= tsc.max_skew) continue;
    std::string text = head + Pods(count) + " there";
    if (s.self_match) text += " (" + std::to_string(count + 1) + " with the VM's)";
    if (s.FewerThanMinDomains()) {
      text += ", fewer domains (" + std::to_string(s.domains) + ") than minDomains " +
              std::to_string(tsc.min_domains) + " count as 0 in the emptiest";
    } else {
      text += ", " + std::to_string(s.min_match) + " in the emptiest domain";
    }
    out.push_back(std::move(text));
  }
  return out;
}

}  // namespace kmt::api
