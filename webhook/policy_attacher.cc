#include "webhook/policy_attacher.h"

#include <fmt/format.h>

#include <exception>
#include <string>

#include "api/added_term.h"
#include "api/names.h"
#include "base/json.h"
#include "base/json_patch.h"

namespace kmt::webhook {
namespace {

bool IsVmimCreate(const AdmissionRequest& r) {
  return r.resource.group == "kubevirt.io" &&
         r.resource.resource == "virtualmachineinstancemigrations" && r.sub_resource.empty() &&
         r.operation == "CREATE";
}

}  // namespace

std::optional<std::string> EvacuationSource(const AdmissionRequest& req,
                                            const PolicyAttacherOptions& options) {
  if (!IsVmimCreate(req) || req.user_info.username != options.virt_controller_username) {
    return std::nullopt;
  }
  const Json* node =
      base::Member(req.object, {"metadata", "annotations", api::kAnnotationEvacuationMigration});
  if (node == nullptr || !node->is_string()) return std::nullopt;
  return node->get<std::string>();
}

PolicyChoice ChoosePolicy(const Json& vmim, std::string_view ns, std::string_view source_node,
                          ClusterView& cluster) {
  PolicyChoice choice;
  api::PolicySet set = api::ParsePolicies(cluster.ListPolicies());
  for (const api::SkippedPolicy& s : set.skipped) choice.warnings.push_back(s.Warning());
  if (set.policies.empty()) return choice;

  const std::string vmi_name = base::StringAt(vmim, {"spec", "vmiName"});
  const std::optional<Json> vmi = cluster.GetVmi(ns, vmi_name);
  std::optional<Json> namespace_object;
  if (set.wants_namespace) namespace_object = cluster.GetNamespace(ns);
  Json source_labels;
  const NodeList nodes = cluster.ListNodes();
  for (const auto& n : *nodes) {
    if (n->name == source_node) {
      source_labels = n->labels.ToJson();
      break;
    }
  }
  const api::EvacuationFacts facts = api::EvacuationFactsOf(
      vmi.value_or(Json()), namespace_object.value_or(Json()), source_labels);
  if (const api::MigrationTargetPolicy* p = api::SelectPolicy(set.policies, facts)) {
    choice.winner = *p;
  }
  return choice;
}

AdmissionResponse AttachPolicy(const AdmissionRequest& req, ClusterView& cluster,
                               const PolicyAttacherOptions& options) {
  const std::optional<std::string> source = EvacuationSource(req, options);
  if (!source || api::AddedTermSource(req.object)) return Allowed();
  const std::string ns =
      !req.ns.empty() ? req.ns : base::StringAt(req.object, {"metadata", "namespace"});
  PolicyChoice choice;
  try {
    choice = ChoosePolicy(req.object, ns, *source, cluster);
  } catch (const std::exception& e) {
    return Errored(500,
                   fmt::format("could not choose a MigrationTargetPolicy for the evacuation "
                               "of VMI \"{}\" from node \"{}\": {}",
                               base::StringAt(req.object, {"spec", "vmiName"}), *source, e.what()));
  }
  AdmissionResponse out = Allowed();
  out.warnings = std::move(choice.warnings);
  if (!choice.winner) return out;
  base::JsonPatch patch;
  const Json* annotations = base::Member(req.object, {"metadata", "annotations"});
  if (annotations == nullptr || !annotations->is_object()) {
    patch.Add("/metadata/annotations", Json::object());
  }
  auto annotation = [](std::string_view key) {
    return base::Pointer({"metadata", "annotations", key});
  };
  patch.Add(annotation(api::kAddedTermAnnotation), choice.winner->term_text);
  patch.Add(annotation(api::kPolicyAnnotation), choice.winner->name);
  if (choice.winner->max_inbound_per_node) {
    patch.Add(annotation(api::kMaxInboundAnnotation),
              std::to_string(*choice.winner->max_inbound_per_node));
  }
  out.patch = patch.ToJson();
  return out;
}

AdmissionResponse ValidatePolicy(const AdmissionRequest& req) {
  if (req.resource.group != api::kPolicyGroup || req.resource.resource != api::kPolicyResource ||
      !req.sub_resource.empty() || (req.operation != "CREATE" && req.operation != "UPDATE")) {
    return Allowed();
  }
  api::PolicyParse parsed = api::ParsePolicy(req.object);
  if (!parsed.policy) return Invalid(std::move(parsed.causes));
  return Allowed();
}

}  // namespace kmt::webhook
