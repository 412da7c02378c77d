#include "cli/status_cmd.h"

#include <algorithm>
#include <vector>

#include "api/added_term.h"
#include "base/json.h"
#include "kube/error.h"
#include "kube/resources.h"

namespace kmt::cli {
namespace {

using nlohmann::json;

}  // namespace

int RunStatus(const std::string& ns, const std::string& name, kube::KubeClient& client,
              Streams io) {
  try {
    // Every member is read leniently: absent, null or of another type prints as "".
    json vmim = client.Get(kube::kVirtualMachineInstanceMigrations, ns, name);
    const json& status = base::At(vmim, "status");
    const json& ms = base::At(status, "migrationState");
    const std::string phase = base::StringAt(status, "phase");
    const std::string source = base::StringAt(ms, "sourceNode");
    const std::string target = base::StringAt(ms, "targetNode");
    const std::string failure = base::StringAt(ms, "failureReason");
    io.out << "Name:         " << name << "\n";
    io.out << "Namespace:    " << ns << "\n";
    io.out << "VMI:          " << base::StringAt(vmim, {"spec", "vmiName"}) << "\n";
    io.out << "Phase:        " << (phase.empty() ? "<none>" : phase) << "\n";
    if (!source.empty()) io.out << "Source node:  " << source << "\n";
    if (!target.empty()) io.out << "Target node:  " << target << "\n";
    if (auto term = api::AddedTermSource(vmim)) io.out << "Request:      " << *term << "\n";
    if (!failure.empty()) io.out << "Failure:      " << failure << "\n";
    io.out << "Conditions:\n";
    bool any = false;
    if (const auto conditions = base::Array(status, "conditions")) {
      for (const auto& c : **conditions) {
        any = true;
        const std::string reason = base::StringAt(c, "reason");
        const std::string message = base::StringAt(c, "message");
        io.out << "  " << base::StringAt(c, "type") << "=" << base::StringAt(c, "status");
        if (!reason.empty()) io.out << " (" << reason << ")";
        if (!message.empty()) io.out << ": " << message;
        io.out << "\n";
      }
    }
    if (!any) io.out << "  <none>\n";

    kube::ListOptions lo;
    lo.field_selector =
        "involvedObject.name=" + name + ",involvedObject.kind=VirtualMachineInstanceMigration";
    json events = client.List(kube::kEvents, ns, lo);
    std::vector<json> items;
    if (const auto listed = base::Array(events, "items")) {
      for (const auto& e : **listed) items.push_back(e);
    }
    auto when = [](const json& e) {
      std::string t = base::StringAt(e, "lastTimestamp");
      if (t.empty()) t = base::StringAt(e, "eventTime");
      return t;
    };
    std::ranges::stable_sort(items,
                             [&](const json& a, const json& b) { return when(a) < when(b); });
    if (items.size() > 10) items.erase(items.begin(), items.end() - 10);
    io.out << "Events:\n";
    if (items.empty()) io.out << "  <none>\n";
    for (const auto& e : items) {
      io.out << "  " << base::StringAt(e, "type") << "  " << base::StringAt(e, "reason") << "  "
             << base::StringAt(e, {"source", "component"}) << "  " << base::StringAt(e, "message")
             << "\n";
    }
    return 0;
  } catch (const kube::KubeError& e) {
    io.err << FormatKubeError(e) << "\n";
    return 1;
  }
}

}  // namespace kmt::cli
