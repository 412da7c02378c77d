// kube/error_test.cc
#include "kube/error.h"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

namespace kmt::kube {
namespace {

std::string StatusBody(int code, const std::string& reason, const std::string& message) {
  return nlohmann::json{{"kind", "Status"}, {"apiVersion", "v1"}, {"status", "Failure"},
                        {"code", code},     {"reason", reason},   {"message", message}}
      .dump();
}

TEST_CASE("ErrorFromResponse maps every HTTP code to the documented kind") {
  struct Row {
    int code;
    ErrorKind kind;
  };
  const Row row = GENERATE(values<Row>({
      {404, ErrorKind::kNotFound},
      {409, ErrorKind::kConflict},
      {410, ErrorKind::kGone},
      {400, ErrorKind::kInvalid},
      {413, ErrorKind::kInvalid},
      {422, ErrorKind::kInvalid},
      {401, ErrorKind::kUnauthorized},
      {403, ErrorKind::kForbidden},
      {429, ErrorKind::kUnavailable},
      {500, ErrorKind::kUnavailable},
      {502, ErrorKind::kUnavailable},
      {503, ErrorKind::kUnavailable},
      {408, ErrorKind::kTimeout},
      {504, ErrorKind::kTimeout},
      {418, ErrorKind::kInternal},
      {302, ErrorKind::kInternal},
  }));
  CAPTURE(row.code);
  KubeError e =
      ErrorFromResponse(row.code, StatusBody(row.code, "X", "boom"), std::nullopt, "get pods ns/a");
  CHECK(e.kind() == row.kind);
  CHECK(e.http_status() == row.code);
  CHECK(std::string(e.what()) == "get pods ns/a: HTTP " + std::to_string(row.code) + " " +
                                     ErrorKindName(row.kind) + ": boom");
  CHECK(e.status()["reason"] == "X");
}

TEST_CASE("A JSON Patch the server could not apply (failed test op) is a conflict") {
  // The exact Status kube-apiserver sends for a failed `test` operation.
  const std::string body =
      R"({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",)"
      R"("message":"the server rejected our request due to an error in our request",)"
      R"("reason":"Invalid","details":{},"code":422})";
  KubeError e = ErrorFromResponse(422, body, std::nullopt, "patch pods ns/p");
  CHECK(e.kind() == ErrorKind::kConflict);
  CHECK(std::string(e.what()) ==
        "patch pods ns/p: HTTP 422 Conflict: the server rejected our request due to an error in "
        "our request");

