#include "api/drain_plan.h"

#include <algorithm>
#include <unordered_map>

#include "base/json.h"

namespace kmt::api {
namespace {

using nlohmann::json;

// A positive integer member, else `fallback`.
int PositiveIntAt(const json& j, base::JsonPath path, int fallback) {
  const int64_t n = base::Int(j, path).value_or(0);
  return n >= 1 && n <= 1'000'000 ? static_cast<int>(n) : fallback;
}

// A metav1.LabelSelector object read leniently (a policy/v1 PDB selector as stored, already
// validated by the API server).
PolicyLabelSelector SelectorOf(const json& sel) {
  PolicyLabelSelector out;
  if (const json& ml = base::At(sel, {"matchLabels"}); ml.is_object()) {
    for (const auto& [k, v] : ml.items()) {
      if (v.is_string()) out.requirements.push_back({k, "In", {v.get<std::string>()}});
    }
  }
  if (const json& me = base::At(sel, {"matchExpressions"}); me.is_array()) {
    for (const json& e : me) {
      PolicyLabelSelector::Requirement r{
          base::StringAt(e, {"key"}), base::StringAt(e, {"operator"}), {}};
      if (const json& vs = base::At(e, {"values"}); vs.is_array()) {
        for (const json& v : vs) {
          if (v.is_string()) r.values.push_back(v.get<std::string>());
        }
      }
      out.requirements.push_back(std::move(r));
    }
  }
  return out;
}

// Free share of a resource after `used`, in [0, 1] (0 when nothing is allocatable).
double FreeShare(int64_t allocatable, int64_t used) {
  if (allocatable <= 0) return 0;
  return std::max<double>(
      0, static_cast<double>(allocatable - used) / static_cast<double>(allocatable));
}

// "LiveMigratable=False REASON: MESSAGE" ("LiveMigratable not True" without the condition).
std::string MigratabilityText(const Migratability& m) {
  if (m.reason.empty() && m.message.empty()) return "LiveMigratable not True";
  std::string s = "LiveMigratable=False";
  if (!m.reason.empty()) s += " " + m.reason;
  if (!m.message.empty()) s += ": " + m.message;
  return s;
}

}  // namespace

std::string_view ToString(EvictionStrategy s) {
  switch (s) {
    case EvictionStrategy::kNone:
      return "None";
    case EvictionStrategy::kLiveMigrate:
      return "LiveMigrate";
    case EvictionStrategy::kLiveMigrateIfPossible:
      return "LiveMigrateIfPossible";
    case EvictionStrategy::kExternal:
      return "External";
  }
  return "None";
}

std::optional<EvictionStrategy> ParseEvictionStrategy(std::string_view s) {
  for (EvictionStrategy e :
       {EvictionStrategy::kNone, EvictionStrategy::kLiveMigrate,
        EvictionStrategy::kLiveMigrateIfPossible, EvictionStrategy::kExternal}) {
    if (ToString(e) == s) return e;
  }
  return std::nullopt;
}

DrainConfig DrainConfig::FromKubeVirt(const json& kubevirt) {
  DrainConfig c;
  const json& conf = base::At(kubevirt, {"spec", "configuration"});
  if (auto s = ParseEvictionStrategy(base::StringAt(conf, {"evictionStrategy"}))) {
    c.eviction_strategy = *s;
  }
  const int outbound = PositiveIntAt(conf, {"migrations", "parallelOutboundMigrationsPerNode"},
                                     kDefaultParallelOutboundMigrationsPerNode);
  const int cluster = PositiveIntAt(conf, {"migrations", "parallelMigrationsPerCluster"},
                                    kDefaultParallelMigrationsPerCluster);
  c.parallel_outbound = std::min(outbound, cluster);
  return c;
}

EvictionStrategy StrategyOf(const json& vmi, const DrainConfig& config) {
  if (auto s = ParseEvictionStrategy(base::StringAt(vmi, {"spec", "evictionStrategy"}))) return *s;
  return config.eviction_strategy;
}

Migratability Migratability::Of(const json& vmi) {
  Migratability m;
  const json& conditions = base::At(vmi, {"status", "conditions"});
  if (!conditions.is_array()) return m;
  for (const json& c : conditions) {
    if (base::StringAt(c, {"type"}) != "LiveMigratable") continue;
    m.migratable = base::StringAt(c, {"status"}) == "True";
    if (!m.migratable) {
      m.reason = base::StringAt(c, {"reason"});
      m.message = base::StringAt(c, {"message"});
    }
    break;
  }
  return m;
}

std::optional<std::string> BlockingPdb(const json& pod_labels, std::span<const json> pdbs) {
  const json labels = pod_labels.is_object() ? pod_labels : json::object();
  for (const json& pdb : pdbs) {
    const json& sel = base::At(pdb, {"spec", "selector"});
    if (!sel.is_object()) continue;  // null selects no pod
    if (!SelectorOf(sel).Matches(labels)) continue;
    const json& allowed = base::At(pdb, {"status", "disruptionsAllowed"});
    // No status yet: the disruption controller has not counted; the eviction API then
    // refuses (disruptionsAllowed reads as 0).
    if (!allowed.is_number_integer() || allowed.get<int64_t>() < 1) {
      return base::StringAt(pdb, {"metadata", "name"});
    }
  }
  return std::nullopt;
}

std::string_view ToString(Fate f) {
  switch (f) {
    case Fate::kLeaves:
      return "leaves";
    case Fate::kStays:
      return "stays";
    case Fate::kShutDown:
      return "shut down";
  }
  return "";
}

std::string_view ToString(StayReason r) {
  switch (r) {
    case StayReason::kNone:
      return "";
    case StayReason::kPdb:
      return "PodDisruptionBudget";
    case StayReason::kNotMigratable:
      return "not live-migratable";
    case StayReason::kExternal:
      return "evictionStrategy External";
    case StayReason::kNoPlace:
      return "no node left";
    case StayReason::kNotModelled:
      return "not modelled";
  }
  return "";
}

DrainPlan PlanDrain(const DrainInput& in, std::span<const DrainVm> vms) {
  DrainPlan plan;
  // The pods bound to nodes, grown by each placement; per node, what they request.
  std::vector<BoundPod> bound(in.bound.begin(), in.bound.end());
  std::unordered_map<std::string, size_t> index;
  for (size_t i = 0; i < in.nodes.size(); ++i) index.emplace(in.nodes[i].name, i);
  std::vector<Resources> used(in.nodes.size());
  for (const BoundPod& p : in.bound) {
    if (p.terminal) continue;
    if (auto it = index.find(p.node_name); it != index.end()) used[it->second].Add(p.requests);
  }
  std::vector<int> incoming(in.nodes.size(), 0);
  // The leaving VMs placed so far: policy and node index, for the in-flight window.
  std::vector<std::pair<const MigrationTargetPolicy*, size_t>> placed;

  for (const DrainVm& vm : vms) {
    VmPlan v;
    v.ns = vm.ns;
    v.name = vm.name;
    v.strategy = vm.strategy;
    v.policy = vm.policy;
    switch (vm.strategy) {
      case EvictionStrategy::kLiveMigrate:
        v.migrates = vm.migratability.migratable;
        if (!v.migrates) {
          v.fate = Fate::kStays;
          v.reason = StayReason::kNotMigratable;
          v.detail = MigratabilityText(vm.migratability);
        }
        break;
      case EvictionStrategy::kLiveMigrateIfPossible:
        v.migrates = vm.migratability.migratable;
        if (!v.migrates) v.detail = MigratabilityText(vm.migratability);
        break;
      case EvictionStrategy::kExternal:
        v.fate = Fate::kStays;
        v.reason = StayReason::kExternal;
        v.detail = "waits for an external controller to move it";
        break;
      case EvictionStrategy::kNone:
        break;
    }
    const bool evicted = !v.migrates && v.reason == StayReason::kNone;
    if (evicted) {
      if (vm.blocking_pdb) {
        v.fate = Fate::kStays;
        v.reason = StayReason::kPdb;
        v.detail = "PodDisruptionBudget " + *vm.blocking_pdb + " allows no disruption";
      } else {
        v.fate = Fate::kShutDown;
      }
    }
    if (v.migrates && !vm.pod) {
      v.fate = Fate::kStays;
      v.reason = StayReason::kNotModelled;
      v.detail = "no running virt-launcher pod to model the migration target on";
    } else if (v.migrates) {
      const Explainer explainer(*vm.pod, vm.policy ? &vm.policy->term : nullptr, in.node, in.nodes,
                                bound, in.namespaces, in.disclosure);
      std::vector<size_t> fit;  // node indexes
      for (NodeExplanation& e : explainer.ExplainAll()) {
        if (e.node == in.node) continue;
        if (e.fits()) {
          v.fitting.push_back(e.node);
          fit.push_back(index.at(e.node));
        }
        v.nodes.push_back(std::move(e));
      }
      if (fit.empty()) {
        v.fate = Fate::kStays;
        v.reason = StayReason::kNoPlace;
      } else {
        // Nodes under the policy's limit among the migrations in flight with this one.
        std::vector<size_t> choice = fit;
        if (vm.policy && vm.policy->max_inbound_per_node) {
          std::vector<int> inflight(in.nodes.size(), 0);
          const size_t window = static_cast<size_t>(std::max(in.parallel_outbound, 1)) - 1;
          for (size_t k = placed.size() - std::min(window, placed.size()); k < placed.size(); ++k) {
            if (placed[k].first == vm.policy) ++inflight[placed[k].second];
          }
          std::vector<size_t> below;
          for (size_t i : fit) {
            if (inflight[i] < *vm.policy->max_inbound_per_node) below.push_back(i);
          }
          if (below.empty()) {
            v.waits_for_inbound = true;
          } else {
            choice = std::move(below);
          }
        }
        size_t best = choice.front();
        double best_score = -1;
        for (size_t i : choice) {
          const Resources& a = in.nodes[i].allocatable;
          const double score =
              (FreeShare(a.cpu_milli, used[i].cpu_milli + vm.pod->requests().cpu_milli) +
               FreeShare(a.memory_bytes, used[i].memory_bytes + vm.pod->requests().memory_bytes)) /
              2;
          if (score > best_score ||
              (score == best_score && in.nodes[i].name < in.nodes[best].name)) {
            best = i;
            best_score = score;
          }
        }
        v.fate = Fate::kLeaves;
        v.placed_on = in.nodes[best].name;
        used[best].Add(vm.pod->requests());
        ++incoming[best];
        placed.emplace_back(vm.policy, best);
        BoundPod target;
        target.node_name = v.placed_on;
        target.ns = vm.pod->ns;
        target.name = vm.pod->name + " (target)";
        target.labels = vm.pod->labels;
        target.requests = vm.pod->requests();
        target.anti_affinity = vm.pod->anti_affinity;
        bound.push_back(std::move(target));
      }
    }
    switch (v.fate) {
      case Fate::kLeaves:
        ++plan.leaving;
        break;
      case Fate::kStays:
        ++plan.staying;
        break;
      case Fate::kShutDown:
        ++plan.shut_down;
        break;
    }
    plan.vms.push_back(std::move(v));
  }
  for (size_t i = 0; i < in.nodes.size(); ++i) {
    if (incoming[i] == 0) continue;
    plan.nodes.push_back({in.nodes[i].name, incoming[i], used[i], in.nodes[i].allocatable});
  }
  std::ranges::sort(plan.nodes,
                    [](const NodeAfter& a, const NodeAfter& b) { return a.node < b.node; });
  return plan;
}

}  // namespace kmt::api
