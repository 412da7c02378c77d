#include "api/projections.h"

#include <algorithm>
#include <climits>
#include <cstdint>

#include "api/added_term.h"
#include "api/names.h"
#include "api/policy.h"
#include "api/quantity.h"
#include "api/term_and.h"
#include "base/json.h"

namespace kmt::api {
namespace {

using json = nlohmann::json;

std::vector<NodeSelectorRequirement> LabelExpressions(const json& list) {
  std::vector<NodeSelectorRequirement> out;
  if (!list.is_array()) return out;
  for (const json& r : list) out.push_back(RequirementFromJsonLenient(r));
  return out;
}

LabelSelector Selector(const json& sel) {
  LabelSelector out;
  out.match_labels = Labels::FromJson(base::At(sel, "matchLabels"));
  out.match_expressions = LabelExpressions(base::At(sel, "matchExpressions"));
  return out;
}

std::vector<std::string> Strings(const json& list) {
  std::vector<std::string> out;
  if (!list.is_array()) return out;
  for (const json& s : list) {
    if (s.is_string()) out.push_back(s.get<std::string>());
  }
  return out;
}

// An integer field, nullopt when absent or of another type; one above INT64_MAX reads as
// INT64_MAX (every caller clamps further).
std::optional<int64_t> ClampedInt(const json& obj, std::string_view key) {
  const auto v = base::Int(obj, key);
  if (v.status() == base::Lookup::kOutOfRange) return INT64_MAX;
  return v.optional();
}

int32_t Clamp32(int64_t v) {
  return static_cast<int32_t>(std::clamp<int64_t>(v, INT32_MIN, INT32_MAX));
}

std::vector<PodAffinityTerm> AffinityTerms(const json& list) {
  std::vector<PodAffinityTerm> out;
  if (!list.is_array()) return out;
  for (const json& t : list) {
    if (!t.is_object()) continue;
    PodAffinityTerm term;
    const json& sel = base::At(t, "labelSelector");
    term.selector_null = !sel.is_object();
    term.selector = Selector(sel);
    term.topology_key = base::StringAt(t, "topologyKey");
    term.namespaces = Strings(base::At(t, "namespaces"));
    const json& ns_sel = base::At(t, "namespaceSelector");
    if (ns_sel.is_object()) term.namespace_selector = Selector(ns_sel);
    out.push_back(std::move(term));
  }
  out.shrink_to_fit();
  return out;
}

std::vector<TopologySpreadConstraint> SpreadConstraints(const json& list) {
  std::vector<TopologySpreadConstraint> out;
  if (!list.is_array()) return out;
  for (const json& c : list) {
    if (!c.is_object()) continue;
    TopologySpreadConstraint tsc;
    tsc.max_skew = Clamp32(ClampedInt(c, "maxSkew").value_or(0));
    tsc.topology_key = base::StringAt(c, "topologyKey");
    tsc.do_not_schedule = base::StringAt(c, "whenUnsatisfiable") == "DoNotSchedule";
    const json& sel = base::At(c, "labelSelector");
    tsc.selector_null = !sel.is_object();
    tsc.selector = Selector(sel);
    tsc.match_label_keys = Strings(base::At(c, "matchLabelKeys"));
    tsc.min_domains = Clamp32(ClampedInt(c, "minDomains").value_or(1));
    tsc.honor_node_affinity = base::StringAt(c, "nodeAffinityPolicy") != "Ignore";
    tsc.honor_node_taints = base::StringAt(c, "nodeTaintsPolicy") == "Honor";
    out.push_back(std::move(tsc));
  }
  return out;
}

const json& Condition(const json& status, std::string_view type) {
  const json& conditions = base::At(status, "conditions");
  static const json kNone;
  if (!conditions.is_array()) return kNone;
  for (const json& c : conditions) {
    if (base::StringAt(c, "type") == type) return c;
  }
  return kNone;
}

// The text of `j`, without spare capacity.
std::string Compact(const json& j) {
  std::string s = j.dump(-1, ' ', false, json::error_handler_t::replace);
  s.shrink_to_fit();
  return s;
}

// spec.schedulingGates as the webhook writes it: our gate alone.
const json& OurGateAlone() {
  static const json gates = json::array({{{"name", kSchedulingGate}}});
  return gates;
}

}  // namespace

bool IsTerminalPhase(std::string_view phase) {
  return phase == kPhaseSucceeded || phase == kPhaseFailed;
}

int64_t Resources::Scalar(const std::string* name) const {
  for (const auto& [n, v] : scalar) {
    if (n == name) return v;
  }
  return 0;
}

void Resources::AddScalar(const InternedString& name, int64_t amount) {
  for (auto& [n, v] : scalar) {
    if (n == name) {
      v += amount;
      return;
    }
  }
  scalar.emplace_back(name, amount);
  std::ranges::sort(scalar, [](const auto& a, const auto& b) {
    return std::less<const std::string*>{}(a.first.get(), b.first.get());
  });
}

void Resources::AddList(const json& list) {
  if (!list.is_object()) return;
  for (const auto& [name, amount] : list.items()) {
    if (!amount.is_string()) continue;
    const auto& text = amount.get_ref<const std::string&>();
    if (name == "cpu") {
      if (auto v = ParseQuantityMilli(text)) cpu_milli += *v;
    } else if (auto v = ParseQuantityValue(text)) {
      if (name == "memory") {
        memory_bytes += *v;
      } else if (name == "pods") {
        pods += *v;
      } else {
        AddScalar(Intern(name), *v);
      }
    }
  }
}

void Resources::MaxWith(const Resources& o) {
  cpu_milli = std::max(cpu_milli, o.cpu_milli);
  memory_bytes = std::max(memory_bytes, o.memory_bytes);
  pods = std::max(pods, o.pods);
  for (const auto& [n, v] : o.scalar) {
    const int64_t mine = Scalar(n.get());
    if (v > mine) AddScalar(n, v - mine);
  }
}

void Resources::Add(const Resources& o) {
  cpu_milli += o.cpu_milli;
  memory_bytes += o.memory_bytes;
  pods += o.pods;
  for (const auto& [n, v] : o.scalar) AddScalar(n, v);
}

Toleration Toleration::Make(std::string_view key, std::string_view op, std::string_view value,
                            std::string_view effect) {
  return {Intern(key), Intern(op), Intern(value), Intern(effect)};
}
const std::string& Toleration::Key() const { return key.str(); }
const std::string& Toleration::Op() const { return op.str(); }
const std::string& Toleration::Value() const { return value.str(); }
const std::string& Toleration::Effect() const { return effect.str(); }

std::string_view ToString(TaintEffect e) {
  switch (e) {
    case TaintEffect::kNoSchedule:
      return "NoSchedule";
    case TaintEffect::kPreferNoSchedule:
      return "PreferNoSchedule";
    case TaintEffect::kNoExecute:
      return "NoExecute";
    default:
      return "Unknown";
  }
}

TaintEffect ParseTaintEffect(std::string_view s) {
  if (s == "NoSchedule") return TaintEffect::kNoSchedule;
  if (s == "PreferNoSchedule") return TaintEffect::kPreferNoSchedule;
  if (s == "NoExecute") return TaintEffect::kNoExecute;
  return TaintEffect::kOther;
}

ConditionStatus ParseConditionStatus(std::string_view s) {
  if (s == "True") return ConditionStatus::kTrue;
  if (s == "False") return ConditionStatus::kFalse;
  return ConditionStatus::kUnknown;
}

Resources PodRequests(const json& pod) {
  const json& spec = base::At(pod, "spec");
  Resources total;
  const json& containers = base::At(spec, "containers");
  if (containers.is_array()) {
    for (const json& c : containers) total.AddList(base::At(base::At(c, "resources"), "requests"));
  }
  // Init containers run one at a time before the others, each next to the sidecars
  // (restartPolicy Always) started before it; sidecars keep running with the regular
  // containers. The pod needs the larger of the largest init step and the regular containers
  // plus every sidecar (resourcehelper.PodRequests). KubeVirt's guest-console-log is one.
  const json& inits = base::At(spec, "initContainers");
  if (inits.is_array()) {
    Resources sidecars, largest_init;
    for (const json& c : inits) {
      Resources one;
      one.AddList(base::At(base::At(c, "resources"), "requests"));
      const json& restart = base::At(c, "restartPolicy");
      if (restart.is_string() && restart.get<std::string>() == "Always") {
        total.Add(one);
        sidecars.Add(one);
        largest_init.MaxWith(sidecars);
      } else {
        one.Add(sidecars);
        largest_init.MaxWith(one);
      }
    }
    total.MaxWith(largest_init);
  }
  total.AddList(base::At(spec, "overhead"));
  total.pods = 1;
  return total;
}

std::vector<base::ObjectReads::Path> PodRequestsReads() {
  return {{"spec", "containers", "resources", "requests"},
          {"spec", "initContainers", "resources", "requests"},
          {"spec", "initContainers", "restartPolicy"},
          {"spec", "overhead"}};
}

NodeInfo NodeInfo::FromJson(const json& node) {
  NodeInfo n;
  const json& meta = base::At(node, "metadata");
  n.name = base::StringAt(meta, "name");
  n.labels = Labels::FromJson(base::At(meta, "labels"));
  const json& spec = base::At(node, "spec");
  const json& unschedulable = base::At(spec, "unschedulable");
  n.unschedulable = unschedulable.is_boolean() && unschedulable.get<bool>();
  const json& taints = base::At(spec, "taints");
  if (taints.is_array()) {
    for (const json& t : taints) {
      if (!t.is_object()) continue;
      n.taints.push_back({Intern(base::StringAt(t, "key")), Intern(base::StringAt(t, "value")),
                          ParseTaintEffect(base::StringAt(t, "effect"))});
    }
    n.taints.shrink_to_fit();
  }
  const json& status = base::At(node, "status");
  n.ready = ParseConditionStatus(base::StringAt(Condition(status, "Ready"), "status"));
  n.allocatable.AddList(base::At(status, "allocatable"));
  return n;
}

const base::ObjectReads& NodeInfo::Reads() {
  static const base::ObjectReads reads{
      {"metadata", "name"},
      {"metadata", "labels"},
      {"spec", "unschedulable"},
      {"spec", "taints", "key"},
      {"spec", "taints", "value"},
      {"spec", "taints", "effect"},
      {"status", "conditions", "type"},  // Condition(status, "Ready")
      {"status", "conditions", "status"},
      {"status", "allocatable"},
  };
  return reads;
}

TargetPod TargetPod::FromJson(const json& pod) {
  TargetPod p;
  const json& meta = base::At(pod, "metadata");
  p.ns = base::StringAt(meta, "namespace");
  p.name = base::StringAt(meta, "name");
  p.uid = base::StringAt(meta, "uid");
  p.resource_version = base::StringAt(meta, "resourceVersion");
  const json& labels = base::At(meta, "labels");
  p.migration_job_name = base::StringAt(base::At(meta, "annotations"), kAnnotationMigrationJobName);
  p.created = base::StringAt(meta, "creationTimestamp");

  const json& spec = base::At(pod, "spec");
  p.node_name = base::StringAt(spec, "nodeName");
  const json& gates = base::At(spec, "schedulingGates");
  if (gates.is_array()) {
    for (const json& g : gates) {
      if (base::StringAt(g, "name") == kSchedulingGate) p.has_gate = true;
    }
  }
  TargetPodShape shape;
  // The shape's content, as read: pods with equal sources have equal shapes.
  json key = json::array();
  const json& tolerations = base::At(spec, "tolerations");
  if (tolerations.is_array()) {
    for (const json& t : tolerations) {
      if (!t.is_object()) continue;
      const std::string t_key = base::StringAt(t, "key"), t_op = base::StringAt(t, "operator"),
                        t_value = base::StringAt(t, "value"),
                        t_effect = base::StringAt(t, "effect");
      shape.tolerations.push_back(Toleration::Make(t_key, t_op, t_value, t_effect));
      key.push_back({t_key, t_op, t_value, t_effect});
    }
  }
  const json& node_selector = base::At(spec, "nodeSelector");
  shape.node_selector = Labels::FromJson(node_selector);
  key.push_back(node_selector);
  shape.tolerations.shrink_to_fit();
  const json& affinity = base::At(spec, "affinity");
  const json& required = base::At(base::At(affinity, "nodeAffinity"),
                                  "requiredDuringSchedulingIgnoredDuringExecution");
  if (required.is_object()) shape.required_affinity = NodeSelectorFromJsonLenient(required);
  key.push_back(required.is_object() ? required : json());
  p.anti_affinity = AffinityTerms(base::At(base::At(affinity, "podAntiAffinity"),
                                           "requiredDuringSchedulingIgnoredDuringExecution"));
  const json& pod_affinity =
      base::At(base::At(affinity, "podAffinity"), "requiredDuringSchedulingIgnoredDuringExecution");
  shape.pod_affinity = AffinityTerms(pod_affinity);
  key.push_back(pod_affinity);
  p.labels = Labels::FromJson(labels);
  const json& spread = base::At(spec, "topologySpreadConstraints");
  shape.topology_spread = SpreadConstraints(spread);
  key.push_back(spread);
  shape.requests = PodRequests(pod);
  json scalars = json::array();
  for (const auto& [n, v] : shape.requests.scalar) scalars.push_back({n.str(), v});
  key.push_back({shape.requests.cpu_milli, shape.requests.memory_bytes, shape.requests.pods,
                 std::move(scalars)});
  p.claims = PodClaimsFromJson(pod);

  const json& status = base::At(pod, "status");
  p.phase = base::StringAt(status, "phase");
  const json& scheduled = Condition(status, "PodScheduled");
  p.scheduled = ParseConditionStatus(base::StringAt(scheduled, "status"));
  p.scheduled_reason = base::StringAt(scheduled, "reason");
  p.scheduled_message = base::StringAt(scheduled, "message");

  if (p.has_gate) {
    // Ten thousand gated pods may wait at once: keep the affinity the AND reads, not the
    // pod's whole affinity (KubeVirt's pod anti-affinity is most of it), and dumps' spare
    // capacity neither.
    if (!affinity.is_null()) shape.patch_basis = Compact(AffinityTheAndReads(affinity));
    if (gates != OurGateAlone()) shape.patch_gates = Compact(gates);
  }
  key.push_back(shape.patch_basis);
  key.push_back(shape.patch_gates);
  if (shape == *TargetPodShape::Empty()) return p;
  p.shape_.p = TargetPodShape::MakeShared(Compact(key), std::move(shape));
  return p;
}

const base::ObjectReads& TargetPod::Reads() {
  static const base::ObjectReads reads = [] {
    std::vector<base::ObjectReads::Path> paths = {
        {"metadata", "namespace"},
        {"metadata", "name"},
        {"metadata", "uid"},
        {"metadata", "resourceVersion"},
        {"metadata", "labels"},
        {"metadata", "annotations", std::string(kAnnotationMigrationJobName)},
        {"metadata", "creationTimestamp"},
        {"spec", "nodeName"},
        {"spec", "schedulingGates"},  // whole: patch_gates keeps it as it is
        {"spec", "tolerations", "key"},
        {"spec", "tolerations", "operator"},
        {"spec", "tolerations", "value"},
        {"spec", "tolerations", "effect"},
        {"spec", "nodeSelector"},
        {"spec", "affinity"},  // whole: AffinityTheAndReads and the required terms
        {"spec", "topologySpreadConstraints"},
        {"status", "phase"},
        {"status", "conditions", "type"},  // Condition(status, "PodScheduled")
        {"status", "conditions", "status"},
        {"status", "conditions", "reason"},
        {"status", "conditions", "message"},
    };
    for (auto& p : PodRequestsReads()) paths.push_back(std::move(p));
    for (auto& p : PodClaimsReads()) paths.push_back(std::move(p));
    return base::ObjectReads(paths);
  }();
  return reads;
}

std::string_view TargetPod::migration_job_uid() const {
  const std::string* v = labels.Find(kLabelMigrationJobUID);
  return v == nullptr ? std::string_view() : *v;
}

std::string_view TargetPod::created_by() const {
  const std::string* v = labels.Find(kLabelCreatedBy);
  return v == nullptr ? std::string_view() : *v;
}

json TargetPod::PatchBasis() const {
  if (!has_gate) return nullptr;
  json basis = {{"metadata", json::object()}, {"spec", json::object()}};
  if (!uid.empty()) basis["metadata"]["uid"] = uid;
  if (!resource_version.empty()) basis["metadata"]["resourceVersion"] = resource_version;
  if (!patch_basis().empty()) {
    basis["spec"]["affinity"] = json::parse(patch_basis(), nullptr, /*allow_exceptions=*/false);
  }
  basis["spec"]["schedulingGates"] =
      patch_gates().empty() ? OurGateAlone()
                            : json::parse(patch_gates(), nullptr, /*allow_exceptions=*/false);
  return basis;
}

BoundPod BoundPod::FromJson(const json& pod) {
  BoundPod b;
  const json& meta = base::At(pod, "metadata");
  b.ns = base::StringAt(meta, "namespace");
  b.name = base::StringAt(meta, "name");
  b.labels = Labels::FromJson(base::At(meta, "labels"));
  b.node_name = base::StringAt(base::At(pod, "spec"), "nodeName");
  b.anti_affinity = AffinityTerms(
      base::At(base::At(base::At(base::At(pod, "spec"), "affinity"), "podAntiAffinity"),
               "requiredDuringSchedulingIgnoredDuringExecution"));
  b.requests = PodRequests(pod);
  b.terminal = IsTerminalPhase(base::StringAt(base::At(pod, "status"), "phase"));
  b.deleting = base::At(meta, "deletionTimestamp").is_string();
  const json& dropped = base::At(meta, kMetadataLabelsDropped);
  if (dropped.is_number_integer() && dropped.get<int64_t>() > 0) {
    b.labels_dropped = static_cast<uint32_t>(std::min<int64_t>(dropped.get<int64_t>(), UINT32_MAX));
  }
  return b;
}

const base::ObjectReads& BoundPod::Reads() {
  static const base::ObjectReads reads = [] {
    std::vector<base::ObjectReads::Path> paths = {
        {"metadata", "namespace"},
        {"metadata", "name"},
        {"metadata", "labels"},
        {"metadata", "deletionTimestamp"},
        {"metadata", std::string(kMetadataLabelsDropped)},  // the trim's count, when it cut
        {"spec", "nodeName"},
        {"spec", "affinity", "podAntiAffinity", "requiredDuringSchedulingIgnoredDuringExecution"},
        {"status", "phase"},
    };
    for (auto& p : PodRequestsReads()) paths.push_back(std::move(p));
    return base::ObjectReads(paths);
  }();
  return reads;
}

NamespaceInfo NamespaceInfo::FromJson(const json& ns) {
  const json& meta = base::At(ns, "metadata");
  return {base::StringAt(meta, "name"), Labels::FromJson(base::At(meta, "labels"))};
}

MigrationInfo MigrationInfo::FromJson(const json& vmim) {
  MigrationInfo m;
  const json& meta = base::At(vmim, "metadata");
  m.ns = base::StringAt(meta, "namespace");
  m.name = base::StringAt(meta, "name");
  m.uid = base::StringAt(meta, "uid");
  m.resource_version = base::StringAt(meta, "resourceVersion");
  m.evacuation =
      base::At(base::At(meta, "annotations"), kAnnotationEvacuationMigration).is_string();
  m.policy = base::StringAt(base::At(meta, "annotations"), kPolicyAnnotation);
  if (!m.policy.empty()) {
    m.created = base::StringAt(meta, "creationTimestamp");
    const json& cap = base::At(base::At(meta, "annotations"), kMaxInboundAnnotation);
    if (!cap.is_null()) {
      m.max_inbound = ParseMaxInbound(cap.is_string() ? cap.get<std::string>() : cap.dump());
    }
  }
  m.added_term_text = AddedTermSource(vmim);
  const json& spec = base::At(vmim, "spec");
  m.vmi_name = base::StringAt(spec, "vmiName");
  m.added_node_selector = Labels::FromJson(base::At(spec, "addedNodeSelector"));
  const json& status = base::At(vmim, "status");
  m.phase = base::StringAt(status, "phase");
  const json& conditions = base::At(status, "conditions");
  if (conditions.is_array()) {
    for (const json& c : conditions) {
      if (!c.is_object()) continue;
      m.conditions.push_back({base::StringAt(c, "type"), base::StringAt(c, "status"),
                              base::StringAt(c, "reason"), base::StringAt(c, "message"),
                              base::StringAt(c, "lastProbeTime"),
                              base::StringAt(c, "lastTransitionTime")});
    }
  }
  const json& state = base::At(status, "migrationState");
  m.target_node = base::StringAt(state, "targetNode");
  m.source_node = base::StringAt(state, "sourceNode");
  m.target_pod = base::StringAt(state, "targetPod");
  return m;
}

const base::ObjectReads& MigrationInfo::Reads() {
  static const base::ObjectReads reads{
      {"metadata", "namespace"},
      {"metadata", "name"},
      {"metadata", "uid"},
      {"metadata", "resourceVersion"},
      {"metadata", "creationTimestamp"},
      {"metadata", "annotations", std::string(kAnnotationEvacuationMigration)},
      {"metadata", "annotations", std::string(kPolicyAnnotation)},
      {"metadata", "annotations", std::string(kMaxInboundAnnotation)},
      {"metadata", "annotations", std::string(kAddedTermAnnotation)},  // AddedTermSource
      {"spec", "vmiName"},
      {"spec", "addedNodeSelector"},
      {"status", "phase"},
      {"status", "conditions", "type"},
      {"status", "conditions", "status"},
      {"status", "conditions", "reason"},
      {"status", "conditions", "message"},
      {"status", "conditions", "lastProbeTime"},
      {"status", "conditions", "lastTransitionTime"},
      {"status", "migrationState", "targetNode"},
      {"status", "migrationState", "sourceNode"},
      {"status", "migrationState", "targetPod"},
  };
  return reads;
}

bool MigrationInfo::Final() const { return IsTerminalPhase(phase); }

}  // namespace kmt::api
