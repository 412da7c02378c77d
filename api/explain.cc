#include "api/explain.h"

#include <algorithm>
#include <iterator>
#include <optional>
#include <unordered_map>

#include "api/compiled_selector.h"
#include "api/label_requirement.h"
#include "api/names.h"
#include "api/node_match.h"
#include "api/pod_rules.h"
#include "api/pod_volumes.h"
#include "api/quantity.h"

namespace kmt::api {
namespace {

// Keys of the taints the node lifecycle controller uses for cordon and readiness
// (k8s.io/api/core/v1 well_known_taints.go); they are reported as "cordoned" / "not Ready".
constexpr std::string_view kTaintUnschedulable = "node.kubernetes.io/unschedulable";
constexpr std::string_view kTaintNotReady = "node.kubernetes.io/not-ready";
constexpr std::string_view kVmRunsThere = "the VM already runs there";
constexpr std::string_view kTaintUnreachable = "node.kubernetes.io/unreachable";
constexpr std::string_view kHostnameLabel = "kubernetes.io/hostname";

struct CompiledTerm {
  const NodeSelectorTerm* source;
  std::vector<CompiledExpr> exprs;
  // False for a PV's node affinity: CheckNodeAffinity matches a node built from the labels
  // alone, so matchFields see a node without a name (api/node_match.h).
  bool by_name = true;

  explicit CompiledTerm(const NodeSelectorTerm& t, bool by_name = true)
      : source(&t), by_name(by_name) {
    for (const auto& r : t.match_expressions) exprs.emplace_back(r);
  }
  std::string_view Name(const NodeInfo& node) const {
    return by_name ? std::string_view(node.name) : std::string_view();
  }
  bool Matches(const NodeInfo& node) const {
    if (source->empty()) return false;
    for (const auto& e : exprs) {
      if (!e.Matches(node.labels)) return false;
    }
    for (const auto& f : source->match_fields) {
      if (!FieldRequirementMatchesNode(f, Name(node))) return false;
    }
    return true;
  }
  // The requirements that fail on `node`, as text (cold path).
  std::string Failing(const NodeInfo& node) const {
    if (source->empty()) return "(empty term)";
    std::string s;
    for (size_t i = 0; i < exprs.size(); ++i) {
      if (exprs[i].Matches(node.labels)) continue;
      if (!s.empty()) s += ", ";
      s += ToString(source->match_expressions[i]);
    }
    for (const auto& f : source->match_fields) {
      if (FieldRequirementMatchesNode(f, Name(node))) continue;
      if (!s.empty()) s += ", ";
      s += ToString(f);
    }
    return s;
  }
};

struct CompiledToleration {
  bool any_key;  // empty key
  const std::string* key;
  bool exists;  // operator Exists
  bool valid_op;
  const std::string* value;
  std::optional<TaintEffect> effect;  // nullopt: every effect

  bool Tolerates(const std::string* taint_key, const std::string* taint_value,
                 TaintEffect taint_effect) const {
    if (effect && *effect != taint_effect) return false;
    if (!any_key && key != taint_key) return false;
    if (!valid_op) return false;
    return exists || value == taint_value;
  }
};

struct AntiAffinity {
  const PodAffinityTerm* term;
  InternedString topology;  // holds topology_key's id
  InternId topology_key;
  std::vector<InternId> domains;  // topology values holding a matching pod
  bool is_vm;                     // selects the VM's own pods (created-by)
};

// A bound claim's PV, compiled (api/pod_volumes.h).
struct CompiledVolume {
  std::string ref;                                    // "PersistentVolume pv-1 (claim ns/c)"
  std::optional<std::vector<CompiledTerm>> affinity;  // nullopt: no required node affinity
  struct Zone {
    const ZoneLabel* label;
    InternId key, ga_key;  // ga_key: the node is also looked up by the GA key (== key if GA)
    std::vector<InternId> values;
  };
  std::vector<Zone> zones;

