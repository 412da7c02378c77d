#include "webhook/admission.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <exception>
#include <string>
#include <string_view>
#include <utility>

#include "base/json_filter.h"
#include "kube/base64.h"

namespace kmt::webhook {
namespace {

// Reads typed members of the untrusted review. The first problem wins and is kept in
// `error`; later reads become no-ops, so decoding stays a straight line.
class Reader {
 public:
  bool ok() const { return error_.empty(); }
  const std::string& error() const { return error_; }

  void Fail(std::string message) {
    if (error_.empty()) error_ = std::move(message);
  }

  // Absent and null read as "" (Go's zero value); any other non-string fails.
  std::string String(const Json& obj, const char* key, const std::string& path) {
    if (!ok()) return {};
    auto it = obj.find(key);
    if (it == obj.end() || it->is_null()) return {};
    if (!it->is_string()) {
      Fail(fmt::format("{}.{} must be a string", path, key));
      return {};
    }
    return it->get<std::string>();
  }

  // Absent and null read as an empty object; other non-objects fail.
  const Json& Object(const Json& obj, const char* key, const std::string& path) {
    static const Json kEmpty = Json::object();
    if (!ok()) return kEmpty;
    auto it = obj.find(key);
    if (it == obj.end() || it->is_null()) return kEmpty;
    if (!it->is_object()) {
      Fail(fmt::format("{}.{} must be an object", path, key));
      return kEmpty;
    }
    return *it;
  }

  std::vector<std::string> StringList(const Json& value, const std::string& path) {
    std::vector<std::string> out;
    if (!ok() || value.is_null()) return out;
    if (!value.is_array()) {
      Fail(fmt::format("{} must be an array of strings", path));
      return out;
    }
    for (size_t i = 0; i < value.size(); ++i) {
      if (!value[i].is_string()) {
        Fail(fmt::format("{}[{}] must be a string", path, i));
        return {};
      }
      out.push_back(value[i].get<std::string>());
    }
    return out;
  }

  bool Bool(const Json& obj, const char* key, const std::string& path) {
    if (!ok()) return false;
    auto it = obj.find(key);
    if (it == obj.end() || it->is_null()) return false;
    if (!it->is_boolean()) {
      Fail(fmt::format("{}.{} must be a boolean", path, key));
      return false;
    }
    return it->get<bool>();
  }

  // object / oldObject / options: any JSON object, absent or null → null. Moved out of
  // `obj` (the review is discarded after decoding; a pod is worth not copying).
  Json Embedded(Json& obj, const char* key, const std::string& path) {
    if (!ok() || !obj.is_object()) return nullptr;
    auto it = obj.find(key);
    if (it == obj.end() || it->is_null()) return nullptr;
    if (!it->is_object()) {
      Fail(fmt::format("{}.{} must be an object", path, key));
      return nullptr;
    }
    return std::move(*it);
  }

