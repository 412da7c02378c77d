// kube/error.cc — the one place that maps HTTP answers to ErrorKind, and kinds to dispositions.
#include "kube/error.h"

#include <fmt/format.h>

#include "base/json.h"

namespace kmt::kube {
namespace {

// kube-apiserver answers a JSON Patch that cannot be applied to the current
// object (a failed `test` op, or a path that no longer exists) with this exact
// generic 422 Status, dropping the patch library's own text; see
// kubernetes/kubernetes staging/src/k8s.io/apiserver/pkg/endpoints/handlers/patch.go
// (applyJSPatch -> errors.NewGenericServerResponse(422, ...)) and
// staging/src/k8s.io/apimachinery/pkg/api/errors/errors.go. Validation errors
// (NewInvalid) carry a different message, so this one is unambiguous: the
// object changed under a guarded patch, which the caller handles like a 409.
constexpr std::string_view kPatchNotApplicable =
    "the server rejected our request due to an error in our request";

ErrorKind KindForStatus(int code, const nlohmann::json& status) {
  switch (code) {
    case 404:
      return ErrorKind::kNotFound;
    case 409:
      return ErrorKind::kConflict;
    case 410:
      return ErrorKind::kGone;
    case 400:
    case 413:
      return ErrorKind::kInvalid;
    case 422:
      if (base::StringAt(status, "message") == kPatchNotApplicable) return ErrorKind::kConflict;
      return ErrorKind::kInvalid;
    case 401:
      return ErrorKind::kUnauthorized;
    case 403:
      return ErrorKind::kForbidden;
    case 408:
    case 504:
      return ErrorKind::kTimeout;
    case 429:
      return ErrorKind::kUnavailable;
    default:
      if (code >= 500 && code <= 599) return ErrorKind::kUnavailable;
      return ErrorKind::kInternal;
  }
}

// A body is a metav1.Status when it is a JSON object of kind Status (the
// API server always sets kind; aggregated or proxied servers sometimes only
// send code/message, which is accepted too).
bool IsStatus(const nlohmann::json& j) {
  if (!j.is_object()) return false;
  return base::StringAt(j, "kind") == "Status" || (j.contains("code") && j.contains("message"));
}

nlohmann::json DecodeStatus(const std::string& body) {
  nlohmann::json j = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  return IsStatus(j) ? j : nlohmann::json(nullptr);
}

// Bodies that are not a Status end up in the message; keep it readable.
std::string Excerpt(const std::string& body) {
  constexpr size_t kMax = 200;
  std::string out;
  for (char c : body.substr(0, kMax)) out += (c == '\n' || c == '\r') ? ' ' : c;
  if (body.size() > kMax) out += "...";
  return out;
}

}  // namespace

const char* ErrorKindName(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::kNotFound:
      return "NotFound";
    case ErrorKind::kConflict:
      return "Conflict";
    case ErrorKind::kGone:
      return "Gone";
    case ErrorKind::kInvalid:
      return "Invalid";
    case ErrorKind::kUnauthorized:
      return "Unauthorized";
    case ErrorKind::kForbidden:
      return "Forbidden";
    case ErrorKind::kUnavailable:
      return "Unavailable";
    case ErrorKind::kTimeout:
      return "Timeout";
    case ErrorKind::kTransport:
      return "Transport";
    case ErrorKind::kConfig:
      return "Config";
    case ErrorKind::kTooLarge:
      return "TooLarge";
    case ErrorKind::kInternal:
      return "Internal";
  }
  return "Unknown";
}

Disposition DispositionOf(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::kNotFound:
      return Disposition::kAbsent;
    case ErrorKind::kConflict:
      return Disposition::kReread;
    case ErrorKind::kGone:
      return Disposition::kRelist;
    case ErrorKind::kInvalid:
    case ErrorKind::kUnauthorized:
    case ErrorKind::kForbidden:
    case ErrorKind::kConfig:
    case ErrorKind::kTooLarge:
      return Disposition::kTerminal;
    case ErrorKind::kUnavailable:
    case ErrorKind::kTimeout:
    case ErrorKind::kTransport:
    case ErrorKind::kInternal:
      return Disposition::kRetry;
  }
  return Disposition::kRetry;
}

const char* DispositionName(Disposition d) {
  switch (d) {
    case Disposition::kRetry:
      return "Retry";
    case Disposition::kReread:
      return "Reread";
    case Disposition::kRelist:
      return "Relist";
    case Disposition::kAbsent:
      return "Absent";
    case Disposition::kTerminal:
      return "Terminal";
  }
  return "Unknown";
}

namespace {

// `status`: the decoded metav1.Status, or null; `body`: the answer as received, for the
// message when there is no Status.
KubeError Build(int http_status, nlohmann::json status, const std::string& body,
                std::optional<std::chrono::seconds> retry_after, const std::string& what) {
  const ErrorKind kind = KindForStatus(http_status, status);
  // client-go's checkWait: only a 429 or a 5xx asks the client to wait.
  const bool may_ask_to_wait = http_status == 429 || (http_status >= 500 && http_status <= 599);
  if (!may_ask_to_wait) retry_after.reset();

  std::string detail;
  if (status.is_object()) {
    detail = base::StringAt(status, "message");
    if (detail.empty()) detail = base::String(status, "reason").value_or("no message");
    if (may_ask_to_wait && !retry_after) {
      const int64_t secs = base::Int(status, {"details", "retryAfterSeconds"}).value_or(0);
      if (secs > 0) retry_after = std::chrono::seconds(secs);
    }
  } else if (!body.empty()) {
    detail = Excerpt(body);
  } else {
    detail = "empty body";
  }
  std::string message =
      fmt::format("{}: HTTP {} {}: {}", what, http_status, ErrorKindName(kind), detail);
  return {kind, message, http_status, std::move(status), retry_after};
}

}  // namespace

KubeError ErrorFromResponse(int http_status, const std::string& body,
                            std::optional<std::chrono::seconds> retry_after,
                            const std::string& what) {
  return Build(http_status, DecodeStatus(body), body, retry_after, what);
}

KubeError ErrorFromStatus(int http_status, const nlohmann::json& status, const std::string& what) {
  if (IsStatus(status)) return Build(http_status, status, "", std::nullopt, what);
  return Build(http_status, nullptr, status.is_null() ? "" : status.dump(), std::nullopt, what);
}

KubeError ErrorFromWatchEvent(const nlohmann::json& object, const std::string& what) {
  // An HTTP status code, or 500 when the event has none (or not as a number of 100..599).
  int code = 500;
  if (const auto c = base::Int(object, "code"); c && *c >= 100 && *c <= 599) {
    code = static_cast<int>(*c);
  }
  return ErrorFromStatus(code, object, what);
}

}  // namespace kmt::kube
