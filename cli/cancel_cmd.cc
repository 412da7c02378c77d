#include "cli/cancel_cmd.h"

#include <optional>

#include "api/names.h"
#include "base/json.h"
#include "cli/printer.h"
#include "kube/error.h"
#include "kube/resources.h"

namespace kmt::cli {
namespace {

using nlohmann::json;

// KubeVirt's VirtualMachineInstanceMigration.IsFinal().
bool HasEnded(const json& vmim) {
  const std::string phase = base::StringAt(vmim, {"status", "phase"});
  return phase == "Succeeded" || phase == "Failed";
}

}  // namespace

int RunCancel(const Invocation& inv, const std::string& ns, kube::KubeClient& client, Streams io) {
  try {
    std::optional<json> target;
    if (inv.vmi) {
      kube::ListOptions lo;
      lo.label_selector = std::string(api::kLabelMigrationVmiName) + "==" + *inv.vmi;
      json list = client.List(kube::kVirtualMachineInstanceMigrations, ns, lo);
      if (const json* items = base::Member(list, {"items"});
          items != nullptr && items->is_array()) {
        for (const auto& item : *items) {
          if (HasEnded(item)) continue;
          target = item;
          break;
        }
      }
      if (!target) {
        io.err << "error: found no migration to cancel for virtualmachineinstance \"" << *inv.vmi
               << "\" in namespace \"" << ns << "\"\n";
        return 1;
      }
    } else {
      target = client.Get(kube::kVirtualMachineInstanceMigrations, ns, inv.name);
      if (HasEnded(*target)) {
        io.err << "error: migration " << inv.name << " has already "
               << base::StringAt(*target, {"status", "phase"}) << "; there is nothing to cancel\n";
        return 1;
      }
    }
    // A LIST answer's items carry no kind on some servers; the printer names the resource.
    (*target)["apiVersion"] = "kubevirt.io/v1";
    (*target)["kind"] = "VirtualMachineInstanceMigration";
    const std::string name = base::StringAt(*target, {"metadata", "name"});
    if (inv.dry_run == DryRun::kClient) {
      io.out << Render(*target, inv.output, "cancelled", " (dry run)");
      return 0;
    }
    kube::DeleteOptions opts;
    if (std::string uid = base::StringAt(*target, {"metadata", "uid"}); !uid.empty()) {
      opts.precondition_uid = uid;
    }
    opts.dry_run = inv.dry_run == DryRun::kServer;
    json answer = client.Delete(kube::kVirtualMachineInstanceMigrations, ns, name, opts);
    // KubeVirt's finalizer keeps the VMIM until virt-controller has aborted the migration: the
    // answer is then the VMIM with its deletionTimestamp, which -o yaml|json shows.
    if (base::StringAt(answer, {"kind"}) == "VirtualMachineInstanceMigration") target = answer;
    io.out << Render(*target, inv.output, "cancelled",
                     inv.dry_run == DryRun::kServer ? " (server dry run)" : "");
    return 0;
  } catch (const kube::KubeError& e) {
    io.err << FormatKubeError(e) << "\n";
    return 1;
  }
}

}  // namespace kmt::cli
