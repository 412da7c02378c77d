#include "webhook/shell.h"

#include <catch2/catch.hpp>
#include <stdexcept>
#include <string>

namespace kmt::webhook {
namespace {

const char* kReview = R"({"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview",)"
                      R"("request":{"uid":"u-1","operation":"CREATE","namespace":"ns1"}})";

AdmissionResponse Allow(const AdmissionRequest&) { return Allowed(); }

TEST_CASE("MediaType keeps the type and drops parameters") {
  auto [in, out] = GENERATE(table<std::string, std::string>({
      {"application/json", "application/json"},
      {"Application/JSON; charset=utf-8", "application/json"},
      {"  application/json ;", "application/json"},
      {"text/plain", "text/plain"},
      {"", ""},
      {"application/jsonx", "application/jsonx"},
  }));
  CAPTURE(in);
  CHECK(MediaType(in) == out);
}

TEST_CASE("ServeAdmission answers the shell's errors with a Status") {
  struct Row {
    const char* name;
    std::string content_type;
    std::string body;
    int status;
    std::string reason;
    std::string message;
  };
  auto row = GENERATE(values<Row>({
      {"empty", "application/json", "", 400, "BadRequest", "request body is empty"},
      {"empty and wrong type", "text/plain", "", 400, "BadRequest", "request body is empty"},
      {"no content type", "", kReview, 415, "UnsupportedMediaType",
       "contentType=\"\", expected application/json"},
      {"json-patch", "application/json-patch+json", kReview, 415, "UnsupportedMediaType",
       "contentType=\"application/json-patch+json\", expected application/json"},
      {"not an object", "application/json", "42", 400, "BadRequest",
       "AdmissionReview must be a JSON object"},
  }));
  CAPTURE(row.name);
  ShellAnswer a = ServeAdmission(row.content_type, row.body, Allow);
  CHECK(a.http_status == row.status);
  CHECK(Json::parse(a.body) == Json{{"kind", "Status"},
                                    {"apiVersion", "v1"},
                                    {"metadata", Json::object()},
                                    {"status", "Failure"},
                                    {"message", row.message},
                                    {"reason", row.reason},
                                    {"code", row.status}});
}

TEST_CASE("ServeAdmission echoes the request uid whatever the admitter says") {
  ShellAnswer a = ServeAdmission("application/json", kReview, [](const AdmissionRequest& r) {
    AdmissionResponse resp = Denied(403, "Forbidden", "no " + r.ns);
    resp.uid = "something-else";
    return resp;
  });
  CHECK(a.http_status == 200);
  CHECK(Json::parse(a.body)["response"] == Json::parse(R"({"uid":"u-1","allowed":false,
      "status":{"status":"Failure","code":403,"reason":"Forbidden","message":"no ns1"}})"));
}

TEST_CASE("ServeAdmission turns exceptions into a 500 admission response") {
  ShellAnswer a = ServeAdmission(
      "application/json", kReview,
      [](const AdmissionRequest&) -> AdmissionResponse { throw std::out_of_range("index 3"); });
  CHECK(a.http_status == 200);
  CHECK(Json::parse(a.body)["response"] == Json::parse(R"({"uid":"u-1","allowed":false,
      "status":{"status":"Failure","code":500,"reason":"InternalError",
                "message":"internal error: index 3"}})"));
}

TEST_CASE("ServeAdmission never emits invalid UTF-8") {
  // A message quoting a truncated multi-byte character (as a capped value might).
  ShellAnswer a = ServeAdmission("application/json", kReview, [](const AdmissionRequest&) {
    return Denied(422, "Invalid", std::string("bad \xe2\x82"));
  });
  CHECK(a.http_status == 200);
  CHECK(Json::parse(a.body)["response"]["status"]["message"] == "bad \xef\xbf\xbd");
}

}  // namespace
}  // namespace kmt::webhook