 private:
  std::string error_;
};

UserInfo ReadUserInfo(Reader& r, const Json& request) {
  const std::string path = "request.userInfo";
  const Json& u = r.Object(request, "userInfo", "request");
  UserInfo info;
  info.username = r.String(u, "username", path);
  info.uid = r.String(u, "uid", path);
  auto groups = u.find("groups");
  if (groups != u.end()) info.groups = r.StringList(*groups, path + ".groups");
  const Json& extra = r.Object(u, "extra", path);
  for (const auto& [key, values] : extra.items()) {
    if (!r.ok()) break;
    info.extra[key] = r.StringList(values, fmt::format("{}.extra[{}]", path, key));
  }
  return info;
}

Json CauseJson(const api::Cause& c) {
  Json j = Json::object();
  if (!c.type.empty()) j["reason"] = c.type;
  if (!c.message.empty()) j["message"] = c.message;
  if (!c.field.empty()) j["field"] = c.field;
  return j;
}

}  // namespace

AdmissionResponse Allowed() {
  AdmissionResponse r;
  r.allowed = true;
  return r;
}

AdmissionResponse Denied(int code, std::string reason, std::string message,
                         std::vector<api::Cause> causes) {
  AdmissionResponse r;
  r.allowed = false;
  r.status = AdmissionStatus{code, std::move(reason), std::move(message), std::move(causes)};
  return r;
}

AdmissionResponse Invalid(std::vector<api::Cause> causes) {
  // field.Error.Error() is "<field>: <body>"; utilerrors.NewAggregate brackets a list.
  std::string message;
  if (causes.size() == 1) {
    message = api::ToString(causes.front());
  } else {
    message = "[";
    for (size_t i = 0; i < causes.size(); ++i) {
      if (i > 0) message += ", ";
      message += api::ToString(causes[i]);
    }
    message += "]";
  }
  return Denied(422, "Invalid", std::move(message), std::move(causes));
}

AdmissionResponse Errored(int code, std::string message) {
  std::string reason = code >= 500 ? "InternalError" : "BadRequest";
  return Denied(code, std::move(reason), std::move(message));
}

JsonShape MeasureJson(std::string_view text, size_t depth_limit, size_t node_limit) {
  // One pass over the text. Inside a string only the closing quote matters, so the scan
  // jumps from quote to quote with memchr (the body is mostly strings) and looks back over
  // the run of backslashes before each: an odd run means the quote is escaped.
  const char* p = text.data();
  const char* const end = p + text.size();
  size_t depth = 0;
  JsonShape shape;
  while (p < end) {
    const char c = *p++;
    switch (c) {
      case '"':
        if (++shape.nodes > node_limit) return shape;
        for (;;) {
          const char* q = static_cast<const char*>(std::memchr(p, '"', end - p));
          if (q == nullptr) return shape;  // unterminated: the parser says so
          const char* b = q;
          while (b > p && b[-1] == '\\') --b;
          p = q + 1;
          if ((q - b) % 2 == 0) break;
        }
        break;
      case '[':
      case '{':
        if (++shape.nodes > node_limit) return shape;
        if (++depth > shape.depth) {
          shape.depth = depth;
          if (shape.depth > depth_limit) return shape;
        }
        break;
      case ']':
      case '}':
        if (depth > 0) --depth;
        break;
      case ',':
        if (++shape.nodes > node_limit) return shape;
        break;
      default:
        break;
    }
  }
  return shape;
}

size_t JsonNestingDepth(std::string_view text, size_t limit) {
  return MeasureJson(text, limit, static_cast<size_t>(-1)).depth;
}

namespace {

// A review's DOM as nlohmann's own parser builds it (base/json_filter.h), except that
// request.object's and request.oldObject's members outside `reads` are never built (with no
// `reads`, every member is).
class KeptMembers final : public base::JsonFilter {
 public:
  explicit KeptMembers(const ObjectReads* reads) : reads_(reads) {}

  // What a filtered container is: the review, its request, or an object read through `reads`.
  enum Kind : int { kReview, kRequest, kReads };

  Verdict Member(const base::JsonScope& in, std::string_view key) override {
    switch (in.kind) {
      case kReview:
        return key == "request" ? Verdict::Filter({kRequest}) : Verdict::Whole();
      case kRequest:
        return reads_ != nullptr && (key == "object" || key == "oldObject")
                   ? Verdict::Filter({kReads, &reads_->root()})
                   : Verdict::Whole();
      default:
        break;
    }
    return ObjectReads::Member(*static_cast<const ObjectReads::Node*>(in.data), key, kReads);
  }
  // An array read through a node: each element is read through it too.
  Verdict Element(const base::JsonScope& in) override {
    return in.kind == kReads ? Verdict::Filter(in) : Verdict::Whole();
  }