  bool AffinityExcludes(const NodeInfo& n) const {
    if (!affinity) return false;
    for (const auto& t : *affinity) {
      if (t.Matches(n)) return false;
    }
    return true;
  }
  // VolumeZone: the node's value for the key (else the GA key) is one of the PV's.
  static InternId NodeValue(const Zone& z, const NodeInfo& n) {
    const InternId v = n.labels.FindId(z.key);
    return v != kNoIntern ? v : n.labels.FindId(z.ga_key);
  }
  static bool ZoneExcludes(const Zone& z, const NodeInfo& n) {
    const InternId v = NodeValue(z, n);
    return v == kNoIntern || std::ranges::find(z.values, v) == z.values.end();
  }
};

std::string ClaimRef(const TargetPod& pod, const PodClaim& c) { return pod.ns + "/" + c.name; }

// The text of a claim the scheduler refuses on every node, or "" for one it checks per node
// (or not at all).
std::string ClaimText(const TargetPod& pod, const PodClaim& c) {
  const std::string claim = "claim " + ClaimRef(pod, c);
  switch (c.resolution.state) {
    case ClaimState::kMissing:
      return claim + " not found";
    case ClaimState::kLost:
      return c.resolution.volume.empty()
                 ? claim + " is Lost"
                 : claim + " lost its PersistentVolume " + c.resolution.volume;
    case ClaimState::kDeleting:
      return claim + " is being deleted";
    case ClaimState::kNotBound:
      return claim + " is not bound";
    case ClaimState::kVolumeMissing:
      return "PersistentVolume " + c.resolution.volume + " (" + claim + ") not found";
    case ClaimState::kNotLookedUp:
    case ClaimState::kWaitForFirstConsumer:
    case ClaimState::kVolumeNotClaimed:
    case ClaimState::kBound:
      break;
  }
  return "";
}

std::string JoinValues(const std::vector<std::string>& values) {
  std::string s;
  for (const auto& v : values) s += (s.empty() ? "" : ", ") + v;
  return s;
}

bool IsByteResource(std::string_view name) {
  return name == "ephemeral-storage" || name.starts_with("hugepages-");
}

// The note on bound pods whose labels the cache cut where the pod's selectors needed them:
// "" when none. Pods of other namespaces are counted, not named, unless `disclosure` says.
std::string LabelsNoteText(const TargetPod& pod, std::span<const BoundPod> bound,
                           std::vector<size_t> cut, Disclosure disclosure) {
  if (cut.empty()) return "";
  std::ranges::sort(cut);
  cut.erase(std::ranges::unique(cut).begin(), cut.end());
  std::vector<std::string> named;
  size_t others = 0;
  for (size_t i : cut) {
    const BoundPod& b = bound[i];
    if (disclosure == Disclosure::kEveryNamespace || b.ns == pod.ns) {
      named.push_back(b.ns + "/" + b.name);
    } else {
      ++others;
    }
  }
  std::ranges::sort(named);
  std::string who = ListFirst(named, 3);
  if (others > 0) {
    who += (who.empty() ? "" : " and ") + std::to_string(others) +
           (others == 1 ? " pod" : " pods") + " in other namespaces";
  }
  return "labels truncated: " + who + (cut.size() == 1 ? " carries" : " carry") +
         " more labels than the operator caches (" + std::to_string(kBoundPodLabelBytes / 1024) +
         " KiB a pod), and the VM's pod affinity, anti-affinity or spread selectors name keys "
         "left out, counted here as absent";
}

}  // namespace

struct Explainer::Impl {
  const TargetPod* pod;
  std::optional<CompiledTerm> added;
  const NodeSelectorTerm* added_term = nullptr;  // as given, for the names it pins
  std::string source_name;
  std::vector<CompiledToleration> tolerations;
  std::vector<std::pair<InternId, InternId>> node_selector;
  std::vector<std::pair<std::string, std::string>> node_selector_text;  // same order
  std::optional<std::vector<CompiledTerm>> affinity;  // nullopt: no required affinity
  std::vector<AntiAffinity> anti;
  bool tolerates_unschedulable = false;
  bool tolerates_not_ready = false;
  bool tolerates_unreachable = false;
  InternedString taint_unschedulable;
  InternedString taint_not_ready;
  InternedString taint_unreachable;
  // Pod requests: scalars the pod asks for (> 0).
  std::vector<std::pair<const std::string*, int64_t>> scalars;
  // Per node, in `nodes` order: used cpu, memory, pods, then each of `scalars`.
  std::vector<int64_t> used;
  size_t stride = 0;
  std::optional<PodRules> rules;  // inter-pod affinity and topology spread
  // Volumes: the texts of claims refused on every node, and the bound claims' PVs.
  std::vector<std::string> claim_texts;
  std::vector<CompiledVolume> volumes;
  bool any_zone = false;                                    // some PV has zone labels
  InternId topology_keys[std::size(kTopologyLabels)] = {};  // VolumeZone's four keys
  // Bound pods whose cut labels a selector of the pod needed (LabelsNote), rendered once.
  std::string labels_note;

