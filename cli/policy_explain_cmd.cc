#include "cli/policy_explain_cmd.h"

#include <algorithm>
#include <iterator>
#include <map>
#include <sstream>
#include <vector>

#include "api/explain.h"
#include "api/policy.h"
#include "api/projections.h"
#include "cli/printer.h"
#include "cli/target_model.h"
#include "kube/error.h"
#include "kube/reads.h"
#include "kube/resources.h"

namespace kmt::cli {
namespace {

using nlohmann::json;

// One VMI on the node: its policy and its verdict on every other node.
struct VmiVerdict {
  std::string ns, name;
  const api::MigrationTargetPolicy* policy = nullptr;  // into the parsed PolicySet
  std::string error;                        // set when the target pod could not be modelled
  std::vector<api::NodeExplanation> nodes;  // every node but the source, by name
  std::vector<std::string> allowed;         // the nodes that fit
  std::string summary;
};

// Whether a VMI is on the node now (and not finished).
bool RunsOn(const json& vmi, const std::string& node) {
  const std::string phase = kube::StringAt(vmi, {"status", "phase"});
  return kube::StringAt(vmi, {"status", "nodeName"}) == node && phase != "Succeeded" &&
         phase != "Failed";
}

// The VMIs of `ns` ("" = every namespace). Cluster-wide, a 403 falls back to the namespaces
// where the user may list them; `skipped` counts the others.
std::vector<json> ListVmis(kube::KubeClient& client, const std::optional<std::string>& ns,
                           size_t& skipped) {
  if (ns) return ListItems(client, kube::kVirtualMachineInstances, *ns);
  try {
    return ListItems(client, kube::kVirtualMachineInstances, "");
  } catch (const kube::KubeError& e) {
    if (e.kind() != kube::ErrorKind::kForbidden) throw;
    std::vector<json> namespaces;
    try {
      namespaces = ListItems(client, kube::kNamespaces, "");
    } catch (const kube::KubeError&) {
      throw e;  // neither: the first answer says best what is missing
    }
    std::vector<json> vmis;
    for (const json& n : namespaces) {
      try {
        for (json& v : ListItems(client, kube::kVirtualMachineInstances,
                                 kube::StringAt(n, {"metadata", "name"}))) {
          vmis.push_back(std::move(v));
        }
      } catch (const kube::KubeError& in_ns) {
        if (in_ns.kind() != kube::ErrorKind::kForbidden) throw;
        ++skipped;
      }
    }
    return vmis;
  }
}

// What keeps nodes out, counted per reason, for a summary: "2 excluded by the term of policy
// p, 1 cordoned".
std::string WhyNone(const std::vector<api::NodeExplanation>& nodes,
                    const api::MigrationTargetPolicy* policy) {
  static constexpr const char* kLabel[] = {
      "excluded by the term",
      "cordoned",
      "not Ready",
      "untolerated taint",
      "the VM's nodeSelector",
      "the VM's own affinity",
      "the VM already runs there",
      "insufficient resources",
      "another pod's anti-affinity",
      "the VM's own pod affinity",
      "topology spread",
      "an unusable volume claim",
      "a PersistentVolume's node affinity",
      "a PersistentVolume's zone",
  };
  static_assert(std::size(kLabel) == api::kReasonKindCount, "one label per ReasonKind");
  size_t count[api::kReasonKindCount] = {};
  for (const auto& n : nodes) {
    api::ReasonMask seen = 0;
    for (const auto& r : n.reasons) seen |= api::Bit(r.kind);
    for (int k = 0; k < api::kReasonKindCount; ++k) {
      if (seen & (1u << k)) ++count[k];
    }
  }
  std::string out;
  for (int k = 0; k < api::kReasonKindCount; ++k) {
    if (count[k] == 0) continue;
    out += out.empty() ? "" : ", ";
    out += std::to_string(count[k]) + " " + kLabel[k];
    if (k == static_cast<int>(api::ReasonKind::kExcludedByAddedTerm) && policy != nullptr) {
      out += " of policy " + policy->name;
    }
  }
  return out;
}

std::string Summary(const VmiVerdict& v) {
  if (!v.error.empty()) return "cannot explain: " + v.error;
  const size_t n = v.nodes.size();
  const std::string of = " of " + std::to_string(n) + " node" + (n == 1 ? "" : "s");
  if (n == 0) return "no node allowed: no other node in the cluster";
  if (v.allowed.empty()) return "no node allowed" + of + ": " + WhyNone(v.nodes, v.policy);
  return std::to_string(v.allowed.size()) + of + " allowed: " + api::ListFirst(v.allowed, 5);
}

// The explainer names the term an admin's request; here it is the policy's.
void NamePolicyTerm(api::NodeExplanation& e, const api::MigrationTargetPolicy& p) {
  static const std::string kPrefix = "excluded by the added term ";
  for (auto& r : e.reasons) {
    if (r.kind != api::ReasonKind::kExcludedByAddedTerm) continue;
    std::string failing =
        r.text.rfind(kPrefix, 0) == 0 ? r.text.substr(kPrefix.size()) : std::string();
    r.text = "term of policy " + p.name + " does not match" +
             (failing.empty() ? "" : " (" + failing + ")");
  }
}

VmiVerdict Explain(const json& vmi, const std::string& node, const api::PolicySet& set,
                   bool descheduler, const json& namespace_object, const json& source_labels,
                   const std::vector<api::NodeInfo>& nodes, const std::vector<api::BoundPod>& bound,
                   std::optional<std::vector<api::NamespaceInfo>>& namespaces,
                   kube::KubeClient& client, std::ostream& err) {
  VmiVerdict v;
  v.ns = kube::StringAt(vmi, {"metadata", "namespace"});
  v.name = kube::StringAt(vmi, {"metadata", "name"});
  api::EvacuationFacts facts = api::EvacuationFactsOf(vmi, namespace_object, source_labels);
  facts.descheduler = facts.descheduler || descheduler;
  v.policy = api::SelectPolicy(set.policies, facts);

  std::optional<api::TargetPod> pod = ModelTargetPod(client, v.ns, vmi, err);
  if (!pod) {
    v.error = "no running virt-launcher pod to model the migration target on";
  } else {
    // Read once, and only when some namespaceSelector needs them.
    if (!namespaces && api::WantsNamespaces(*pod, bound))
      namespaces = ListNamespaceInfos(client, err);
    const api::Explainer explainer(*pod, v.policy ? &v.policy->term : nullptr, node, nodes, bound,
                                   namespaces ? std::span<const api::NamespaceInfo>(*namespaces)
                                              : std::span<const api::NamespaceInfo>(),
                                   api::Disclosure::kEveryNamespace);
    for (api::NodeExplanation& e : explainer.ExplainAll()) {
      if (e.node == node) continue;
      if (v.policy != nullptr) NamePolicyTerm(e, *v.policy);
      if (e.fits()) v.allowed.push_back(e.node);
      v.nodes.push_back(std::move(e));
    }
  }
  v.summary = Summary(v);
  return v;
}

std::string PolicyLine(const VmiVerdict& v) {
  if (v.policy == nullptr) return "no policy: the scheduler alone decides";
  std::string line = "policy " + v.policy->name + " (" + api::ToString(v.policy->term) + ")";
  if (v.policy->max_inbound_per_node) {
    line += ", at most " + std::to_string(*v.policy->max_inbound_per_node) +
            " inbound per node (the rest wait gated)";
  }
  return line;
}

void PrintText(const std::string& node, const std::string& origin, const api::PolicySet& set,
               const std::vector<VmiVerdict>& verdicts, std::ostream& out) {
  const size_t n = set.policies.size() + set.skipped.size();
  out << "Node " << node << ", origin " << origin << ": " << verdicts.size() << " VMI"
      << (verdicts.size() == 1 ? "" : "s") << ", " << n << " MigrationTargetPolic"
      << (n == 1 ? "y" : "ies");
  if (!set.skipped.empty()) out << " (" << set.skipped.size() << " skipped)";
  out << "\n";
  for (const auto& s : set.skipped) out << s.Warning() << "\n";
  for (const VmiVerdict& v : verdicts) {
    out << "\n" << v.ns << "/" << v.name << ": " << PolicyLine(v) << "\n";
    if (!v.nodes.empty()) {
      std::vector<std::vector<std::string>> rows = {{"NODE", "VERDICT"}};
      for (const auto& e : v.nodes) {
        std::string verdict = e.fits() ? "fits" : "";
        for (size_t i = 0; i < e.reasons.size(); ++i) {
          verdict += (i ? "; " : "") + e.reasons[i].text;
        }
        rows.push_back({e.node, verdict});
      }
      std::istringstream table(RenderTable(rows));
      for (std::string line; std::getline(table, line);) out << "  " << line << "\n";
    }
    out << "  " << v.summary << "\n";
  }
}

json ToJson(const std::string& node, const std::string& origin, const api::PolicySet& set,
            const std::vector<VmiVerdict>& verdicts) {
  json skipped = json::array();
  for (const auto& s : set.skipped) skipped.push_back({{"name", s.name}, {"cause", s.cause}});
  json vmis = json::array();
  for (const VmiVerdict& v : verdicts) {
    json policy = nullptr;
    if (v.policy != nullptr) {
      policy = {{"name", v.policy->name},
                {"priority", v.policy->priority},
                {"addedNodeSelectorTerm", json::parse(v.policy->term_text)}};
      if (v.policy->max_inbound_per_node) {
        policy["maxInboundPerNode"] = *v.policy->max_inbound_per_node;
      }
    }
    json nodes = json::array();
    for (const auto& e : v.nodes) {
      json reasons = json::array();
      for (const auto& r : e.reasons) reasons.push_back(r.text);
      nodes.push_back({{"name", e.node}, {"fits", e.fits()}, {"reasons", reasons}});
    }
    json item = {{"namespace", v.ns},         {"name", v.name},
                 {"policy", policy},          {"nodes", nodes},
                 {"allowedNodes", v.allowed}, {"summary", v.summary}};
    if (!v.error.empty()) item["error"] = v.error;
    vmis.push_back(std::move(item));
  }
  return {{"node", node}, {"origin", origin}, {"skippedPolicies", skipped}, {"vmis", vmis}};
}

}  // namespace

int RunPolicyExplain(const std::string& node, const std::optional<std::string>& ns,
                     const std::string& origin, const std::string& output, kube::KubeClient& client,
                     Streams io) {
  try {
    const std::vector<api::NodeInfo> nodes = ListNodeInfos(client);
    auto source = std::find_if(nodes.begin(), nodes.end(),
                               [&](const api::NodeInfo& n) { return n.name == node; });
    if (source == nodes.end()) {
      io.err << "Error from server (NotFound): nodes \"" << node << "\" not found\n";
      return 1;
    }
    const json source_labels = source->labels.ToJson();
    const api::PolicySet set =
        api::ParsePolicies(ListItems(client, kube::kMigrationTargetPolicies, ""));

    size_t forbidden_namespaces = 0;
    std::vector<json> on_node;
    for (json& vmi : ListVmis(client, ns, forbidden_namespaces)) {
      if (RunsOn(vmi, node)) on_node.push_back(std::move(vmi));
    }
    std::sort(on_node.begin(), on_node.end(), [](const json& a, const json& b) {
      return std::pair(kube::StringAt(a, {"metadata", "namespace"}),
                       kube::StringAt(a, {"metadata", "name"})) <
             std::pair(kube::StringAt(b, {"metadata", "namespace"}),
                       kube::StringAt(b, {"metadata", "name"}));
    });
    if (forbidden_namespaces > 0) {
      io.err << "note: " << forbidden_namespaces << " namespace"
             << (forbidden_namespaces == 1 ? "" : "s")
             << " skipped: you may not list virtualmachineinstances there\n";
    }

    std::vector<api::BoundPod> bound;
    if (!on_node.empty()) bound = ListBoundPods(client);
    std::optional<std::vector<api::NamespaceInfo>> namespace_infos;  // read when first needed
    std::map<std::string, json> namespaces;  // read once each, only when a policy asks
    std::vector<VmiVerdict> verdicts;
    for (const json& vmi : on_node) {
      const std::string vmi_ns = kube::StringAt(vmi, {"metadata", "namespace"});
      json namespace_object;
      if (set.wants_namespace) {
        auto it = namespaces.find(vmi_ns);
        if (it == namespaces.end()) {
          it = namespaces
                   .emplace(
                       vmi_ns,
                       kube::GetIfExists(client, kube::kNamespaces, "", vmi_ns).value_or(json()))
                   .first;
        }
        namespace_object = it->second;
      }
      verdicts.push_back(Explain(vmi, node, set, origin == "Descheduler", namespace_object,
                                 source_labels, nodes, bound, namespace_infos, client, io.err));
    }

    if (output == "json") {
      io.out << ToJson(node, origin, set, verdicts).dump(4) << "\n";
    } else {
      PrintText(node, origin, set, verdicts, io.out);
    }
    return 0;
  } catch (const kube::KubeError& e) {
    io.err << FormatKubeError(e) << "\n";
    return 1;
  }
}

}  // namespace kmt::cli
