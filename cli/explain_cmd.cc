#include "cli/explain_cmd.h"

#include <algorithm>
#include <vector>

#include "api/explain.h"
#include "api/names.h"
#include "api/projections.h"
#include "kube/error.h"
#include "kube/resources.h"

namespace kmt::cli {
namespace {

using nlohmann::json;

// Every item of a paged LIST.
std::vector<json> ListAll(kube::KubeClient& client, const kube::Resource& r, const std::string& ns,
                          kube::ListOptions opts) {
  std::vector<json> items;
  opts.limit = 500;
  do {
    json page = client.List(r, ns, opts);
    if (page.contains("items") && page["items"].is_array()) {
      for (auto& it : page["items"]) items.push_back(std::move(it));
    }
    opts.continue_token.clear();
    if (page.contains("metadata") && page["metadata"].is_object()) {
      opts.continue_token = page["metadata"].value("continue", std::string());
    }
  } while (!opts.continue_token.empty());
  return items;
}

}  // namespace

int RunExplain(const std::string& ns, const std::string& vmi_name,
               const std::optional<api::NodeSelectorTerm>& term, kube::KubeClient& client,
               Streams io) {
  try {
    json vmi = client.Get(kube::kVirtualMachineInstances, ns, vmi_name);
    std::string uid = vmi["metadata"].value("uid", std::string());
    std::string source_node;
    if (vmi.contains("status") && vmi["status"].is_object()) {
      source_node = vmi["status"].value("nodeName", std::string());
    }
    kube::ListOptions lo;
    lo.label_selector = std::string(api::kLabelApp) + "=" + std::string(api::kLabelAppValue) + "," +
                        std::string(api::kLabelCreatedBy) + "=" + uid;
    std::vector<json> launchers = ListAll(client, kube::kPods, ns, lo);
    const json* model = nullptr;
    for (const auto& p : launchers) {
      const json& spec = p.value("spec", json::object());
      bool is_target = p.contains("metadata") && p["metadata"].contains("labels") &&
                       p["metadata"]["labels"].contains(std::string(api::kLabelMigrationJobUID));
      if (!is_target && spec.value("nodeName", std::string()) == source_node &&
          !source_node.empty()) {
        model = &p;
        break;
      }
    }
    if (model == nullptr) {
      io.err << "error: virtualmachineinstance " << vmi_name << " in namespace " << ns
             << " has no running virt-launcher pod to model the migration target on\n";
      return 1;
    }
    api::TargetPod pod = api::TargetPod::FromJson(*model);

    std::vector<api::NodeInfo> nodes;
    for (const auto& n : ListAll(client, kube::kNodes, "", {})) {
      nodes.push_back(api::NodeInfo::FromJson(n));
    }
    kube::ListOptions bound_opts;
    bound_opts.field_selector = "status.phase!=Succeeded,status.phase!=Failed";
    std::vector<api::BoundPod> bound;
    for (const auto& p : ListAll(client, kube::kPods, "", bound_opts)) {
      api::BoundPod b = api::BoundPod::FromJson(p);
      if (!b.node_name.empty()) bound.push_back(std::move(b));
    }

    api::Explainer explainer(pod, term ? &*term : nullptr, source_node, nodes, bound);
    auto all = explainer.ExplainAll();
    size_t width = 4;
    size_t allowed = 0, fits = 0;
    for (const auto& e : all) {
      if (!e.allowed_by_term) continue;
      ++allowed;
      width = std::max(width, e.node.size());
    }
    if (allowed == 0) {
      io.out << "No node matches the request";
      if (term) io.out << " (" << api::ToString(*term) << ")";
      io.out << ".\n";
      return 1;
    }
    io.out << "NODE" << std::string(width - 4 + 3, ' ') << "VERDICT\n";
    for (const auto& e : all) {
      if (!e.allowed_by_term) continue;
      io.out << e.node << std::string(width - e.node.size() + 3, ' ');
      if (e.fits()) {
        ++fits;
        io.out << "fits\n";
        continue;
      }
      for (size_t i = 0; i < e.reasons.size(); ++i) {
        io.out << (i ? "; " : "") << e.reasons[i].text;
      }
      io.out << "\n";
    }
    io.out << fits << " of " << allowed << " node" << (allowed == 1 ? "" : "s")
           << (term ? " allowed by the request" : "") << " would take virtualmachineinstance "
           << vmi_name << ".\n";
    return fits > 0 ? 0 : 1;
  } catch (const kube::KubeError& e) {
    io.err << FormatKubeError(e) << "\n";
    return 1;
  }
}

}  // namespace kmt::cli
