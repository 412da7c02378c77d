#include "cli/policy_explain_cmd.h"

#include <algorithm>
#include <iterator>
#include <map>
#include <sstream>
#include <vector>

#include "api/drain_plan.h"
#include "api/explain.h"
#include "api/policy.h"
#include "api/projections.h"
#include "api/quantity.h"
#include "base/json.h"
#include "cli/printer.h"
#include "cli/target_model.h"
#include "kube/error.h"
#include "kube/reads.h"
#include "kube/resources.h"

namespace kmt::cli {
namespace {

using nlohmann::json;

// Whether a VMI is on the node now (and not finished).
bool RunsOn(const json& vmi, const std::string& node) {
  const std::string phase = base::StringAt(vmi, {"status", "phase"});
  return base::StringAt(vmi, {"status", "nodeName"}) == node && phase != "Succeeded" &&
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
                                 base::StringAt(n, {"metadata", "name"}))) {
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

// The node-by-node summary of a VM that migrates: how many nodes would take it at its turn,
// or why none would.
std::string Summary(const api::VmPlan& v) {
  if (v.reason == api::StayReason::kNotModelled) return "cannot explain: " + v.detail;
  const size_t n = v.nodes.size();
  const std::string of = " of " + std::to_string(n) + " node" + (n == 1 ? "" : "s");
  if (n == 0) return "no node allowed: no other node in the cluster";
  if (v.fitting.empty()) return "no node allowed" + of + ": " + WhyNone(v.nodes, v.policy);
  return std::to_string(v.fitting.size()) + of + " allowed: " + api::ListFirst(v.fitting, 5);
}

// The explainer names the term an admin's request; here it is the policy's.
void NamePolicyTerm(api::NodeExplanation& e, const api::MigrationTargetPolicy& p) {
  static const std::string kPrefix = "excluded by the added term ";
  for (auto& r : e.reasons) {
    if (r.kind != api::ReasonKind::kExcludedByAddedTerm) continue;
    std::string failing =
        r.text.starts_with(kPrefix) ? r.text.substr(kPrefix.size()) : std::string();
    r.text = "term of policy " + p.name + " does not match" +
             (failing.empty() ? "" : " (" + failing + ")");
  }
}

// What the drain does to the VM, in one line.
std::string FateLine(const api::VmPlan& v) {
  const std::string strategy = "evictionStrategy " + std::string(api::ToString(v.strategy));
  switch (v.fate) {
    case api::Fate::kLeaves:
      return "leaves: live migration (" + strategy + "), placed on " + v.placed_on +
             " in this plan" +
             (v.waits_for_inbound ? ", after waiting for the policy's maxInboundPerNode" : "");
    case api::Fate::kStays:
      return "stays, blocks the drain: " + std::string(api::ToString(v.reason)) + " (" + strategy +
             (v.detail.empty() || v.reason == api::StayReason::kNotModelled ? ""
                                                                            : "; " + v.detail) +
             ")";
    case api::Fate::kShutDown:
      return "shut down: the drain evicts it (" + strategy +
             (v.detail.empty() ? "" : "; " + v.detail) + ")";
  }
  return "";
}

std::string PolicyLine(const api::VmPlan& v) {
  if (v.policy == nullptr) return "no policy: the scheduler alone decides";
  std::string line = "policy " + v.policy->name + " (" + api::ToString(v.policy->term) + ")";
  if (v.policy->max_inbound_per_node) {
    line += ", at most " + std::to_string(*v.policy->max_inbound_per_node) +
            " inbound per node (the rest wait gated)";
  }
  return line;
}

// Where the cluster's eviction strategy and migration limits came from, for the summary.
struct ClusterConfig {
  api::DrainConfig drain;
  std::string source;  // "KubeVirt ns/name" or "KubeVirt's defaults"
};

// The KubeVirt CR (there is one per cluster). A user who may not read it, or a cluster
// without its CRD, gets KubeVirt's defaults and a note.
ClusterConfig ReadClusterConfig(kube::KubeClient& client, std::ostream& err) {
  ClusterConfig c{{}, "KubeVirt's defaults"};
  try {
    const std::vector<json> items = ListItems(client, kube::kKubeVirts, "");
    if (!items.empty()) {
      c.drain = api::DrainConfig::FromKubeVirt(items.front());
      c.source = "KubeVirt " + base::StringAt(items.front(), {"metadata", "namespace"}) + "/" +
                 base::StringAt(items.front(), {"metadata", "name"});
    }
  } catch (const kube::KubeError& e) {
    if (e.kind() != kube::ErrorKind::kForbidden && e.kind() != kube::ErrorKind::kNotFound) throw;
    err << "note: cannot read the KubeVirt CR (" << FormatKubeError(e)
        << "): KubeVirt's defaults assumed\n";
  }
  return c;
}

// "2/8 (25%)": requested of allocatable.
template <typename Format>
std::string OfAllocatable(int64_t requested, int64_t allocatable, Format format) {
  std::string s = format(requested) + "/" + format(allocatable);
  if (allocatable > 0) s += " (" + std::to_string(requested * 100 / allocatable) + "%)";
  return s;
}

// "1 would stay (1 not live-migratable, 2 no node left)".
std::string StayCounts(const api::DrainPlan& plan) {
  std::map<std::string, size_t> by_reason;
  for (const api::VmPlan& v : plan.vms) {
    if (v.fate == api::Fate::kStays) ++by_reason[std::string(api::ToString(v.reason))];
  }
  std::string s = std::to_string(plan.staying) + " would stay";
  if (by_reason.empty()) return s;
  s += " (";
  bool first = true;
  for (const auto& [reason, n] : by_reason) {
    s += (first ? "" : ", ") + std::to_string(n) + " " + reason;
    first = false;
  }
  return s + ")";
}

void PrintText(const std::string& node, const std::string& origin, const api::PolicySet& set,
               const ClusterConfig& config, const api::DrainPlan& plan, std::ostream& out) {
  const size_t n = set.policies.size() + set.skipped.size();
  out << "Node " << node << ", origin " << origin << ": " << plan.vms.size() << " VMI"
      << (plan.vms.size() == 1 ? "" : "s") << ", " << n << " MigrationTargetPolic"
      << (n == 1 ? "y" : "ies");
  if (!set.skipped.empty()) out << " (" << set.skipped.size() << " skipped)";
  out << "\n";
  for (const auto& s : set.skipped) out << s.Warning() << "\n";
  for (const api::VmPlan& v : plan.vms) {
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
    if (v.migrates) out << "  " << Summary(v) << "\n";
    out << "  " << FateLine(v) << "\n";
  }
  if (plan.vms.empty()) return;
  out << "\nDrain of " << node << ": " << plan.leaving << " of " << plan.vms.size() << " VM"
      << (plan.vms.size() == 1 ? "" : "s") << " can leave; " << StayCounts(plan) << "; "
      << plan.shut_down << " shut down\n";
  out << "Cluster: evictionStrategy " << api::ToString(config.drain.eviction_strategy) << ", "
      << config.drain.parallel_outbound << " migration"
      << (config.drain.parallel_outbound == 1 ? "" : "s") << " out of a node at a time ("
      << config.source << ")\n";
  if (plan.nodes.empty()) return;
  out << "Nodes after the drain (requested/allocatable):\n";
  std::vector<std::vector<std::string>> rows = {{"NODE", "VMS IN", "CPU", "MEMORY", "PODS"}};
  for (const api::NodeAfter& a : plan.nodes) {
    rows.push_back(
        {a.node, std::to_string(a.incoming),
         OfAllocatable(a.requested.cpu_milli, a.allocatable.cpu_milli, api::FormatMilli),
         OfAllocatable(a.requested.memory_bytes, a.allocatable.memory_bytes, api::FormatBytes),
         OfAllocatable(a.requested.pods, a.allocatable.pods,
                       [](int64_t p) { return std::to_string(p); })});
  }
  std::istringstream table(RenderTable(rows));
  for (std::string line; std::getline(table, line);) out << "  " << line << "\n";
}

json ToJson(const std::string& node, const std::string& origin, const api::PolicySet& set,
            const ClusterConfig& config, const api::DrainPlan& plan) {
  json skipped = json::array();
  for (const auto& s : set.skipped) skipped.push_back({{"name", s.name}, {"cause", s.cause}});
  json vmis = json::array();
  for (const api::VmPlan& v : plan.vms) {
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
    json item = {
        {"namespace", v.ns},
        {"name", v.name},
        {"policy", policy},
        {"nodes", nodes},
        {"allowedNodes", v.fitting},
        {"summary", v.migrates ? Summary(v) : FateLine(v)},
        {"evictionStrategy", api::ToString(v.strategy)},
        {"fate", api::ToString(v.fate)},
        {"stayReason", v.fate == api::Fate::kStays ? json(api::ToString(v.reason)) : json(nullptr)},
        {"detail", v.detail},
        {"placedOn", v.placed_on.empty() ? json(nullptr) : json(v.placed_on)},
        {"waitsForInbound", v.waits_for_inbound}};
    if (v.reason == api::StayReason::kNotModelled) item["error"] = v.detail;
    vmis.push_back(std::move(item));
  }
  json after = json::array();
  for (const api::NodeAfter& a : plan.nodes) {
    after.push_back(
        {{"name", a.node},
         {"incomingVMs", a.incoming},
         {"cpu",
          {{"requested", api::FormatMilli(a.requested.cpu_milli)},
           {"allocatable", api::FormatMilli(a.allocatable.cpu_milli)}}},
         {"memory",
          {{"requested", api::FormatBytes(a.requested.memory_bytes)},
           {"allocatable", api::FormatBytes(a.allocatable.memory_bytes)}}},
         {"pods", {{"requested", a.requested.pods}, {"allocatable", a.allocatable.pods}}}});
  }
  json drain = {{"vmis", plan.vms.size()},
                {"leaving", plan.leaving},
                {"staying", plan.staying},
                {"shutDown", plan.shut_down},
                {"clusterEvictionStrategy", api::ToString(config.drain.eviction_strategy)},
                {"parallelOutboundMigrationsPerNode", config.drain.parallel_outbound},
                {"configSource", config.source},
                {"nodesAfter", after}};
  return {{"node", node},
          {"origin", origin},
          {"skippedPolicies", skipped},
          {"vmis", vmis},
          {"drain", drain}};
}

// The PodDisruptionBudgets of a namespace, read once; a user who may not list them gets a
// note and none (the plan then cannot see a PDB hold a VM there).
const std::vector<json>& PdbsOf(kube::KubeClient& client, const std::string& ns,
                                std::map<std::string, std::vector<json>>& cache,
                                std::ostream& err) {
  auto it = cache.find(ns);
  if (it != cache.end()) return it->second;
  std::vector<json> pdbs;
  try {
    pdbs = ListItems(client, kube::kPodDisruptionBudgets, ns);
  } catch (const kube::KubeError& e) {
    if (e.kind() != kube::ErrorKind::kForbidden) throw;
    err << "note: you may not list poddisruptionbudgets in " << ns
        << ": none is assumed to hold a VM there\n";
  }
  return cache.emplace(ns, std::move(pdbs)).first->second;
}

}  // namespace

int RunPolicyExplain(const std::string& node, const std::optional<std::string>& ns,
                     const std::string& origin, const std::string& output, kube::KubeClient& client,
                     Streams io) {
  try {
    const std::vector<api::NodeInfo> nodes = ListNodeInfos(client);
    auto source =
        std::ranges::find_if(nodes, [&](const api::NodeInfo& n) { return n.name == node; });
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
    // The plan's order (KubeVirt's is not deterministic: api/drain_plan.h).
    std::ranges::sort(on_node, [](const json& a, const json& b) {
      return std::pair(base::StringAt(a, {"metadata", "namespace"}),
                       base::StringAt(a, {"metadata", "name"})) <
             std::pair(base::StringAt(b, {"metadata", "namespace"}),
                       base::StringAt(b, {"metadata", "name"}));
    });
    if (forbidden_namespaces > 0) {
      io.err << "note: " << forbidden_namespaces << " namespace"
             << (forbidden_namespaces == 1 ? "" : "s")
             << " skipped: you may not list virtualmachineinstances there\n";
    }

    ClusterConfig config;
    std::vector<api::BoundPod> bound;
    if (!on_node.empty()) {
      config = ReadClusterConfig(client, io.err);
      bound = ListBoundPods(client);
    }
    std::map<std::string, json> namespaces;         // read once each, only when a policy asks
    std::map<std::string, std::vector<json>> pdbs;  // read once each, only when evicting
    std::vector<api::DrainVm> vms;
    bool wants_namespaces = false;
    for (const json& vmi : on_node) {
      api::DrainVm& vm = vms.emplace_back();
      vm.ns = base::StringAt(vmi, {"metadata", "namespace"});
      vm.name = base::StringAt(vmi, {"metadata", "name"});
      json namespace_object;
      if (set.wants_namespace) {
        auto it = namespaces.find(vm.ns);
        if (it == namespaces.end()) {
          it =
              namespaces
                  .emplace(vm.ns,
                           kube::GetIfExists(client, kube::kNamespaces, "", vm.ns).value_or(json()))
                  .first;
        }
        namespace_object = it->second;
      }
      api::EvacuationFacts facts = api::EvacuationFactsOf(vmi, namespace_object, source_labels);
      facts.descheduler = facts.descheduler || origin == "Descheduler";
      vm.policy = api::SelectPolicy(set.policies, facts);
      vm.strategy = api::StrategyOf(vmi, config.drain);
      vm.migratability = api::Migratability::Of(vmi);
      vm.pod = ModelTargetPod(client, vm.ns, vmi, io.err);
      if (vm.pod) wants_namespaces = wants_namespaces || api::WantsNamespaces(*vm.pod, bound);
      const bool evicted = vm.strategy == api::EvictionStrategy::kNone ||
                           (vm.strategy == api::EvictionStrategy::kLiveMigrateIfPossible &&
                            !vm.migratability.migratable);
      if (evicted && vm.pod) {
        vm.blocking_pdb =
            api::BlockingPdb(vm.pod->labels.ToJson(), PdbsOf(client, vm.ns, pdbs, io.err));
      }
    }
    std::vector<api::NamespaceInfo> namespace_infos;
    if (wants_namespaces) namespace_infos = ListNamespaceInfos(client, io.err);

    api::DrainPlan plan = api::PlanDrain({.node = node,
                                          .nodes = nodes,
                                          .bound = bound,
                                          .namespaces = namespace_infos,
                                          .parallel_outbound = config.drain.parallel_outbound,
                                          .disclosure = api::Disclosure::kEveryNamespace},
                                         vms);
    for (api::VmPlan& v : plan.vms) {
      if (v.policy == nullptr) continue;
      for (api::NodeExplanation& e : v.nodes) NamePolicyTerm(e, *v.policy);
    }

    if (output == "json") {
      io.out << ToJson(node, origin, set, config, plan).dump(4) << "\n";
    } else if (output == "yaml") {
      io.out << ToYaml(ToJson(node, origin, set, config, plan));
    } else {
      PrintText(node, origin, set, config, plan, io.out);
    }
    return plan.staying > 0 ? 3 : 0;
  } catch (const kube::KubeError& e) {
    io.err << FormatKubeError(e) << "\n";
    return 1;
  }
}

}  // namespace kmt::cli
