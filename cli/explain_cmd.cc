#include "cli/explain_cmd.h"

#include <algorithm>
#include <optional>
#include <vector>

#include "api/added_term.h"
#include "api/explain.h"
#include "api/names.h"
#include "api/projections.h"
#include "api/term_and.h"
#include "kube/error.h"
#include "kube/paging.h"
#include "kube/reads.h"
#include "kube/resources.h"

namespace kmt::cli {
namespace {

using nlohmann::json;

// Every item of a paged LIST (kube::ListAll follows the continue tokens).
std::vector<json> Items(kube::KubeClient& client, const kube::Resource& r, const std::string& ns,
                        kube::ListOptions opts = {}) {
  opts.omit_managed_fields = true;                 // projected for the explainer: never read
  json list = kube::ListAll(client, r, ns, opts);  // items is an array
  std::vector<json> items;
  for (auto& it : list["items"]) {
    if (it.is_object()) items.push_back(std::move(it));
  }
  return items;
}

// The VM's running pod may be the target pod of an earlier placed migration: its
// required affinity then carries that migration's added term, which the next target pod
// (rendered from the VMI again) will not. Returns that term, to take out with
// api::WithoutTerm; nullopt when the pod was not placed that way (or the VMIM is gone,
// which is noted on `err`).
std::optional<api::NodeSelectorTerm> EarlierAddedTerm(const json& pod, kube::KubeClient& client,
                                                      const std::string& ns, std::ostream& err) {
  if (kube::Member(pod, {"metadata", "labels", api::kLabelMigrationJobUID}) == nullptr) {
    return std::nullopt;
  }
  const std::string job =
      kube::StringAt(pod, {"metadata", "annotations", api::kAnnotationMigrationJobName});
  std::optional<json> vmim;
  if (!job.empty())
    vmim = kube::GetIfExists(client, kube::kVirtualMachineInstanceMigrations, ns, job);
  if (!vmim) {
    err << "note: the VM's pod was created by migration " << (job.empty() ? "<unknown>" : job)
        << ", which no longer exists; its node affinity may still include that migration's "
           "request\n";
    return std::nullopt;
  }
  auto text = api::AddedTermSource(*vmim);
  if (!text) return std::nullopt;
  return api::ParseAddedTerm(*text).term;
}

}  // namespace

int RunExplain(const std::string& ns, const std::string& vmi_name,
               const std::optional<api::NodeSelectorTerm>& term, kube::KubeClient& client,
               Streams io) {
  try {
    json vmi = client.Get(kube::kVirtualMachineInstances, ns, vmi_name);
    const std::string uid = kube::StringAt(vmi, {"metadata", "uid"});
    const std::string source_node = kube::StringAt(vmi, {"status", "nodeName"});
    kube::ListOptions lo;
    lo.label_selector = std::string(api::kLabelApp) + "=" + std::string(api::kLabelAppValue) + "," +
                        std::string(api::kLabelCreatedBy) + "=" + uid;
    std::vector<json> launchers = Items(client, kube::kPods, ns, lo);
    // The pod the VM runs in now: on the VMI's node and not finished.
    json* model = nullptr;
    for (auto& p : launchers) {
      const std::string phase = kube::StringAt(p, {"status", "phase"});
      if (!source_node.empty() && kube::StringAt(p, {"spec", "nodeName"}) == source_node &&
          phase != "Succeeded" && phase != "Failed") {
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
    if (auto earlier = EarlierAddedTerm(*model, client, ns, io.err)) {
      pod.required_affinity = api::WithoutTerm(pod.required_affinity, *earlier);
    }

    std::vector<api::NodeInfo> nodes;
    for (const auto& n : Items(client, kube::kNodes, "")) {
      nodes.push_back(api::NodeInfo::FromJson(n));
    }
    kube::ListOptions bound_opts;
    bound_opts.field_selector = std::string(api::kBoundPodsFieldSelector);
    std::vector<api::BoundPod> bound;
    for (const auto& p : Items(client, kube::kPods, "", bound_opts)) {
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
