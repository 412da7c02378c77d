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

TEST_CASE("ErrorKindName and the one disposition of every kind") {
  struct Row {
    ErrorKind kind;
    const char* name;
    Disposition disposition;
  };
  const Row row = GENERATE(values<Row>({
      {ErrorKind::kNotFound, "NotFound", Disposition::kAbsent},
      {ErrorKind::kConflict, "Conflict", Disposition::kReread},
      {ErrorKind::kGone, "Gone", Disposition::kRelist},
      {ErrorKind::kInvalid, "Invalid", Disposition::kTerminal},
      {ErrorKind::kUnauthorized, "Unauthorized", Disposition::kTerminal},
      {ErrorKind::kForbidden, "Forbidden", Disposition::kTerminal},
      {ErrorKind::kUnavailable, "Unavailable", Disposition::kRetry},
      {ErrorKind::kTimeout, "Timeout", Disposition::kRetry},
      {ErrorKind::kTransport, "Transport", Disposition::kRetry},
      {ErrorKind::kConfig, "Config", Disposition::kTerminal},
      {ErrorKind::kTooLarge, "TooLarge", Disposition::kTerminal},
      {ErrorKind::kInternal, "Internal", Disposition::kRetry},
  }));
  CAPTURE(row.name);
  CHECK(std::string(ErrorKindName(row.kind)) == row.name);
  CHECK(DispositionOf(row.kind) == row.disposition);
  CHECK(DispositionOf(KubeError(row.kind, "x")) == row.disposition);
  // Only a retry waits for the server's Retry-After.
  const KubeError asked(row.kind, "x", 0, nullptr, std::chrono::seconds(3));
  CHECK(asked.retry_after().has_value() == (row.disposition == Disposition::kRetry));
  CHECK(std::string(DispositionName(row.disposition)) != "Unknown");
}

TEST_CASE("Retry-After counts only on a 429 or 5xx, as client-go's checkWait") {
  struct Row {
    int code;
    bool kept;
  };
  const Row row = GENERATE(values<Row>({
      {429, true},
      {500, true},
      {503, true},
      {504, true},
      {409, false},
      {404, false},
      {422, false},
      {403, false},
      {408, false},
      {410, false},
  }));
  CAPTURE(row.code);
  const std::string body = R"({"kind":"Status","code":)" + std::to_string(row.code) +
                           R"(,"reason":"X","message":"m","details":{"retryAfterSeconds":4}})";
  KubeError header = ErrorFromResponse(row.code, "", std::chrono::seconds(7), "get pods ns/a");
  KubeError details = ErrorFromResponse(row.code, body, std::nullopt, "get pods ns/a");
  if (row.kept) {
    CHECK(header.retry_after() == std::chrono::seconds(7));
    CHECK(details.retry_after() == std::chrono::seconds(4));
    CHECK(DispositionOf(header) == Disposition::kRetry);
  } else {
    CHECK_FALSE(header.retry_after().has_value());
    CHECK_FALSE(details.retry_after().has_value());
  }
}

TEST_CASE("A parsed Status and a watch ERROR event map as the same answer over HTTP would") {
  const nlohmann::json gone = nlohmann::json::parse(R"json({"kind": "Status", "apiVersion": "v1",
      "status": "Failure", "code": 410, "reason": "Expired",
      "message": "too old resource version: 5 (9)"})json");
  const KubeError http = ErrorFromResponse(410, gone.dump(), std::nullopt, "watch pods");
  for (const KubeError& e :
       {ErrorFromStatus(410, gone, "watch pods"), ErrorFromWatchEvent(gone, "watch pods")}) {
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

TEST_CASE("Statuses of odd shapes give an error value, never an exception") {
  struct Row {
    const char* json;
    int code;  // what the event's code reads as
    ErrorKind kind;
  };
  const Row row = GENERATE(values<Row>({
      {R"({"kind":"Status","code":"410","message":"too old"})", 500, ErrorKind::kUnavailable},
      {R"({"kind":"Status","code":410.5,"message":"too old"})", 500, ErrorKind::kUnavailable},
      {R"({"kind":"Status","code":-1,"message":"x"})", 500, ErrorKind::kUnavailable},
      {R"({"kind":"Status","code":null})", 500, ErrorKind::kUnavailable},
      {R"({"kind":"Status","code":[410]})", 500, ErrorKind::kUnavailable},
      {R"({"kind":"Status","code":422,"message":5})", 422, ErrorKind::kInvalid},
      {R"({"kind":"Status","code":422,"message":null,"reason":7})", 422, ErrorKind::kInvalid},
      {R"({"kind":"Status","code":429,"details":"x"})", 429, ErrorKind::kUnavailable},
      {R"({"kind":"Status","code":429,"details":{"retryAfterSeconds":"3"}})", 429,
       ErrorKind::kUnavailable},
      {R"({"kind":5,"code":404,"message":"gone"})", 404, ErrorKind::kNotFound},
      {R"(["Status"])", 500, ErrorKind::kUnavailable},
      {R"("Status")", 500, ErrorKind::kUnavailable},
      {R"(null)", 500, ErrorKind::kUnavailable},
  }));
  CAPTURE(row.json);
  const nlohmann::json j = nlohmann::json::parse(row.json);
  const KubeError event = ErrorFromWatchEvent(j, "watch pods");
  CHECK(event.http_status() == row.code);
  CHECK(event.kind() == row.kind);
  CHECK_FALSE(event.retry_after().has_value());
  // The same bodies over HTTP.
  const KubeError http = ErrorFromResponse(row.code, j.dump(), std::nullopt, "get pods");
  CHECK(http.kind() == row.kind);
  CHECK(std::string(http.what()).rfind("get pods: HTTP ", 0) == 0);
}

}  // namespace
}  // namespace kmt::kube
