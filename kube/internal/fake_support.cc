// kube/internal/fake_support.cc
#include "kube/internal/fake_support.h"

#include <fmt/format.h>

#include <map>

#include "kube/paths.h"

namespace kmt::kube::fake_internal {

Json StatusJson(int code, std::string_view reason, std::string_view message, Json details) {
  return Json{{"kind", "Status"},    {"apiVersion", "v1"}, {"metadata", Json::object()},
              {"status", "Failure"}, {"message", message}, {"reason", reason},
              {"details", details},  {"code", code}};
}

KubeError StatusError(int code, std::string_view reason, std::string_view message,
                      const std::string& what, Json details) {
  return ErrorFromStatus(code, StatusJson(code, reason, message, std::move(details)), what);
}

Json Details(const Resource& r, std::string_view name) {
  Json d{{"name", name}, {"kind", r.resource}};
  if (!r.group.empty()) d["group"] = r.group;
  return d;
}

KubeError NotFound(const Resource& r, std::string_view name, const std::string& what) {
  return StatusError(404, "NotFound",
                     fmt::format("{} \"{}\" not found", GroupResourceName(r), name), what,
                     Details(r, name));
}

KubeError BadRequest(std::string_view message, const std::string& what) {
  return StatusError(400, "BadRequest", message, what);
}

KubeError Conflict(const Resource& r, std::string_view name, std::string_view why,
                   const std::string& what) {
  return StatusError(409, "Conflict",
                     fmt::format("Operation cannot be fulfilled on {} \"{}\": {}",
                                 GroupResourceName(r), name, why),
                     what, Details(r, name));
}

// The HTTP code and Status reason the API server uses for each kind.
std::pair<int, const char*> CanonicalStatus(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::kNotFound:
      return {404, "NotFound"};
    case ErrorKind::kConflict:
      return {409, "Conflict"};
    case ErrorKind::kGone:
      return {410, "Expired"};
    case ErrorKind::kInvalid:
      return {422, "Invalid"};
    case ErrorKind::kUnauthorized:
      return {401, "Unauthorized"};
    case ErrorKind::kForbidden:
      return {403, "Forbidden"};
    case ErrorKind::kUnavailable:
      return {503, "ServiceUnavailable"};
    case ErrorKind::kTimeout:
      return {504, "Timeout"};
    default:
      return {500, "InternalError"};
  }
}

const std::string& MetaString(const Json& obj, const char* field) {
  static const std::string kEmpty;
  auto m = obj.find("metadata");
  if (m == obj.end() || !m->is_object()) return kEmpty;
  auto f = m->find(field);
  if (f == m->end() || !f->is_string()) return kEmpty;
  return f->get_ref<const std::string&>();
}

// Fields the API server accepts in a field selector, beyond metadata.name and
// metadata.namespace (pkg/registry/*/strategy.go ToSelectableFields).
const std::set<std::string>& ExtraSelectableFields(const std::string& group_resource) {
  static const std::map<std::string, std::set<std::string>> kFields = {
      {"pods",
       {"spec.nodeName", "spec.restartPolicy", "spec.schedulerName", "spec.serviceAccountName",
        "status.phase", "status.podIP", "status.nominatedNodeName"}},
      {"nodes", {"spec.unschedulable"}},
      {"events",
       {"involvedObject.kind", "involvedObject.namespace", "involvedObject.name",
        "involvedObject.uid", "involvedObject.apiVersion", "involvedObject.resourceVersion",
        "involvedObject.fieldPath", "reason", "reportingComponent", "source", "type"}},
  };
  static const std::set<std::string> kNone;
  auto it = kFields.find(group_resource);
  return it == kFields.end() ? kNone : it->second;
}

}  // namespace kmt::kube::fake_internal