  bool Tolerated(const std::string* key, const std::string* value, TaintEffect effect) const {
    for (const auto& t : tolerations) {
      if (t.Tolerates(key, value, effect)) return true;
    }
    return false;
  }
  bool NotReady(const NodeInfo& n) const {
    if (n.ready == ConditionStatus::kTrue) return false;
    // The lifecycle controller taints such nodes not-ready / unreachable (NoSchedule).
    return n.ready == ConditionStatus::kFalse ? !tolerates_not_ready : !tolerates_unreachable;
  }
  // A NoSchedule/NoExecute taint not tolerated and not already reported as cordon/readiness.
  bool TaintBlocks(const Taint& t, bool cordoned, bool not_ready) const {
    if (t.effect != TaintEffect::kNoSchedule && t.effect != TaintEffect::kNoExecute) return false;
    if (cordoned && t.key == taint_unschedulable) return false;
    if (not_ready && (t.key == taint_not_ready || t.key == taint_unreachable)) return false;
    return !Tolerated(t.key.get(), t.value.get(), t.effect);
  }
  // The pod's required node affinity as the scheduler sees it (with the added term ANDed
  // in): nodeSelector, own required affinity, added term.
  bool RequiredNodeAffinityMatches(const NodeInfo& n) const {
    for (const auto& [k, v] : node_selector) {
      if (v == kNoIntern || n.labels.FindId(k) != v) return false;
    }
    return !AffinityExcludes(n) && (!added || added->Matches(n));
  }
  // Every NoSchedule/NoExecute taint tolerated (PodTopologySpread's nodeTaintsPolicy Honor).
  bool TaintsTolerated(const NodeInfo& n) const {
    for (const auto& t : n.taints) {
      if (t.effect != TaintEffect::kNoSchedule && t.effect != TaintEffect::kNoExecute) continue;
      if (!Tolerated(t.key.get(), t.value.get(), t.effect)) return false;
    }
    return true;
  }
  bool AffinityExcludes(const NodeInfo& n) const {
    if (!affinity) return false;
    for (const auto& t : *affinity) {
      if (t.Matches(n)) return false;
    }
    return true;
  }
  // The VM itself is there: its node, or its own pods by hostname anti-affinity.
  static bool IsVmHostTerm(const AntiAffinity& a) {
    return a.is_vm && InternText(a.topology_key) == kHostnameLabel;
  }
  // A pod the anti-affinity term selects runs in node n's topology domain.
  static bool InDomain(const AntiAffinity& a, const NodeInfo& n) {
    const InternId v = n.labels.FindId(a.topology_key);
    return v != kNoIntern && std::ranges::find(a.domains, v) != a.domains.end();
  }
  bool IsSource(const NodeInfo& n) const { return !source_name.empty() && n.name == source_name; }
  bool VmThere(const NodeInfo& n) const {
    return IsSource(n) || std::ranges::any_of(anti, [&](const AntiAffinity& a) {
             return IsVmHostTerm(a) && InDomain(a, n);
           });
  }
  bool AlreadyThere(const NodeInfo& n) const {
    return IsSource(n) ||
           std::ranges::any_of(anti, [&](const AntiAffinity& a) { return InDomain(a, n); });
  }
  // VolumeZone passes a node without any of the four topology labels.
  bool HasTopology(const NodeInfo& n) const {
    for (InternId k : topology_keys) {
      if (n.labels.FindId(k) != kNoIntern) return true;
    }
    return false;
  }
  bool VolumeAffinityExcludes(const NodeInfo& n) const {
    return std::ranges::any_of(volumes,
                               [&](const CompiledVolume& v) { return v.AffinityExcludes(n); });
  }
  bool VolumeZoneExcludes(const NodeInfo& n) const {
    if (!any_zone || !HasTopology(n)) return false;
    for (const auto& v : volumes) {
      for (const auto& z : v.zones) {
        if (CompiledVolume::ZoneExcludes(z, n)) return true;
      }
    }
    return false;
  }
  // The texts of kVolumeNodeAffinity for node n, one per PV that excludes it.
  std::vector<std::string> VolumeAffinityTexts(const NodeInfo& n) const {
    std::vector<std::string> out;
    for (const auto& v : volumes) {
      if (!v.AffinityExcludes(n)) continue;
      if (v.affinity->empty()) {
        out.push_back(v.ref + " node affinity has no terms");
        continue;
      }
      std::string text;
      for (const auto& t : *v.affinity) {
        if (!text.empty()) text += " or ";
        text += "`" + t.Failing(n) + "`";
      }
      out.push_back(v.ref + " node affinity " + text + " excludes it");
    }
    return out;
  }
  // The text of kOwnAffinityExcludes for node n (which it excludes).
  std::string OwnAffinityText(const NodeInfo& n) const {
    if (affinity->empty()) return "VM's own required node affinity has no terms";
    std::string text;
    for (const auto& t : *affinity) {
      if (!text.empty()) text += " or ";
      text += "`" + t.Failing(n) + "`";
    }
    return "VM's own affinity " + text + " excludes it";
  }
};

Explainer::Explainer(const TargetPod& pod, const NodeSelectorTerm* added_term,
                     std::string_view source_node, std::span<const NodeInfo> nodes,
                     std::span<const BoundPod> bound, std::span<const NamespaceInfo> namespaces,
                     Disclosure disclosure)
    : nodes_(nodes) {
  auto impl = std::make_shared<Impl>();
  impl->pod = &pod;
  if (added_term != nullptr) impl->added.emplace(*added_term);
  impl->added_term = added_term;
  impl->source_name = std::string(source_node);
  impl->taint_unschedulable = Intern(kTaintUnschedulable);
  impl->taint_not_ready = Intern(kTaintNotReady);
  impl->taint_unreachable = Intern(kTaintUnreachable);
  for (const auto& t : pod.tolerations()) {
    CompiledToleration c;
    const std::string& op = t.Op();
    c.any_key = t.Key().empty();
    c.key = FindInterned(t.Key());
    c.exists = op == "Exists";
    c.valid_op = op.empty() || op == "Equal" || op == "Exists";
    c.value = FindInterned(t.Value());
    if (!t.Effect().empty()) c.effect = ParseTaintEffect(t.Effect());
    impl->tolerations.push_back(c);
  }
  impl->tolerates_unschedulable =
      impl->Tolerated(impl->taint_unschedulable.get(), Intern("").get(), TaintEffect::kNoSchedule);
  impl->tolerates_not_ready =
      impl->Tolerated(impl->taint_not_ready.get(), Intern("").get(), TaintEffect::kNoSchedule);
  impl->tolerates_unreachable =
      impl->Tolerated(impl->taint_unreachable.get(), Intern("").get(), TaintEffect::kNoSchedule);
  impl->node_selector_text = pod.node_selector().Sorted();
  for (const auto& [k, v] : impl->node_selector_text) {
    impl->node_selector.emplace_back(FindInternId(k), FindInternId(v));
  }
  if (pod.required_affinity()) {
    impl->affinity.emplace();
    for (const auto& t : pod.required_affinity()->terms) impl->affinity->emplace_back(t);
  }

  // Nodes by name, for bound pods and anti-affinity domains.
  std::unordered_map<std::string_view, size_t> index;
  index.reserve(nodes.size());
  for (size_t i = 0; i < nodes.size(); ++i) index.emplace(nodes[i].name, i);

  const NamespaceIndex ns_index(namespaces);
  std::vector<size_t> cut;  // bound pods whose cut labels a selector named (labels_note)
  for (const auto& term : pod.anti_affinity) {
    InternedString topology(term.topology_key);
    const InternId topology_id = topology.id();
    AntiAffinity a{&term, std::move(topology), topology_id, {}, false};
    const CompiledPodTerm compiled(term, pod.ns);
    const std::string* vmi = term.selector.match_labels.Find(kLabelCreatedBy);
    a.is_vm = vmi != nullptr && *vmi == pod.created_by();
    for (size_t bi = 0; bi < bound.size(); ++bi) {
      const BoundPod& b = bound[bi];
      if (b.terminal || b.node_name.empty()) continue;
      const Labels* ns_labels = ns_index.Find(b.ns);
      if (compiled.MayMissLabels(b, ns_labels)) cut.push_back(bi);
      if (!compiled.Matches(b.ns, b.labels, ns_labels)) continue;
      auto it = index.find(b.node_name);
      if (it == index.end()) continue;
      const InternId domain = nodes[it->second].labels.FindId(a.topology_key);
      if (domain != kNoIntern && std::ranges::find(a.domains, domain) == a.domains.end()) {
        a.domains.push_back(domain);
      }
    }
    impl->anti.push_back(std::move(a));
  }

  for (const PodClaim& c : pod.claims) {
    if (std::string text = ClaimText(pod, c); !text.empty()) {
      impl->claim_texts.push_back(std::move(text));
      continue;
    }
    if (c.resolution.state != ClaimState::kBound) continue;  // not checked
    CompiledVolume v;
    v.ref = "PersistentVolume " + c.resolution.volume + " (claim " + ClaimRef(pod, c) + ")";
    if (c.resolution.node_affinity) {
      v.affinity.emplace();
      for (const auto& t : c.resolution.node_affinity->terms) v.affinity->emplace_back(t, false);
    }
    for (const ZoneLabel& z : c.resolution.zones) {
      CompiledVolume::Zone cz{&z, FindInternId(z.key), FindInternId(GaTopologyKey(z.key)), {}};
      for (const auto& value : z.values) cz.values.push_back(FindInternId(value));
      v.zones.push_back(std::move(cz));
    }
    impl->any_zone = impl->any_zone || !v.zones.empty();
    impl->volumes.push_back(std::move(v));
  }
  for (size_t k = 0; k < std::size(kTopologyLabels); ++k) {
    impl->topology_keys[k] = FindInternId(kTopologyLabels[k]);
  }

  for (const auto& [name, amount] : pod.requests().scalar) {
    if (amount > 0) impl->scalars.emplace_back(name.get(), amount);
  }
  impl->stride = 3 + impl->scalars.size();
  impl->used.assign(nodes.size() * impl->stride, 0);
  for (const auto& b : bound) {
    if (b.terminal) continue;
    auto it = index.find(b.node_name);
    if (it == index.end()) continue;
    int64_t* u = &impl->used[it->second * impl->stride];
    u[0] += b.requests.cpu_milli;
    u[1] += b.requests.memory_bytes;
    u[2] += 1;
    for (size_t s = 0; s < impl->scalars.size(); ++s)
      u[3 + s] += b.requests.Scalar(impl->scalars[s].first);
  }
  const Impl& m = *impl;
  impl->rules.emplace(
      pod, nodes, bound, namespaces,
      [&](size_t i) { return m.RequiredNodeAffinityMatches(nodes[i]); },
      [&](size_t i) { return m.TaintsTolerated(nodes[i]); },
      disclosure == Disclosure::kEveryNamespace);
  const auto& rule_cut = impl->rules->CutLabelPods();
  cut.insert(cut.end(), rule_cut.begin(), rule_cut.end());
  impl->labels_note = LabelsNoteText(pod, bound, cut, disclosure);
  impl_ = std::move(impl);
}

ReasonMask Explainer::Evaluate(size_t i) const {
  const Impl& m = *impl_;
  const NodeInfo& n = nodes_[i];
  ReasonMask mask = 0;
  if (m.added && !m.added->Matches(n)) mask |= Bit(ReasonKind::kExcludedByAddedTerm);
  const bool cordoned = n.unschedulable && !m.tolerates_unschedulable;
  if (cordoned) mask |= Bit(ReasonKind::kCordoned);
  const bool not_ready = m.NotReady(n);
  if (not_ready) mask |= Bit(ReasonKind::kNotReady);
  for (const auto& t : n.taints) {
    if (m.TaintBlocks(t, n.unschedulable, not_ready)) {
      mask |= Bit(ReasonKind::kTaintNotTolerated);
      break;
    }
  }
  for (const auto& [k, v] : m.node_selector) {
    if (v == kNoIntern || n.labels.FindId(k) != v) {
      mask |= Bit(ReasonKind::kNodeSelectorMismatch);
      break;
    }
  }
  if (m.AffinityExcludes(n)) mask |= Bit(ReasonKind::kOwnAffinityExcludes);
  if (m.AlreadyThere(n)) mask |= Bit(ReasonKind::kAlreadyRunsThere);
  const int64_t* u = &m.used[i * m.stride];
  const Resources& req = m.pod->requests();
  const Resources& alloc = n.allocatable;
  bool short_of = req.cpu_milli > alloc.cpu_milli - u[0] ||
                  req.memory_bytes > alloc.memory_bytes - u[1] || 1 > alloc.pods - u[2];
  for (size_t s = 0; !short_of && s < m.scalars.size(); ++s) {
    short_of = m.scalars[s].second > alloc.Scalar(m.scalars[s].first) - u[3 + s];
  }
  if (short_of) mask |= Bit(ReasonKind::kInsufficientResource);
  const uint8_t rules = m.rules->Evaluate(i);
  if (rules & PodRules::kOthersAntiAffinity) mask |= Bit(ReasonKind::kExistingPodAntiAffinity);
  if (rules & PodRules::kOwnPodAffinity) mask |= Bit(ReasonKind::kOwnPodAffinity);
  if (rules & PodRules::kTopologySpread) mask |= Bit(ReasonKind::kTopologySpread);
  if (!m.claim_texts.empty()) mask |= Bit(ReasonKind::kVolumeClaim);
  if (m.VolumeAffinityExcludes(n)) mask |= Bit(ReasonKind::kVolumeNodeAffinity);
  if (m.VolumeZoneExcludes(n)) mask |= Bit(ReasonKind::kVolumeZone);
  return mask;
}

NodeExplanation Explainer::Explain(size_t i) const {
  const Impl& m = *impl_;
  const NodeInfo& n = nodes_[i];
  NodeExplanation out;
  out.node = n.name;
  const ReasonMask mask = Evaluate(i);
  out.allowed_by_term = (mask & Bit(ReasonKind::kExcludedByAddedTerm)) == 0;
  auto add = [&](ReasonKind k, std::string text) { out.reasons.push_back({k, std::move(text)}); };

  if (!out.allowed_by_term)
    add(ReasonKind::kExcludedByAddedTerm,
        "excluded by the added term `" + m.added->Failing(n) + "`");
  if (mask & Bit(ReasonKind::kCordoned)) add(ReasonKind::kCordoned, "cordoned");
  const bool not_ready = mask & Bit(ReasonKind::kNotReady);
  if (not_ready) {
    add(ReasonKind::kNotReady,
        n.ready == ConditionStatus::kFalse ? "not Ready" : "not Ready (status Unknown)");
  }
  for (const auto& t : n.taints) {
    if (!m.TaintBlocks(t, n.unschedulable, not_ready)) continue;
    std::string text = "taint " + *t.key;
    if (!t.value->empty()) text += "=" + *t.value;
    text += ":" + std::string(ToString(t.effect)) + " not tolerated";
    add(ReasonKind::kTaintNotTolerated, std::move(text));
  }
  for (size_t k = 0; k < m.node_selector.size(); ++k) {
    const auto& [key, value] = m.node_selector[k];
    if (value != kNoIntern && n.labels.FindId(key) == value) continue;
    const auto& [ktext, vtext] = m.node_selector_text[k];
    std::string text = "VM's own nodeSelector `";
    text += ktext;
    text += '=';
    text += vtext;
    text += "` not matched";
    add(ReasonKind::kNodeSelectorMismatch, std::move(text));
  }
  if (mask & Bit(ReasonKind::kOwnAffinityExcludes)) {
    add(ReasonKind::kOwnAffinityExcludes, m.OwnAffinityText(n));
  }
  if (mask & Bit(ReasonKind::kAlreadyRunsThere)) {
    std::string other_key;
    for (const auto& a : m.anti) {
      if (!Impl::IsVmHostTerm(a) && Impl::InDomain(a, n)) {
        other_key = InternText(a.topology_key);
        break;
      }
    }
    if (m.VmThere(n)) add(ReasonKind::kAlreadyRunsThere, std::string(kVmRunsThere));
    if (!other_key.empty()) {
      add(ReasonKind::kAlreadyRunsThere,
          "VM's own pod anti-affinity (topologyKey " + other_key + ") excludes it");
    }
  }
  if (mask & Bit(ReasonKind::kInsufficientResource)) {
    const int64_t* u = &m.used[i * m.stride];
    const Resources& req = m.pod->requests();
    const Resources& alloc = n.allocatable;
    if (req.cpu_milli > alloc.cpu_milli - u[0]) {
      add(ReasonKind::kInsufficientResource, "insufficient cpu (requested " +
                                                 FormatMilli(req.cpu_milli) + ", free " +
                                                 FormatMilli(alloc.cpu_milli - u[0]) + ")");
    }
    if (req.memory_bytes > alloc.memory_bytes - u[1]) {
      add(ReasonKind::kInsufficientResource, "insufficient memory (requested " +
                                                 FormatBytes(req.memory_bytes) + ", free " +
                                                 FormatBytes(alloc.memory_bytes - u[1]) + ")");
    }
    if (1 > alloc.pods - u[2]) {
      add(ReasonKind::kInsufficientResource,
          "too many pods (" + std::to_string(u[2]) + " of " + std::to_string(alloc.pods) + ")");
    }
    for (size_t s = 0; s < m.scalars.size(); ++s) {
      const auto& [name, amount] = m.scalars[s];
      const int64_t free = alloc.Scalar(name) - u[3 + s];
      if (amount <= free) continue;
      const bool bytes = IsByteResource(*name);
      add(ReasonKind::kInsufficientResource,
          "insufficient " + *name + " (requested " +
              (bytes ? FormatBytes(amount) : std::to_string(amount)) + ", free " +
              (bytes ? FormatBytes(free) : std::to_string(free)) + ")");
    }
  }
  if (mask & Bit(ReasonKind::kExistingPodAntiAffinity)) {
    for (auto& t : m.rules->OthersAntiAffinityTexts(i))
      add(ReasonKind::kExistingPodAntiAffinity, std::move(t));
  }
  if (mask & Bit(ReasonKind::kOwnPodAffinity)) {
    for (auto& t : m.rules->OwnPodAffinityTexts(i)) add(ReasonKind::kOwnPodAffinity, std::move(t));
  }
  if (mask & Bit(ReasonKind::kTopologySpread)) {
    for (auto& t : m.rules->TopologySpreadTexts(i)) add(ReasonKind::kTopologySpread, std::move(t));
  }
  for (const auto& text : m.claim_texts) add(ReasonKind::kVolumeClaim, text);
  if (mask & Bit(ReasonKind::kVolumeNodeAffinity)) {
    for (auto& text : m.VolumeAffinityTexts(n))
      add(ReasonKind::kVolumeNodeAffinity, std::move(text));
  }
  if (mask & Bit(ReasonKind::kVolumeZone)) {
    for (const auto& v : m.volumes) {
      for (const auto& z : v.zones) {
        if (!CompiledVolume::ZoneExcludes(z, n)) continue;
        const InternId value = CompiledVolume::NodeValue(z, n);
        add(ReasonKind::kVolumeZone,
            v.ref + " is in " + z.label->key + " [" + JoinValues(z.label->values) + "], the node " +
                (value == kNoIntern ? "has no such label" : "in " + InternText(value)));
      }
    }
  }
  return out;
}

std::vector<NodeExplanation> Explainer::ExplainAll() const {
  std::vector<NodeExplanation> out;
  out.reserve(nodes_.size());
  for (size_t i = 0; i < nodes_.size(); ++i) out.push_back(Explain(i));
  std::ranges::sort(out, [](const auto& a, const auto& b) { return a.node < b.node; });
  return out;
}

namespace {

// "a: r1, r2; b: fits; ... and N more nodes" from the first nodes (sorted) and the total.
std::string FormatSummary(const std::vector<const NodeExplanation*>& shown, size_t total) {
  if (total == 0) return "no node matches the added term";
  std::string s;
  for (size_t i = 0; i < shown.size(); ++i) {
    if (i > 0) s += "; ";
    s += shown[i]->node + ": ";
    if (shown[i]->fits()) {
      s += "fits";
      continue;
    }
    for (size_t r = 0; r < shown[i]->reasons.size(); ++r) {
      if (r > 0) s += ", ";
      s += shown[i]->reasons[r].text;
    }
  }
  if (const size_t rest = total - shown.size(); rest > 0) {
    if (!shown.empty()) s += "; ";
    s += "... and " + std::to_string(rest) + (rest == 1 ? " more node" : " more nodes");
  }
  return s;
}

}  // namespace

bool WantsNamespaces(const TargetPod& pod, std::span<const BoundPod> bound) {
  auto any = [](const std::vector<PodAffinityTerm>& terms) {
    return std::ranges::any_of(
        terms, [](const PodAffinityTerm& t) { return t.namespace_selector.has_value(); });
  };
  return any(pod.anti_affinity) || any(pod.pod_affinity()) ||
         std::ranges::any_of(bound, [&](const BoundPod& b) { return any(b.anti_affinity); });
}

std::string ListFirst(const std::vector<std::string>& items, size_t shown) {
  std::string out;
  for (size_t i = 0; i < items.size() && i < shown; ++i) out += (i ? ", " : "") + items[i];
  if (items.size() > shown) out += " and " + std::to_string(items.size() - shown) + " more";
  return out;
}

std::string Explainer::Summarize(size_t max_nodes) const {
  std::vector<size_t> allowed;
  for (size_t i = 0; i < nodes_.size(); ++i) {
    if ((Evaluate(i) & Bit(ReasonKind::kExcludedByAddedTerm)) == 0) allowed.push_back(i);
  }
  const size_t shown = std::min(max_nodes, allowed.size());
  std::partial_sort(allowed.begin(), allowed.begin() + static_cast<std::ptrdiff_t>(shown),
                    allowed.end(),
                    [this](size_t a, size_t b) { return nodes_[a].name < nodes_[b].name; });
  std::vector<NodeExplanation> explained;
  explained.reserve(shown);
  for (size_t k = 0; k < shown; ++k) explained.push_back(Explain(allowed[k]));
  std::vector<const NodeExplanation*> ptrs;
  ptrs.reserve(explained.size());
  for (const auto& e : explained) ptrs.push_back(&e);
  std::string summary = FormatSummary(ptrs, allowed.size());
  if (!impl_->labels_note.empty()) summary += "; " + impl_->labels_note;
  return summary;
}

const std::string& Explainer::LabelsNote() const { return impl_->labels_note; }

std::optional<std::string> Explainer::WhyNeverFits(size_t max_nodes) const {
  const Impl& m = *impl_;
  if (!m.added_term) return std::nullopt;
  std::vector<size_t> allowed;
  for (size_t i = 0; i < nodes_.size(); ++i) {
    const ReasonMask mask = Evaluate(i);
    if (mask & Bit(ReasonKind::kExcludedByAddedTerm)) continue;
    const NodeInfo& n = nodes_[i];
    const bool own_affinity = (mask & Bit(ReasonKind::kOwnAffinityExcludes)) != 0;
    const bool volume = (mask & Bit(ReasonKind::kVolumeNodeAffinity)) != 0;
    if (!own_affinity && !volume && !m.VmThere(n)) return std::nullopt;  // might fit one day
    allowed.push_back(i);
  }
  if (allowed.empty()) {
    // Only a term that pins names stays empty for good (a label may be set any time).
    std::vector<std::string> names;
    for (const auto& r : m.added_term->match_fields) {
      if (r.key != "metadata.name" || r.op != "In") continue;
      names.insert(names.end(), r.values.begin(), r.values.end());
    }
    if (names.empty()) return std::nullopt;
    std::ranges::sort(names);
    names.erase(std::ranges::unique(names).begin(), names.end());
    return "the added term allows only nodes named " + ListFirst(names, max_nodes) +
           ", and no such node exists";
  }
  std::ranges::sort(allowed,
                    [this](size_t a, size_t b) { return nodes_[a].name < nodes_[b].name; });
  // Each shown node with only its permanent reasons, in Explain's order.
  std::vector<NodeExplanation> kept;
  for (size_t k = 0; k < allowed.size() && k < max_nodes; ++k) {
    const NodeInfo& n = nodes_[allowed[k]];
    NodeExplanation e;
    e.node = n.name;
    if (m.AffinityExcludes(n))
      e.reasons.push_back({ReasonKind::kOwnAffinityExcludes, m.OwnAffinityText(n)});
    if (m.VmThere(n))
      e.reasons.push_back({ReasonKind::kAlreadyRunsThere, std::string(kVmRunsThere)});
    for (auto& text : m.VolumeAffinityTexts(n))
      e.reasons.push_back({ReasonKind::kVolumeNodeAffinity, std::move(text)});
    kept.push_back(std::move(e));
  }
  std::vector<const NodeExplanation*> shown;
  shown.reserve(kept.size());
  for (const auto& e : kept) shown.push_back(&e);
  return "every node the added term allows is out for good: " +
         FormatSummary(shown, allowed.size());
}

}  // namespace kmt::api
