#include "webhook/policy_attacher.h"

#include <fmt/format.h>

#include <exception>
#include <string>

#include "api/added_term.h"
#include "api/names.h"
#include "webhook/json_access.h"

namespace kmt::webhook {
namespace {

bool IsVmimCreate(const AdmissionRequest& r) {
  return r.resource.group == "kubevirt.io" &&
         r.resource.resource == "virtualmachineinstancemigrations" && r.sub_resource.empty() &&
         r.operation == "CREATE";
}

// "/" and "~" escaped for a JSON Pointer token (RFC 6901).
std::string PointerToken(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (c == '~') {
      out += "~0";
    } else if (c == '/') {
      out += "~1";
    } else {
      out += c;
    }
  }
  return out;
}

Json Labels(const std::optional<Json>& obj) {
  if (!obj) return nullptr;
  const Json* labels = Member(*obj, {"metadata", "labels"});
  return labels != nullptr ? *labels : Json(nullptr);
}

}  // namespace

std::optional<std::string> EvacuationSource(const AdmissionRequest& req,
                                            const PolicyAttacherOptions& options) {
  if (!IsVmimCreate(req) || req.user_info.username != options.virt_controller_username) {
    return std::nullopt;
  }
  const Json* node =
      Member(req.object, {"metadata", "annotations", api::kAnnotationEvacuationMigration});
  if (node == nullptr || !node->is_string()) return std::nullopt;
  return node->get<std::string>();
}

PolicyChoice ChoosePolicy(const Json& vmim, std::string_view ns, std::string_view source_node,
                          ClusterView& cluster) {
  PolicyChoice choice;
  std::vector<api::MigrationTargetPolicy> policies;
  bool wants_namespace = false;
  for (const Json& obj : cluster.ListPolicies()) {
    api::PolicyParse parsed = api::ParsePolicy(obj);
    if (!parsed.policy) {
      const std::string name = StringAt(obj, {"metadata", "name"});
      choice.warnings.push_back(fmt::format(
          "MigrationTargetPolicy \"{}\" is skipped: {}", name,
          parsed.causes.empty() ? std::string("invalid") : api::ToString(parsed.causes.front())));
      continue;
    }
    wants_namespace = wants_namespace || parsed.policy->namespace_selector.has_value();
    policies.push_back(std::move(*parsed.policy));
  }
  if (policies.empty()) return choice;

  api::EvacuationFacts facts;
  const std::string vmi_name = StringAt(vmim, {"spec", "vmiName"});
  const std::optional<Json> vmi = cluster.GetVmi(ns, vmi_name);
  facts.vmi_labels = Labels(vmi);
  facts.descheduler =
      vmi && StringAt(*vmi, {"metadata", "annotations", api::kAnnotationEvictionSource}) ==
                 api::kEvictionSourceDescheduler;
  if (wants_namespace) facts.namespace_labels = Labels(cluster.GetNamespace(ns));
  const NodeList nodes = cluster.ListNodes();
  for (const auto& n : *nodes) {
    if (n->name == source_node) {
      facts.source_node_labels = n->labels.ToJson();
      break;
    }
  }
  if (const api::MigrationTargetPolicy* p = api::SelectPolicy(policies, facts)) {
    choice.winner = *p;
  }
  return choice;
}

AdmissionResponse AttachPolicy(const AdmissionRequest& req, ClusterView& cluster,
                               const PolicyAttacherOptions& options) {
  const std::optional<std::string> source = EvacuationSource(req, options);
  if (!source || api::AddedTermSource(req.object)) return Allowed();
  const std::string ns = !req.ns.empty() ? req.ns : StringAt(req.object, {"metadata", "namespace"});
  PolicyChoice choice;
  try {
    choice = ChoosePolicy(req.object, ns, *source, cluster);
  } catch (const std::exception& e) {
    return Errored(500, fmt::format("could not choose a MigrationTargetPolicy for the evacuation "
                                    "of VMI \"{}\" from node \"{}\": {}",
                                    StringAt(req.object, {"spec", "vmiName"}), *source, e.what()));
  }
  AdmissionResponse out = Allowed();
  out.warnings = std::move(choice.warnings);
  if (!choice.winner) return out;
  Json patch = Json::array();
  const Json* annotations = Member(req.object, {"metadata", "annotations"});
  if (annotations == nullptr || !annotations->is_object()) {
    patch.push_back({{"op", "add"}, {"path", "/metadata/annotations"}, {"value", Json::object()}});
  }
  const std::string base = "/metadata/annotations/";
  patch.push_back({{"op", "add"},
                   {"path", base + PointerToken(api::kAddedTermAnnotation)},
                   {"value", choice.winner->term_text}});
  patch.push_back({{"op", "add"},
                   {"path", base + PointerToken(api::kPolicyAnnotation)},
                   {"value", choice.winner->name}});
  out.patch = std::move(patch);
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