  // A validation failure stays terminal.
  KubeError v = ErrorFromResponse(
      422, StatusBody(422, "Invalid", "Pod \"p\" is invalid: spec.affinity: Invalid value"),
      std::nullopt, "patch pods ns/p");
  CHECK(v.kind() == ErrorKind::kInvalid);
}

TEST_CASE("Retry-After comes from the header, else from Status details") {
  KubeError header = ErrorFromResponse(429, "", std::chrono::seconds(7), "list pods");
  CHECK(header.retry_after() == std::chrono::seconds(7));
  CHECK(std::string(header.what()) == "list pods: HTTP 429 Unavailable: empty body");

  const std::string body =
      R"({"kind":"Status","code":500,"reason":"ServerTimeout","message":"try later",)"
      R"("details":{"retryAfterSeconds":3}})";
  KubeError details = ErrorFromResponse(500, body, std::nullopt, "list pods");
  CHECK(details.retry_after() == std::chrono::seconds(3));
  KubeError both = ErrorFromResponse(500, body, std::chrono::seconds(9), "list pods");
  CHECK(both.retry_after() == std::chrono::seconds(9));
  KubeError none = ErrorFromResponse(500, StatusBody(500, "InternalError", "x"), std::nullopt, "l");
  CHECK_FALSE(none.retry_after().has_value());
}

TEST_CASE("Bodies that are not a Status are quoted, shortened, never thrown") {
  KubeError html =
      ErrorFromResponse(502, "<html>\nbad gateway\n</html>", std::nullopt, "get nodes");
  CHECK(html.kind() == ErrorKind::kUnavailable);
  CHECK(html.status().is_null());
  CHECK(std::string(html.what()) == "get nodes: HTTP 502 Unavailable: <html> bad gateway </html>");

  KubeError truncated_json = ErrorFromResponse(500, R"({"kind":"Status","mess)", std::nullopt, "g");
  CHECK(truncated_json.status().is_null());
  CHECK(std::string(truncated_json.what()) == R"(g: HTTP 500 Unavailable: {"kind":"Status","mess)");

  const std::string long_body(1000, 'x');
  KubeError long_error = ErrorFromResponse(500, long_body, std::nullopt, "g");
  CHECK(std::string(long_error.what()) ==
        "g: HTTP 500 Unavailable: " + std::string(200, 'x') + "...");

  // A JSON object that is not a Status (e.g. a Pod from a misrouted proxy).
  KubeError pod = ErrorFromResponse(404, R"({"kind":"Pod"})", std::nullopt, "g");
  CHECK(pod.status().is_null());
  CHECK(pod.kind() == ErrorKind::kNotFound);

  // A Status without a message falls back to its reason.
  KubeError reason_only =
      ErrorFromResponse(403, R"({"kind":"Status","reason":"Forbidden"})", std::nullopt, "g");
  CHECK(std::string(reason_only.what()) == "g: HTTP 403 Forbidden: Forbidden");
}

TEST_CASE("ErrorKindName and IsRetryable") {
  struct Row {
    ErrorKind kind;
    const char* name;
    bool retryable;
  };
  const Row row = GENERATE(values<Row>({
      {ErrorKind::kNotFound, "NotFound", false},
      {ErrorKind::kConflict, "Conflict", false},
      {ErrorKind::kGone, "Gone", false},
      {ErrorKind::kInvalid, "Invalid", false},
      {ErrorKind::kUnauthorized, "Unauthorized", false},
      {ErrorKind::kForbidden, "Forbidden", false},
      {ErrorKind::kUnavailable, "Unavailable", true},
      {ErrorKind::kTimeout, "Timeout", true},
      {ErrorKind::kTransport, "Transport", true},
      {ErrorKind::kConfig, "Config", false},
      {ErrorKind::kTooLarge, "TooLarge", false},
      {ErrorKind::kInternal, "Internal", false},
  }));
  CAPTURE(row.name);
  CHECK(std::string(ErrorKindName(row.kind)) == row.name);
  CHECK(IsRetryable(row.kind) == row.retryable);
}

TEST_CASE("A parsed Status and a watch ERROR event map as the same answer over HTTP would") {
  const nlohmann::json gone = nlohmann::json::parse(R"json({"kind": "Status", "apiVersion": "v1",
      "status": "Failure", "code": 410, "reason": "Expired",
      "message": "too old resource version: 5 (9)"})json");
  const KubeError http = ErrorFromResponse(410, gone.dump(), std::nullopt, "watch pods");
  for (const KubeError& e : {ErrorFromStatus(410, gone, "watch pods"),
                             ErrorFromWatchEvent(gone, "watch pods")}) {
    CHECK(e.kind() == ErrorKind::kGone);
    CHECK(std::string(e.what()) == http.what());
    CHECK(e.http_status() == 410);
  }
  // No code in the event: 500. Not a Status at all: its text is the message.
  const KubeError no_code = ErrorFromWatchEvent(nlohmann::json{{"kind", "Status"}}, "watch pods");
  CHECK(no_code.http_status() == 500);
  const KubeError odd = ErrorFromWatchEvent(nlohmann::json{{"x", 1}}, "watch pods");
  CHECK(std::string(odd.what()) == R"(watch pods: HTTP 500 Unavailable: {"x":1})");
}

}  // namespace
}  // namespace kmt::kube
