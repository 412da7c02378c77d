#include "cli/explain_cmd.h"

#include <algorithm>
#include <optional>
#include <vector>

#include "api/explain.h"
#include "api/projections.h"
#include "base/json.h"
#include "cli/target_model.h"
#include "kube/error.h"
#include "kube/resources.h"

namespace kmt::cli {

using nlohmann::json;

int RunExplain(const std::string& ns, const std::string& vmi_name,
               const std::optional<api::NodeSelectorTerm>& term, kube::KubeClient& client,
               Streams io) {
  try {
    json vmi = client.Get(kube::kVirtualMachineInstances, ns, vmi_name);
    const std::string source_node = base::StringAt(vmi, {"status", "nodeName"});
    std::optional<api::TargetPod> pod = ModelTargetPod(client, ns, vmi, io.err);
    if (!pod) {
      io.err << "error: virtualmachineinstance " << vmi_name << " in namespace " << ns
             << " has no running virt-launcher pod to model the migration target on\n";
      return 1;
    }
    const std::vector<api::NodeInfo> nodes = ListNodeInfos(client);
    const std::vector<api::BoundPod> bound = ListBoundPods(client);
    std::vector<api::NamespaceInfo> namespaces;
    if (api::WantsNamespaces(*pod, bound)) namespaces = ListNamespaceInfos(client, io.err);

    // Its user listed every pod to get here: the texts name them, whatever their namespace.
    api::Explainer explainer(*pod, term ? &*term : nullptr, source_node, nodes, bound, namespaces,
                             api::Disclosure::kEveryNamespace);
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
