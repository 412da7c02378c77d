#include "webhook/vmim_validator.h"

#include <fmt/format.h>

#include <exception>
#include <optional>
#include <string>
#include <vector>

#include "api/added_term.h"
#include "api/names.h"
#include "api/node_match.h"
#include "webhook/json_access.h"

namespace kmt::webhook {
namespace {

constexpr std::string_view kKubeVirtAddedNodeSelectorField = "spec.addedNodeSelector";

bool IsVmim(const AdmissionRequest& r) {
  return r.resource.group == "kubevirt.io" &&
         r.resource.resource == "virtualmachineinstancemigrations" && r.sub_resource.empty();
}

bool HasKubeVirtAddedNodeSelector(const Json& vmim) {
  const Json* sel = Member(vmim, {"spec", "addedNodeSelector"});
  // An empty map narrows nothing, so it needs no permission.
  return sel != nullptr && sel->is_object() && !sel->empty();
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
  const std::string vmi = StringAt(req.object, {"spec", "vmiName"});
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
                                   std::string(api::kRbacGroup), std::string(api::kRbacResource)});
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
  const std::optional<std::string> now = api::AddedTermSource(req.object);
  const std::optional<std::string> before = api::AddedTermSource(req.old_object);
  if (now == before) return Allowed();
  const char* what = !before ? "added" : (!now ? "removed" : "changed");
  return Invalid({api::ForbiddenCause(
      api::AddedTermFieldPath(),
      fmt::format("may not be {} after the VirtualMachineInstanceMigration is created; create "
                  "a new migration instead",
                  what))});
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