 private:
  const ObjectReads* reads_;
};

}  // namespace

DecodeResult DecodeAdmissionReview(std::string_view body, const ObjectReads* reads) {
  DecodeResult result;
  const JsonShape shape = MeasureJson(body, kMaxJsonDepth, kMaxJsonNodes);
  result.json_nodes = shape.nodes;
  if (shape.depth > kMaxJsonDepth) {
    result.error = fmt::format("AdmissionReview nests deeper than {} levels", kMaxJsonDepth);
    return result;
  }
  if (shape.nodes > kMaxJsonNodes) {
    result.error = fmt::format(
        "AdmissionReview has more than {} JSON nodes (objects, arrays, strings, elements)",
        kMaxJsonNodes);
    return result;
  }
  // Through the filter even with nothing left out: its parser builds a DOM faster than
  // nlohmann's and fails with nlohmann's message.
  KeptMembers kept(reads);
  std::string error;
  Json review = base::ParseFiltered(
      body, kept, base::JsonFilter::Verdict::Filter({KeptMembers::kReview}), &error);
  if (review.is_discarded()) {
    result.error = fmt::format("AdmissionReview is not valid JSON: {}", error);
    return result;
  }
  if (!review.is_object()) {
    result.error = "AdmissionReview must be a JSON object";
    return result;
  }

  Reader r;
  // The uid first: every later failure can still be answered with it.
  const Json& request = r.Object(review, "request", "AdmissionReview");
  std::string uid = r.String(request, "uid", "request");
  if (r.ok()) result.uid = uid;

  std::string api_version = r.String(review, "apiVersion", "AdmissionReview");
  std::string kind = r.String(review, "kind", "AdmissionReview");
  if (r.ok() && api_version != kAdmissionApiVersion) {
    r.Fail(fmt::format(R"(unsupported AdmissionReview apiVersion "{}", want "{}")", api_version,
                       kAdmissionApiVersion));
  }
  if (r.ok() && kind != kAdmissionReviewKind) {
    r.Fail(fmt::format(R"(AdmissionReview kind is "{}", want "{}")", kind, kAdmissionReviewKind));
  }
  if (r.ok() && (review.find("request") == review.end() || request.empty())) {
    r.Fail("AdmissionReview has no request");
  }
  if (r.ok() && uid.empty()) r.Fail("request.uid is missing");

  AdmissionRequest req;
  req.uid = uid;
  const Json& kind_obj = r.Object(request, "kind", "request");
  req.kind.group = r.String(kind_obj, "group", "request.kind");
  req.kind.version = r.String(kind_obj, "version", "request.kind");
  req.kind.kind = r.String(kind_obj, "kind", "request.kind");
  const Json& resource = r.Object(request, "resource", "request");
  req.resource.group = r.String(resource, "group", "request.resource");
  req.resource.version = r.String(resource, "version", "request.resource");
  req.resource.resource = r.String(resource, "resource", "request.resource");
  req.sub_resource = r.String(request, "subResource", "request");
  req.name = r.String(request, "name", "request");
  req.ns = r.String(request, "namespace", "request");
  req.operation = r.String(request, "operation", "request");
  req.user_info = ReadUserInfo(r, request);
  req.dry_run = r.Bool(request, "dryRun", "request");
  // The embedded objects last, moved out of the review (`request` is read no more).
  Json absent;
  auto it = review.find("request");
  Json& owned = it != review.end() && it->is_object() ? *it : absent;
  req.object = r.Embedded(owned, "object", "request");
  req.old_object = r.Embedded(owned, "oldObject", "request");
  req.options = r.Embedded(owned, "options", "request");
  if (r.ok() && req.operation.empty()) r.Fail("request.operation is missing");

  if (!r.ok()) {
    result.error = r.error();
    return result;
  }
  result.request = std::move(req);
  return result;
}

Json EncodeAdmissionReview(const AdmissionResponse& response) {
  Json resp = Json::object();
  resp["uid"] = response.uid;
  resp["allowed"] = response.allowed;
  if (response.status) {
    const AdmissionStatus& s = *response.status;
    Json status = Json::object();
    status["status"] = response.allowed ? "Success" : "Failure";
    if (s.code != 0) status["code"] = s.code;
    if (!s.reason.empty()) status["reason"] = s.reason;
    if (!s.message.empty()) status["message"] = s.message;
    if (!s.causes.empty()) {
      Json causes = Json::array();
      for (const auto& c : s.causes) causes.push_back(CauseJson(c));
      status["details"] = {{"causes", std::move(causes)}};
    }
    resp["status"] = std::move(status);
  }
  if (!response.warnings.empty()) resp["warnings"] = response.warnings;
  if (response.patch) {
    resp["patchType"] = "JSONPatch";
    // Replace rather than throw on invalid UTF-8: a patch is built from decoded JSON, so
    // this only guards against a bug, never against input.
    resp["patch"] =
        kube::EncodeBase64(response.patch->dump(-1, ' ', false, Json::error_handler_t::replace));
  }
  return Json{{"apiVersion", kAdmissionApiVersion},
              {"kind", kAdmissionReviewKind},
              {"response", std::move(resp)}};
}

namespace {

// A JSON string as nlohmann's dump(-1, ' ', false, replace) writes it: printable ASCII as it
// is, anything else (escapes, UTF-8, invalid bytes replaced by U+FFFD) by nlohmann itself.
void AppendJsonString(std::string& out, std::string_view s) {
  const bool plain = std::ranges::all_of(s, [](char ch) {
    const auto c = static_cast<unsigned char>(ch);
    return c >= 0x20 && c < 0x80 && c != '"' && c != '\\';
  });
  if (plain) {
    out += '"';
    out += s;
    out += '"';
    return;
  }
  out += Json(std::string(s)).dump(-1, ' ', false, Json::error_handler_t::replace);
}

// `"key":` after a comma unless it is the first member.
void AppendKey(std::string& out, bool& first, std::string_view key) {
  if (!first) out += ',';
  first = false;
  out += '"';
  out += key;
  out += "\":";
}

// `"key":"value"` unless the value is empty (the members the DOM sets only when non-empty).
void AppendNonEmpty(std::string& out, bool& first, std::string_view key, std::string_view value) {
  if (value.empty()) return;
  AppendKey(out, first, key);
  AppendJsonString(out, value);
}

}  // namespace

std::string EncodeAdmissionReviewText(const AdmissionResponse& response) {
  // The members in the order nlohmann's objects keep them: by name.
  std::string out = R"({"apiVersion":")";
  out += kAdmissionApiVersion;
  out += R"(","kind":")";
  out += kAdmissionReviewKind;
  out += R"(","response":{"allowed":)";
  out += response.allowed ? "true" : "false";
  if (response.patch) {
    out += R"(,"patch":")";
    out += kube::EncodeBase64(response.patch->dump(-1, ' ', false, Json::error_handler_t::replace));
    out += R"(","patchType":"JSONPatch")";
  }
  if (response.status) {
    const AdmissionStatus& s = *response.status;
    out += R"(,"status":{)";
    bool first = true;
    if (s.code != 0) {
      AppendKey(out, first, "code");
      out += std::to_string(s.code);
    }
    if (!s.causes.empty()) {
      AppendKey(out, first, "details");
      out += R"({"causes":[)";
      for (size_t i = 0; i < s.causes.size(); ++i) {
        const api::Cause& c = s.causes[i];
        if (i > 0) out += ',';
        out += '{';
        bool first_member = true;
        AppendNonEmpty(out, first_member, "field", c.field);
        AppendNonEmpty(out, first_member, "message", c.message);
        AppendNonEmpty(out, first_member, "reason", c.type);
        out += '}';
      }
      out += "]}";
    }
    AppendNonEmpty(out, first, "message", s.message);
    AppendNonEmpty(out, first, "reason", s.reason);
    AppendKey(out, first, "status");
    out += response.allowed ? R"("Success")" : R"("Failure")";
    out += '}';
  }
  out += R"(,"uid":)";
  AppendJsonString(out, response.uid);
  if (!response.warnings.empty()) {
    out += R"(,"warnings":[)";
    for (size_t i = 0; i < response.warnings.size(); ++i) {
      if (i > 0) out += ',';
      AppendJsonString(out, response.warnings[i]);
    }
    out += ']';
  }
  out += "}}";
  return out;
}

}  // namespace kmt::webhook
