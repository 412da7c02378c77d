#include "webhook/vmim_validator.h"

#include <fmt/format.h>

#include <exception>
#include <optional>
#include <string>
#include <vector>

#include "api/added_term.h"
#include "api/names.h"
#include "api/node_match.h"
#include "base/json.h"

namespace kmt::webhook {
namespace {

constexpr std::string_view kKubeVirtAddedNodeSelectorField = "spec.addedNodeSelector";

bool IsVmim(const AdmissionRequest& r) {
  return r.resource.group == "kubevirt.io" &&
         r.resource.resource == "virtualmachineinstancemigrations" && r.sub_resource.empty();
}

bool HasKubeVirtAddedNodeSelector(const Json& vmim) {
  const Json* sel = base::Member(vmim, {"spec", "addedNodeSelector"});
  // An empty map narrows nothing, so it needs no permission.
  return sel != nullptr && sel->is_object() && !sel->empty();
}

const std::string& PolicyFieldPath() {
  static const std::string path = api::KeyPath("metadata.annotations", api::kPolicyAnnotation);
  return path;
}

const std::string& MaxInboundFieldPath() {
  static const std::string path = api::KeyPath("metadata.annotations", api::kMaxInboundAnnotation);
  return path;
}

// The annotation `key` as stored, whatever its JSON type, or nullopt when absent.
std::optional<Json> AnnotationOf(const Json& vmim, std::string_view key) {
  const Json* v = base::Member(vmim, {"metadata", "annotations", key});
  if (v == nullptr) return std::nullopt;
  return *v;
}

// The denial of an annotation only the operator's webhook writes.
AdmissionResponse SetOnlyByOperator(const std::string& field, const std::string& problem) {
  return Denied(403, "Forbidden",
                fmt::format("{} is set only by the operator's webhook: {}", field, problem),
                {api::ForbiddenCause(field, problem)});
}

// The denial of an annotation that may not change once the VMIM exists, when `before` and
// `now` differ; `hint` follows the rule.
template <typename T>
std::optional<AdmissionResponse> ChangedAfterCreate(const std::string& field,
                                                    const std::optional<T>& before,
                                                    const std::optional<T>& now,
                                                    std::string_view hint = "") {
  if (now == before) return std::nullopt;
  const char* what = !before ? "added" : (!now ? "removed" : "changed");
  return Invalid({api::ForbiddenCause(
      field, fmt::format("may not be {} after the VirtualMachineInstanceMigration is created{}",
                         what, hint))});
}

std::optional<std::string> PolicyName(const Json& vmim) {
  const Json* p = base::Member(vmim, {"metadata", "annotations", api::kPolicyAnnotation});
  if (p == nullptr || !p->is_string()) return std::nullopt;
  return p->get<std::string>();
}

// Why the policy annotation on this CREATE is not the operator's own, or "" when it is.
// Throws when the policy cannot be read.
std::string PolicyProvenanceProblem(const AdmissionRequest& req, const std::string& policy,
                                    const std::optional<std::string>& term_text,
                                    const VmimPolicy& options, ClusterView& cluster) {
  if (req.user_info.username != options.virt_controller_username) {
    return fmt::format(
        "only KubeVirt's virt-controller (\"{}\") creates VMIMs the operator "
        "attaches a policy to; user \"{}\" may not",
        options.virt_controller_username, req.user_info.username);
  }
  if (base::Member(req.object, {"metadata", "annotations", api::kAnnotationEvacuationMigration}) ==
      nullptr) {
    return fmt::format("a policy is attached only to evacuation migrations (annotation {})",
                       api::kAnnotationEvacuationMigration);
  }
  if (!term_text) {
    return fmt::format("it comes with the policy's term in {}", api::AddedTermFieldPath());
  }
  const std::optional<Json> obj = cluster.GetPolicy(policy);
  if (!obj) return fmt::format("MigrationTargetPolicy \"{}\" does not exist", policy);
  api::PolicyParse parsed = api::ParsePolicy(*obj);
  if (!parsed.policy) return fmt::format("MigrationTargetPolicy \"{}\" is invalid", policy);
  if (parsed.policy->term_text != *term_text) {
    return fmt::format("the term is not MigrationTargetPolicy \"{}\"'s ({})", policy,
                       parsed.policy->term_text);
  }
  const std::optional<Json> cap = AnnotationOf(req.object, api::kMaxInboundAnnotation);
  const std::optional<int64_t> want = parsed.policy->max_inbound_per_node;
  if (!want && cap) {
    return fmt::format("MigrationTargetPolicy \"{}\" sets no maxInboundPerNode, yet {} is set",
                       policy, api::kMaxInboundAnnotation);
  }
  if (want && (!cap || !cap->is_string() || *cap != std::to_string(*want))) {
    return fmt::format("{} is not MigrationTargetPolicy \"{}\"'s maxInboundPerNode ({})",
                       api::kMaxInboundAnnotation, policy, *want);
  }
  return {};
}

std::string Permission() {
  return fmt::format("\"{}\" on {}.{}", api::kRbacVerb, api::kRbacResource, api::kRbacGroup);
}

std::vector<std::string> PlacementWarnings(const api::NodeSelectorTerm& term,
                                           const AdmissionRequest& req, ClusterView& cluster) {
  NodeList nodes;
  try {
    nodes = cluster.ListNodes();
  } catch (const std::exception& e) {
    return {
        fmt::format("could not list nodes to check the added node selector term: {}", e.what())};
  }
  std::vector<const api::NodeInfo*> matching;
  for (const auto& node : *nodes) {
    if (api::TermMatchesNode(term, node->labels, node->name)) matching.push_back(node.get());
  }
  if (matching.empty()) {
    return {
        "no node matches the added node selector term now; the target pod will stay "
        "Pending until one does"};
  }
  if (matching.size() != 1) return {};
  const std::string vmi = base::StringAt(req.object, {"spec", "vmiName"});
  if (vmi.empty()) return {};
  std::optional<std::string> source;
  try {
    source = cluster.VmiNodeName(req.ns, vmi);
  } catch (const std::exception& e) {
    return {fmt::format("could not read VMI \"{}\" to check the added node selector term: {}", vmi,
                        e.what())};
  }
  if (source && *source == matching.front()->name) {
    return {
        fmt::format("the added node selector term matches only node \"{}\", where VMI "
                    "\"{}\" runs now; the migration cannot be scheduled",
                    *source, vmi)};
  }
  return {};
}

AdmissionResponse ValidateCreate(const AdmissionRequest& req, const VmimValidatorDeps& deps) {
  const std::optional<std::string> text = api::AddedTermSource(req.object);
  const VmimPolicy& policy = deps.policy;
  if (const std::optional<std::string> attached = PolicyName(req.object)) {
    std::string problem;
    try {
      problem = PolicyProvenanceProblem(req, *attached, text, policy, deps.cluster);
    } catch (const std::exception& e) {
      return Errored(500, fmt::format("could not read MigrationTargetPolicy \"{}\" to check {}: {}",
                                      *attached, PolicyFieldPath(), e.what()));
    }
    if (!problem.empty()) return SetOnlyByOperator(PolicyFieldPath(), problem);
    // The operator's own attachment: the term is the policy's, already validated.
    api::AddedTermParse parsed = api::ParseAddedTerm(*text);
    if (!parsed.term) return Invalid(std::move(parsed.causes));
    AdmissionResponse allowed = Allowed();
    allowed.warnings = PlacementWarnings(*parsed.term, req, deps.cluster);
    return allowed;
  }
  if (AnnotationOf(req.object, api::kMaxInboundAnnotation)) {
    return SetOnlyByOperator(
        MaxInboundFieldPath(),
        fmt::format("it comes only with the policy named in {}", PolicyFieldPath()));
  }
  const bool from_virt_api =
      !policy.virt_api_username.empty() && req.user_info.username == policy.virt_api_username;
  const bool kubevirt_selector = policy.check_kubevirt_added_node_selector &&
                                 !(from_virt_api && policy.trust_virt_api_added_node_selector) &&
                                 HasKubeVirtAddedNodeSelector(req.object);
  if (!text && !kubevirt_selector) return Allowed();

  std::vector<std::string> fields;
  if (text) fields.push_back(api::AddedTermFieldPath());
  if (kubevirt_selector) fields.emplace_back(kKubeVirtAddedNodeSelectorField);
  std::string field_list = fields.front();
  if (fields.size() == 2) field_list += " and " + fields.back();

  AccessDecision decision;
  try {
    decision = deps.access.Review({req.user_info, req.ns, std::string(api::kRbacVerb),
                                   std::string(api::kRbacGroup), std::string(api::kRbacResource),
                                   /*path=*/""});
  } catch (const std::exception& e) {
    return Errored(500,
                   fmt::format("could not check whether user \"{}\" may set {} (requires {} "
                               "in namespace \"{}\"): SubjectAccessReview failed: {}",
                               req.user_info.username, field_list, Permission(), req.ns, e.what()));
  }
  if (!decision.allowed) {
    std::string message = PermissionMessage(req.user_info.username, field_list, req.ns);
    if (!decision.reason.empty()) message += fmt::format(" ({})", decision.reason);
    if (!decision.evaluation_error.empty()) {
      message += fmt::format(" (authorization error: {})", decision.evaluation_error);
    }
    if (from_virt_api && kubevirt_selector) {
      message +=
          "; KubeVirt's virt-api created this VMIM for its virtualmachines/migrate subresource "
          "(virtctl migrate --addedNodeSelector) and does not say for whom: create the VMIM "
          "yourself (kubectl migrate), or start the operator with "
          "--trust-virt-api-added-node-selector";
    }
    std::vector<api::Cause> causes;
    causes.reserve(fields.size());
    for (const auto& f : fields) {
      causes.push_back(api::ForbiddenCause(
          f, fmt::format("requires {} in namespace \"{}\"", Permission(), req.ns)));
    }
    return Denied(403, "Forbidden", std::move(message), std::move(causes));
  }

  AdmissionResponse allowed = Allowed();
  if (text) {
    api::AddedTermParse parsed = api::ParseAddedTerm(*text);
    if (!parsed.term) return Invalid(std::move(parsed.causes));
    allowed.warnings = PlacementWarnings(*parsed.term, req, deps.cluster);
  }
  return allowed;
}

AdmissionResponse ValidateUpdate(const AdmissionRequest& req) {
  if (auto denied = ChangedAfterCreate(PolicyFieldPath(), PolicyName(req.old_object),
                                       PolicyName(req.object))) {
    return *denied;
  }
  if (auto denied = ChangedAfterCreate(MaxInboundFieldPath(),
                                       AnnotationOf(req.old_object, api::kMaxInboundAnnotation),
                                       AnnotationOf(req.object, api::kMaxInboundAnnotation))) {
    return *denied;
  }
  if (auto denied = ChangedAfterCreate(
          api::AddedTermFieldPath(), api::AddedTermSource(req.old_object),
          api::AddedTermSource(req.object), "; create a new migration instead")) {
    return *denied;
  }
  return Allowed();
}

}  // namespace

std::string PermissionMessage(const std::string& username, const std::string& fields,
                              const std::string& ns) {
  return fmt::format(R"(user "{}" may not set {}: requires {} in namespace "{}")", username, fields,
                     Permission(), ns);
}

AdmissionResponse ValidateVmim(const AdmissionRequest& request, const VmimValidatorDeps& deps) {
  if (!IsVmim(request)) return Allowed();
  if (request.operation == "CREATE") return ValidateCreate(request, deps);
  if (request.operation == "UPDATE") return ValidateUpdate(request);
  return Allowed();
}

}  // namespace kmt::webhook
