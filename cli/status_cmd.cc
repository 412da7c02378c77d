#include "cli/status_cmd.h"

#include <algorithm>
#include <vector>

#include "api/added_term.h"
#include "kube/error.h"
#include "kube/resources.h"

namespace kmt::cli {
namespace {

using nlohmann::json;

std::string Str(const json& obj, const char* key) {
  if (!obj.is_object() || !obj.contains(key) || !obj[key].is_string()) return {};
  return obj[key].get<std::string>();
}

}  // namespace

int RunStatus(const std::string& ns, const std::string& name, kube::KubeClient& client,
              Streams io) {
  try {
    json vmim = client.Get(kube::kVirtualMachineInstanceMigrations, ns, name);
    json status = vmim.value("status", json::object());
    json ms = status.value("migrationState", json::object());
    io.out << "Name:         " << name << "\n";
    io.out << "Namespace:    " << ns << "\n";
    io.out << "VMI:          " << Str(vmim.value("spec", json::object()), "vmiName") << "\n";
    io.out << "Phase:        " << (Str(status, "phase").empty() ? "<none>" : Str(status, "phase"))
           << "\n";
    if (!Str(ms, "sourceNode").empty()) io.out << "Source node:  " << Str(ms, "sourceNode") << "\n";
    if (!Str(ms, "targetNode").empty()) io.out << "Target node:  " << Str(ms, "targetNode") << "\n";
    if (auto term = api::AddedTermSource(vmim)) io.out << "Request:      " << *term << "\n";
    if (!Str(ms, "failureReason").empty()) {
      io.out << "Failure:      " << Str(ms, "failureReason") << "\n";
    }
    io.out << "Conditions:\n";
    bool any = false;
    if (status.contains("conditions") && status["conditions"].is_array()) {
      for (const auto& c : status["conditions"]) {
        any = true;
        io.out << "  " << Str(c, "type") << "=" << Str(c, "status");
        if (!Str(c, "reason").empty()) io.out << " (" << Str(c, "reason") << ")";
        if (!Str(c, "message").empty()) io.out << ": " << Str(c, "message");
        io.out << "\n";
      }
    }
    if (!any) io.out << "  <none>\n";

    kube::ListOptions lo;
    lo.field_selector =
        "involvedObject.name=" + name + ",involvedObject.kind=VirtualMachineInstanceMigration";
    json events = client.List(kube::kEvents, ns, lo);
    std::vector<json> items;
    if (events.contains("items") && events["items"].is_array()) {
      for (const auto& e : events["items"]) items.push_back(e);
    }
    auto when = [](const json& e) {
      std::string t = Str(e, "lastTimestamp");
      if (t.empty()) t = Str(e, "eventTime");
      return t;
    };
    std::stable_sort(items.begin(), items.end(),
                     [&](const json& a, const json& b) { return when(a) < when(b); });
    if (items.size() > 10) items.erase(items.begin(), items.end() - 10);
    io.out << "Events:\n";
    if (items.empty()) io.out << "  <none>\n";
    for (const auto& e : items) {
      io.out << "  " << Str(e, "type") << "  " << Str(e, "reason") << "  "
             << Str(e.value("source", json::object()), "component") << "  " << Str(e, "message")
             << "\n";
    }
    return 0;
  } catch (const kube::KubeError& e) {
    io.err << FormatKubeError(e) << "\n";
    return 1;
  }
}

}  // namespace kmt::cli
