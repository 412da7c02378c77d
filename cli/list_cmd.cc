#include "cli/list_cmd.h"

#include <map>
#include <optional>
#include <vector>

#include "api/added_term.h"
#include "api/names.h"
#include "api/node_selector.h"
#include "base/json.h"
#include "cli/duration.h"
#include "cli/printer.h"
#include "kube/credentials.h"
#include "kube/error.h"
#include "kube/paging.h"
#include "kube/resources.h"

namespace kmt::cli {
namespace {

using nlohmann::json;

const std::string kNone = "<none>";

std::string OrNone(const std::string& s) { return s.empty() ? kNone : s; }

// A table cell stays on its line.
std::string OneLine(std::string s) {
  for (char& c : s) {
    if (c == '\n' || c == '\t') c = ' ';
  }
  return s;
}

// The VMIM's condition of `type`, or nullptr.
const json* Condition(const json& vmim, std::string_view type) {
  const json* conditions = base::Member(vmim, {"status", "conditions"});
  if (conditions == nullptr || !conditions->is_array()) return nullptr;
  for (const auto& c : *conditions) {
    if (base::StringAt(c, {"type"}) == type) return &c;
  }
  return nullptr;
}

std::string ConditionStatus(const json& vmim, std::string_view type) {
  const json* c = Condition(vmim, type);
  return c == nullptr ? kNone : OrNone(base::StringAt(*c, {"status"}));
}

// Why a placed migration is held, if it is.
std::string HeldBecause(const json& vmim) {
  if (const json* c = Condition(vmim, api::kConditionTargetPodUnschedulable);
      c != nullptr && base::StringAt(*c, {"status"}) == "True") {
    return OrNone(base::StringAt(*c, {"message"}));
  }
  if (const json* c = Condition(vmim, api::kConditionTermApplied);
      c != nullptr && base::StringAt(*c, {"status"}) == "False") {
    return OrNone(base::StringAt(*c, {"message"}));
  }
  return kNone;
}

std::string Term(const std::string& annotation) {
  auto parsed = api::ParseAddedTerm(annotation);
  return parsed.term ? api::ToString(*parsed.term) : "<invalid>";
}

// What the target pods say about their migrations, by VMIM uid: KubeVirt copies the VMI's
// migrationState into the VMIM only once the migration has ended, so while it is in flight
// the pod (labelled kubevirt.io/migrationJobUID) is where the chosen node shows.
struct TargetPod {
  std::string name;
  std::string node;
};

std::map<std::string, TargetPod> TargetPods(kube::KubeClient& client, const std::string& ns) {
  std::map<std::string, TargetPod> out;
  kube::ListOptions lo;
  lo.label_selector = std::string(api::kLabelMigrationJobUID);
  lo.omit_managed_fields = true;
  json pods = kube::ListAll(client, kube::kPods, ns, lo);
  for (const auto& pod : base::At(pods, "items")) {
    const json* labels = base::Member(pod, {"metadata", "labels"});
    if (labels == nullptr) continue;
    const std::string uid = base::StringAt(*labels, {api::kLabelMigrationJobUID});
    TargetPod& t = out[uid];
    const std::string node = base::StringAt(pod, {"spec", "nodeName"});
    // A bound pod wins over one the scheduler has not placed (or that replaced it).
    if (t.name.empty() || (t.node.empty() && !node.empty())) {
      t = {base::StringAt(pod, {"metadata", "name"}), node};
    }
  }
  return out;
}

// The node each VMI runs on now, by "namespace/name": the source of a migration in flight.
std::map<std::string, std::string> VmiNodes(kube::KubeClient& client, const std::string& ns) {
  std::map<std::string, std::string> out;
  kube::ListOptions lo;
  lo.omit_managed_fields = true;
  json vmis = kube::ListAll(client, kube::kVirtualMachineInstances, ns, lo);
  for (const auto& vmi : base::At(vmis, "items")) {
    out[base::StringAt(vmi, {"metadata", "namespace"}) + "/" +
        base::StringAt(vmi, {"metadata", "name"})] = base::StringAt(vmi, {"status", "nodeName"});
  }
  return out;
}

std::string FirstOf(const std::string& a, const std::string& b) { return a.empty() ? b : a; }

std::string Age(const json& vmim, std::chrono::system_clock::time_point now) {
  auto created = kube::ParseRfc3339(base::StringAt(vmim, {"metadata", "creationTimestamp"}));
  if (!created) return "<unknown>";
  return HumanAge(now - *created);
}

}  // namespace

int RunList(const Invocation& inv, const std::string& ns, kube::KubeClient& client, Streams io,
            std::chrono::system_clock::time_point now) {
  json list;
  try {
    list = kube::ListAll(client, kube::kVirtualMachineInstanceMigrations,
                         inv.all_namespaces ? "" : ns);
  } catch (const kube::KubeError& e) {
    io.err << FormatKubeError(e) << "\n";
    return 1;
  }
  std::vector<json> placed;
  for (auto& item : list["items"]) {
    if (!api::AddedTermSource(item)) continue;
    // Items of a LIST may come without their kind; the printers need it.
    item["apiVersion"] = "kubevirt.io/v1";
    item["kind"] = "VirtualMachineInstanceMigration";
    placed.push_back(std::move(item));
  }

  if (inv.output == "json" || inv.output == "yaml") {
    json out = {{"apiVersion", "v1"},
                {"kind", "List"},
                {"metadata", {{"resourceVersion", ""}}},
                {"items", placed}};
    io.out << (inv.output == "json" ? out.dump(4) + "\n" : ToYaml(out));
    return 0;
  }
  if (placed.empty()) {
    if (inv.all_namespaces) {
      io.err << "No placed migrations found.\n";
    } else {
      io.err << "No placed migrations found in " << ns << " namespace.\n";
    }
    return 0;
  }
  if (inv.output == "name") {
    for (const auto& m : placed) io.out << ResourceName(m) << "\n";
    return 0;
  }

  const bool wide = inv.output == "wide";
  const std::string scope = inv.all_namespaces ? "" : ns;
  // Best effort: without the right to read pods (or VMIs) the columns fall back to what the
  // VMIM itself says.
  std::map<std::string, TargetPod> targets;
  std::map<std::string, std::string> vmi_nodes;
  try {
    targets = TargetPods(client, scope);
    if (wide) vmi_nodes = VmiNodes(client, scope);
  } catch (const kube::KubeError&) {
    // ignored: the columns fall back to what the VMIM says, as above.
  }
  std::vector<std::vector<std::string>> rows;
  std::vector<std::string> header = {"NAME", "VMI",     "PHASE",         "TERM",
                                     "NODE", "APPLIED", "UNSCHEDULABLE", "AGE"};
  if (inv.all_namespaces) header.insert(header.begin(), "NAMESPACE");
  if (wide) header.insert(header.end(), {"SOURCE", "TARGET POD", "MESSAGE"});
  rows.push_back(std::move(header));
  for (const auto& m : placed) {
    const TargetPod& pod = targets[base::StringAt(m, {"metadata", "uid"})];
    const std::string vmi_key =
        base::StringAt(m, {"metadata", "namespace"}) + "/" + base::StringAt(m, {"spec", "vmiName"});
    std::vector<std::string> row = {
        base::StringAt(m, {"metadata", "name"}),
        OrNone(base::StringAt(m, {"spec", "vmiName"})),
        OrNone(base::StringAt(m, {"status", "phase"})),
        Term(*api::AddedTermSource(m)),
        OrNone(FirstOf(base::StringAt(m, {"status", "migrationState", "targetNode"}), pod.node)),
        ConditionStatus(m, api::kConditionTermApplied),
        ConditionStatus(m, api::kConditionTargetPodUnschedulable),
        Age(m, now),
    };
    if (inv.all_namespaces) row.insert(row.begin(), base::StringAt(m, {"metadata", "namespace"}));
    if (wide) {
      row.push_back(OrNone(FirstOf(base::StringAt(m, {"status", "migrationState", "sourceNode"}),
                                   vmi_nodes[vmi_key])));
      row.push_back(
          OrNone(FirstOf(base::StringAt(m, {"status", "migrationState", "targetPod"}), pod.name)));
      row.push_back(OneLine(HeldBecause(m)));
    }
    rows.push_back(std::move(row));
  }
  io.out << RenderTable(rows);
  return 0;
}

}  // namespace kmt::cli
