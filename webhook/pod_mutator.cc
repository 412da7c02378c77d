#include "webhook/pod_mutator.h"

#include <fmt/format.h>

#include <exception>
#include <optional>
#include <string>

#include "api/cause.h"
#include "api/names.h"
#include "api/term_and.h"
#include "base/json.h"
#include "base/json_patch.h"

namespace kmt::webhook {
namespace {

bool IsPodCreate(const AdmissionRequest& r) {
  return r.resource.group.empty() && r.resource.resource == "pods" && r.sub_resource.empty() &&
         r.operation == "CREATE";
}

// The patch that adds the gate, or nullopt when the pod already has it.
std::optional<Json> GatePatch(const Json& pod) {
  const Json gate = {{"name", api::kSchedulingGate}};
  const Json* spec = base::Member(pod, {"spec"});
  base::JsonPatch patch;
  if (spec == nullptr || spec->is_null()) {
    // No spec to add the list to: add the spec ("add" also replaces a null member).
    return patch.Add("/spec", {{"schedulingGates", Json::array({gate})}}).ToJson();
  }
  const Json* gates = base::Member(pod, {"spec", "schedulingGates"});
  if (gates == nullptr || !gates->is_array()) {
    // Absent or null: create the list ("add" also replaces a null member).
    return patch.Add("/spec/schedulingGates", Json::array({gate})).ToJson();
  }
  if (api::PodHasGate(pod, api::kSchedulingGate)) return std::nullopt;
  return patch.Add("/spec/schedulingGates/-", gate).ToJson();
}

}  // namespace

const ObjectReads& TargetPodReads() {
  static const ObjectReads reads{{"metadata", "labels"},
                                 {"metadata", "annotations"},
                                 {"metadata", "namespace"},
                                 {"spec", "schedulingGates"},
                                 {"spec", "nodeName"}};
  return reads;
}

AdmissionResponse MutateTargetPod(const AdmissionRequest& req, ClusterView& cluster) {
  if (!IsPodCreate(req)) return Allowed();
  const Json& pod = req.object;
  const Json* labels = base::Member(pod, {"metadata", "labels"});
  if (labels == nullptr) return Allowed();
  if (base::StringAt(*labels, {api::kLabelApp}) != api::kLabelAppValue) return Allowed();
  const Json* uid_label = base::Member(*labels, {api::kLabelMigrationJobUID});
  if (uid_label == nullptr) return Allowed();
  const std::string job_uid = uid_label->is_string() ? uid_label->get<std::string>() : "";

  const std::string ns = !req.ns.empty() ? req.ns : base::StringAt(pod, {"metadata", "namespace"});
  const std::string name =
      base::StringAt(pod, {"metadata", "annotations", api::kAnnotationMigrationJobName});
  if (name.empty()) {
    return Denied(
        400, "BadRequest",
        fmt::format("migration target pod (label {}=\"{}\") has no annotation {}: "
                    "cannot check its VirtualMachineInstanceMigration for an added "
                    "node selector term",
                    api::kLabelMigrationJobUID, job_uid, api::kAnnotationMigrationJobName));
  }

  std::optional<MigrationRef> vmim;
  try {
    vmim = cluster.GetMigrationRef(ns, name, job_uid);
  } catch (const std::exception& e) {
    return Errored(500, fmt::format("could not read VirtualMachineInstanceMigration {}/{} to check "
                                    "its target pod for an added node selector term: {}",
                                    ns, name, e.what()));
  }
  if (!vmim) {
    return Denied(404, "NotFound",
                  fmt::format("VirtualMachineInstanceMigration {}/{} of this migration target pod "
                              "does not exist: refusing a target pod whose migration cannot be "
                              "checked for an added node selector term",
                              ns, name));
  }
  const std::string& vmim_uid = vmim->uid;
  if (vmim_uid != job_uid) {
    return Denied(409, "Conflict",
                  fmt::format("migration target pod belongs to VirtualMachineInstanceMigration "
                              "uid \"{}\" (label {}), but {}/{} has uid \"{}\": refusing a stale "
                              "or foreign target pod",
                              job_uid, api::kLabelMigrationJobUID, ns, name, vmim_uid));
  }
  if (!vmim->has_added_term) return Allowed();

  const Json* spec = base::Member(pod, {"spec"});
  if (spec != nullptr && !spec->is_null() && !spec->is_object()) {
    return Denied(400, "BadRequest",
                  fmt::format("migration target pod of VirtualMachineInstanceMigration {}/{} has a "
                              "spec that is not an object: cannot add the scheduling gate {}",
                              ns, name, api::kSchedulingGate));
  }
  const std::string node_name = base::StringAt(pod, {"spec", "nodeName"});
  if (!node_name.empty()) {
    return Invalid({api::ForbiddenCause(
        "spec.nodeName",
        fmt::format("a migration target pod whose VirtualMachineInstanceMigration {}/{} carries "
                    "an added node selector term must go through the scheduler (it gets the "
                    "scheduling gate {})",
                    ns, name, api::kSchedulingGate))});
  }
  AdmissionResponse allowed = Allowed();
  allowed.patch = GatePatch(pod);
  return allowed;
}

}  // namespace kmt::webhook
