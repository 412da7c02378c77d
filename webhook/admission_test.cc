#include "webhook/admission.h"

#include <catch2/catch.hpp>
#include <string>
#include <vector>

namespace kmt::webhook {
namespace {

const char* kFullReview = R"({
  "apiVersion": "admission.k8s.io/v1",
  "kind": "AdmissionReview",
  "request": {
    "uid": "705ab4f5-6393-11e8-b7cc-42010a800002",
    "kind": {"group": "kubevirt.io", "version": "v1", "kind": "VirtualMachineInstanceMigration"},
    "resource": {"group": "kubevirt.io", "version": "v1",
                 "resource": "virtualmachineinstancemigrations"},
    "subResource": "",
    "requestKind": {"group": "kubevirt.io", "version": "v1", "kind": "VirtualMachineInstanceMigration"},
    "name": "mig-1",
    "namespace": "ns1",
    "operation": "UPDATE",
    "userInfo": {
      "username": "admin",
      "uid": "014fbff9a07c",
      "groups": ["system:authenticated", "admins"],
      "extra": {"scopes.example.com": ["a", "b"]}
    },
    "object": {"metadata": {"name": "mig-1"}},
    "oldObject": {"metadata": {"name": "mig-1", "labels": {"x": "y"}}},
    "dryRun": true,
    "options": {"kind": "UpdateOptions", "apiVersion": "meta.k8s.io/v1"}
  }
})";

TEST_CASE("DecodeAdmissionReview reads every member of a v1 request") {
  DecodeResult d = DecodeAdmissionReview(kFullReview);
  REQUIRE(d.error.empty());
  REQUIRE(d.request.has_value());
  const AdmissionRequest& r = *d.request;
  CHECK(d.uid == "705ab4f5-6393-11e8-b7cc-42010a800002");
  CHECK(r.uid == "705ab4f5-6393-11e8-b7cc-42010a800002");
  CHECK(r.kind == GroupVersionKind{"kubevirt.io", "v1", "VirtualMachineInstanceMigration"});
  CHECK(r.resource ==
        GroupVersionResource{"kubevirt.io", "v1", "virtualmachineinstancemigrations"});
  CHECK(r.sub_resource.empty());
  CHECK(r.name == "mig-1");
  CHECK(r.ns == "ns1");
  CHECK(r.operation == "UPDATE");
  CHECK(r.user_info == UserInfo{"admin",
                                "014fbff9a07c",
                                {"system:authenticated", "admins"},
                                {{"scopes.example.com", {"a", "b"}}}});
  CHECK(r.object == Json::parse(R"({"metadata": {"name": "mig-1"}})"));
  CHECK(r.old_object == Json::parse(R"({"metadata": {"name": "mig-1", "labels": {"x": "y"}}})"));
  CHECK(r.dry_run);
  CHECK(r.options["kind"] == "UpdateOptions");
}

TEST_CASE("DecodeAdmissionReview treats absent and null members as Go's zero values") {
  DecodeResult d = DecodeAdmissionReview(
      R"({"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview",)"
      R"("request":{"uid":"u1","operation":"CREATE","oldObject":null,"userInfo":{"groups":null},)"
      R"("dryRun":null}})");
  REQUIRE(d.request.has_value());
  CHECK(d.request->old_object.is_null());
  CHECK(d.request->object.is_null());
  CHECK(d.request->user_info == UserInfo{});
  CHECK_FALSE(d.request->dry_run);
  CHECK(d.request->ns.empty());
}

TEST_CASE("DecodeAdmissionReview with ObjectReads builds only the members the admitter reads") {
  const ObjectReads reads{{"metadata", "labels"}, {"spec", "nodeName"}, {"spec", "gates"}};
  const Json review = Json::parse(R"({
    "apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
    "request": {
      "uid": "u1", "operation": "UPDATE", "namespace": "ns1",
      "kind": {"group": "", "version": "v1", "kind": "Pod"},
      "userInfo": {"username": "admin", "groups": ["g1"], "extra": {"k": ["v"]}},
      "object": {
        "metadata": {"name": "p", "labels": {"a": "1", "b": {"deep": [1, 2.5, -3, true, null]}},
                     "managedFields": [{"manager": "m"}]},
        "spec": {"containers": [{"name": "c", "env": [{"name": "X", "value": "Y"}]}],
                 "nodeName": "n1", "gates": [{"name": "g"}], "volumes": {"v": {"x": 1}}},
        "status": {"phase": "Pending"}
      },
      "oldObject": {"metadata": {"labels": {"a": "0"}}, "spec": null, "kind": "Pod"},
      "options": {"kind": "UpdateOptions"}
    }
  })");
  DecodeResult d = DecodeAdmissionReview(review.dump(), &reads);
  REQUIRE(d.request.has_value());
  const AdmissionRequest& r = *d.request;
  // Listed paths whole; their prefixes as objects of the listed members; nothing else.
  CHECK(r.object == Json::parse(R"({
    "metadata": {"labels": {"a": "1", "b": {"deep": [1, 2.5, -3, true, null]}}},
    "spec": {"nodeName": "n1", "gates": [{"name": "g"}]}})"));
  CHECK(r.object["metadata"]["labels"]["b"]["deep"][0].is_number_unsigned());
  CHECK(r.object["metadata"]["labels"]["b"]["deep"][2].is_number_integer());
  // A prefix whose value is not an object is kept as it is.
  CHECK(r.old_object == Json::parse(R"({"metadata": {"labels": {"a": "0"}}, "spec": null})"));
  // The envelope is decoded whole.
  CHECK(r.uid == "u1");
  CHECK(r.user_info == UserInfo{"admin", "", {"g1"}, {{"k", {"v"}}}});
  CHECK(r.options == Json::parse(R"({"kind": "UpdateOptions"})"));
  CHECK(r.kind == GroupVersionKind{"", "v1", "Pod"});

  // Without reads: everything, as before.
  DecodeResult all = DecodeAdmissionReview(review.dump());
  REQUIRE(all.request.has_value());
  CHECK(all.request->object == review["request"]["object"]);
}

TEST_CASE("DecodeAdmissionReview with ObjectReads decides as the whole parse does") {
  const ObjectReads reads{{"metadata", "labels"}};
  // A repeated member: the last value wins, as in nlohmann's DOM.
  DecodeResult dup = DecodeAdmissionReview(
      R"({"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u1",)"
      R"("operation":"CREATE","object":{"metadata":{"labels":{"a":"1"},"labels":{"a":"2"}}}}})",
      &reads);
  REQUIRE(dup.request.has_value());
  CHECK(dup.request->object == Json::parse(R"({"metadata":{"labels":{"a":"2"}}})"));
  // Bad JSON, also inside a skipped member, fails with nlohmann's own message.
  for (const std::string& body :
       {std::string(R"({"apiVersion":"admission.k8s.io/v1","request":{"uid":"u1",)"
                    R"("object":{"spec":{"x":[1,}}}})"),
        std::string(R"({"apiVersion":"admission.k8s.io/v1","request":{"uid":"u1",)"
                    "\"object\":{\"spec\":\"\xff\"}}}")}) {
    CAPTURE(body);
    DecodeResult filtered = DecodeAdmissionReview(body, &reads);
    DecodeResult whole = DecodeAdmissionReview(body);
    CHECK_FALSE(filtered.request.has_value());
    CHECK(filtered.error == whole.error);
    CHECK(filtered.error.rfind("AdmissionReview is not valid JSON: ", 0) == 0);
  }
  // The envelope's own checks are unchanged.
  DecodeResult wrong = DecodeAdmissionReview(
      R"({"apiVersion":"v0","kind":"AdmissionReview","request":{"uid":"u1","object":{}}})", &reads);
  CHECK(wrong.error ==
        DecodeAdmissionReview(
            R"({"apiVersion":"v0","kind":"AdmissionReview","request":{"uid":"u1","object":{}}})")
            .error);
  CHECK(wrong.uid == "u1");
}

TEST_CASE("DecodeAdmissionReview rejects malformed reviews with a message naming the member") {
  struct Row {
    const char* name;
    std::string body;
    std::string error;
    std::string uid;  // readable despite the error
  };
  const std::string head = R"({"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview",)";
  auto with_request = [&](const std::string& request) {
    return head + R"("request":)" + request + "}";
  };
  auto row = GENERATE_COPY(values<Row>({
      {"not json", "{\"apiVersion\":", "", ""},
      {"array", "[1,2]", "AdmissionReview must be a JSON object", ""},
      {"string", "\"x\"", "AdmissionReview must be a JSON object", ""},
      {"v1beta1",
       R"({"apiVersion":"admission.k8s.io/v1beta1","kind":"AdmissionReview","request":{"uid":"u1","operation":"CREATE"}})",
       "unsupported AdmissionReview apiVersion \"admission.k8s.io/v1beta1\", want "
       "\"admission.k8s.io/v1\"",
       "u1"},
      {"no apiVersion", R"({"kind":"AdmissionReview","request":{"uid":"u1"}})",
       "unsupported AdmissionReview apiVersion \"\", want \"admission.k8s.io/v1\"", "u1"},
      {"wrong kind",
       R"({"apiVersion":"admission.k8s.io/v1","kind":"Pod","request":{"uid":"u1","operation":"CREATE"}})",
       "AdmissionReview kind is \"Pod\", want \"AdmissionReview\"", "u1"},
      {"apiVersion not a string", R"({"apiVersion":1,"request":{"uid":"u1"}})",
       "AdmissionReview.apiVersion must be a string", "u1"},
      {"no request", head + R"("response":{}})", "AdmissionReview has no request", ""},
      {"empty request", with_request("{}"), "AdmissionReview has no request", ""},
      {"request not an object", with_request("[]"), "AdmissionReview.request must be an object",
       ""},
      {"no uid", with_request(R"({"operation":"CREATE"})"), "request.uid is missing", ""},
      {"uid not a string", with_request(R"({"uid":7})"), "request.uid must be a string", ""},
      {"no operation", with_request(R"({"uid":"u1"})"), "request.operation is missing", "u1"},
      {"kind not an object", with_request(R"({"uid":"u1","kind":"Pod"})"),
       "request.kind must be an object", "u1"},
      {"kind.kind not a string", with_request(R"({"uid":"u1","kind":{"kind":3}})"),
       "request.kind.kind must be a string", "u1"},
      {"resource.group", with_request(R"({"uid":"u1","resource":{"group":[]}})"),
       "request.resource.group must be a string", "u1"},
      {"namespace", with_request(R"({"uid":"u1","namespace":false})"),
       "request.namespace must be a string", "u1"},
      {"operation", with_request(R"({"uid":"u1","operation":{}})"),
       "request.operation must be a string", "u1"},
      {"userInfo", with_request(R"({"uid":"u1","userInfo":"admin"})"),
       "request.userInfo must be an object", "u1"},
      {"username", with_request(R"({"uid":"u1","userInfo":{"username":1}})"),
       "request.userInfo.username must be a string", "u1"},
      {"groups not a list", with_request(R"({"uid":"u1","userInfo":{"groups":"a"}})"),
       "request.userInfo.groups must be an array of strings", "u1"},
      {"group not a string", with_request(R"({"uid":"u1","userInfo":{"groups":["a",2]}})"),
       "request.userInfo.groups[1] must be a string", "u1"},
      {"extra not an object", with_request(R"({"uid":"u1","userInfo":{"extra":[]}})"),
       "request.userInfo.extra must be an object", "u1"},
      {"extra value", with_request(R"({"uid":"u1","userInfo":{"extra":{"k":[1]}}})"),
       "request.userInfo.extra[k][0] must be a string", "u1"},
      {"object", with_request(R"({"uid":"u1","operation":"CREATE","object":"pod"})"),
       "request.object must be an object", "u1"},
      {"oldObject", with_request(R"({"uid":"u1","operation":"CREATE","oldObject":[]})"),
       "request.oldObject must be an object", "u1"},
      {"dryRun", with_request(R"({"uid":"u1","operation":"CREATE","dryRun":"true"})"),
       "request.dryRun must be a boolean", "u1"},
      {"options", with_request(R"({"uid":"u1","operation":"CREATE","options":1})"),
       "request.options must be an object", "u1"},
      {"too deep", head + R"("request":{"uid":"u1","object":)" + std::string(600, '[') + "}}",
       "AdmissionReview nests deeper than 512 levels", ""},
  }));
  CAPTURE(row.name);
  DecodeResult d = DecodeAdmissionReview(row.body);
  CHECK_FALSE(d.request.has_value());
  if (std::string(row.name) == "not json") {
    CHECK(d.error ==
          "AdmissionReview is not valid JSON: [json.exception.parse_error.101] parse error at "
          "line 1, column 15: syntax error while parsing value - unexpected end of input; "
          "expected '[', '{', or a literal");
  } else {
    CHECK(d.error == row.error);
  }
  CHECK(d.uid == row.uid);
}

TEST_CASE("EncodeAdmissionReview writes a denial as a metav1.Status with causes") {
  AdmissionResponse r = Denied(422, "Invalid", "m",
                               {{"FieldValueInvalid", "a.b", "Invalid value: 1"},
                                {"FieldValueRequired", "", "Required value"}});
  r.uid = "u1";
  r.warnings = {"w1"};
  CHECK(EncodeAdmissionReview(r) == Json::parse(R"({
    "apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
    "response": {"uid": "u1", "allowed": false, "warnings": ["w1"],
      "status": {"status": "Failure", "code": 422, "reason": "Invalid", "message": "m",
        "details": {"causes": [
          {"reason": "FieldValueInvalid", "field": "a.b", "message": "Invalid value: 1"},
          {"reason": "FieldValueRequired", "message": "Required value"}]}}}})"));
}

TEST_CASE("EncodeAdmissionReview sends a patch base64-encoded as JSONPatch") {
  AdmissionResponse r = Allowed();
  r.uid = "u2";
  r.patch = Json::parse(R"([{"op":"add","path":"/a","value":1}])");
  Json j = EncodeAdmissionReview(r);
  CHECK(j == Json::parse(R"({
    "apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
    "response": {"uid": "u2", "allowed": true, "patchType": "JSONPatch",
      "patch": "W3sib3AiOiJhZGQiLCJwYXRoIjoiL2EiLCJ2YWx1ZSI6MX1d"}})"));
}

TEST_CASE("EncodeAdmissionReviewText is the dump of EncodeAdmissionReview, byte for byte") {
  // Strings of every kind: plain, escapes, control characters, DEL, UTF-8, invalid bytes.
  const std::vector<std::string> texts = {"",
                                          "plain",
                                          "q\"uote and back\\slash",
                                          "line\nbreak\ttab\r\b\f",
                                          std::string("nul\0byte", 8),
                                          "\x01\x1f\x7f",
                                          "\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80",
                                          "bad \xff\xfe utf-8 \xc3",
                                          "</script>&<>"};
  std::vector<AdmissionResponse> responses;
  for (size_t i = 0; i < texts.size(); ++i) {
    const std::string& t = texts[i];
    const std::string& u = texts[(i + 3) % texts.size()];
    AdmissionResponse allowed = Allowed();
    allowed.uid = t;
    allowed.warnings = {t, u};
    responses.push_back(allowed);
    AdmissionResponse patched = Allowed();
    patched.uid = u;
    patched.patch = Json::array({{{"op", "add"}, {"path", "/metadata/labels/" + t}, {"value", u}}});
    responses.push_back(patched);
    AdmissionResponse denied = Denied(static_cast<int>(400 + i), t, u,
                                      {{t, u, t}, {"", "", ""}, {"FieldValueRequired", "", u}});
    denied.uid = "uid-" + std::to_string(i);
    responses.push_back(denied);
    responses.push_back(Errored(500, t));
    AdmissionResponse bare;
    bare.status = AdmissionStatus{};  // code 0, nothing but status
    bare.warnings = {u};
    responses.push_back(bare);
  }
  for (const AdmissionResponse& r : responses) {
    const std::string want =
        EncodeAdmissionReview(r).dump(-1, ' ', false, Json::error_handler_t::replace);
    CHECK(EncodeAdmissionReviewText(r) == want);
  }
}

TEST_CASE("Invalid renders causes as a Kubernetes aggregate") {
  AdmissionResponse one = Invalid({{"FieldValueInvalid", "f", "Invalid value: 1: bad"}});
  REQUIRE(one.status.has_value());
  CHECK(one.status->code == 422);
  CHECK(one.status->reason == "Invalid");
  CHECK(one.status->message == "f: Invalid value: 1: bad");
  AdmissionResponse two =
      Invalid({{"FieldValueInvalid", "f", "x"}, {"FieldValueRequired", "g", "Required value"}});
  CHECK(two.status->message == "[f: x, g: Required value]");
  CHECK(two.status->causes.size() == 2);
  CHECK_FALSE(two.allowed);
}

TEST_CASE("Errored picks the reason from the code") {
  CHECK(Errored(500, "boom").status == AdmissionStatus{500, "InternalError", "boom", {}});
  CHECK(Errored(400, "bad").status == AdmissionStatus{400, "BadRequest", "bad", {}});
}

TEST_CASE("JsonNestingDepth counts brackets outside strings") {
  auto [text, depth] = GENERATE(table<std::string, size_t>({
      {"1", 0},
      {"{}", 1},
      {R"({"a":[{"b":[]}]})", 4},
      {R"({"a":"[[[[{{{{"})", 1},
      {R"({"a":"\"[[[["})", 1},
      {R"(["\\",[[]]])", 3},
      {"]]]]{", 1},
      {R"(["\\\"[[",[]])", 2},
      {R"(["a\\\\",[[]]])", 3},
      {R"(["\\\\\"[[[",{}])", 2},
      {R"(["[[[)", 1},
      {R"(["\"]]]]" [[)", 3},
  }));
  CAPTURE(text);
  CHECK(JsonNestingDepth(text, 100) == depth);
  CHECK(JsonNestingDepth(std::string(1000, '['), 10) == 11);
}

TEST_CASE("MeasureJson counts the nodes a DOM would allocate, outside strings") {
  auto [text, nodes] = GENERATE(table<std::string, size_t>({
      {"1", 0},
      {"[1,2,3]", 3},
      {"[{},{},{}]", 6},
      {R"({"a":"b","c":["d"]})", 7},
      {R"(["a,b,{[\"]"])", 2},
      {R"(["\\",""])", 4},
  }));
  CAPTURE(text);
  CHECK(MeasureJson(text, 100, 1000).nodes == nodes);
  CHECK(MeasureJson(text, 100, 1000).depth == JsonNestingDepth(text, 100));
}

TEST_CASE("A review that would expand its DOM without bound is refused before parsing") {
  // The shape of the attack: a 6 MiB `request.object` of empty objects (30x as a DOM).
  std::string elements;
  elements.reserve(6 << 20);
  while (elements.size() < (6u << 20)) elements += "{},";
  elements.pop_back();
  std::string body = R"({"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview",)"
                     R"("request":{"uid":"u","object":[)" +
                     elements + "]}}";
  DecodeResult r = DecodeAdmissionReview(body);
  CHECK(r.error ==
        "AdmissionReview has more than 50000 JSON nodes (objects, arrays, strings, "
        "elements)");
  // Just under the limit it is parsed (and then fails for what it is: not a Kubernetes object).
  std::string fits;
  for (size_t i = 0; i < 1000; ++i) fits += "{},";
  fits.pop_back();
  DecodeResult ok = DecodeAdmissionReview(
      R"({"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u","object":[)" +
      fits + "]}}");
  CHECK(ok.error.find("JSON nodes") == std::string::npos);
}

}  // namespace
}  // namespace kmt::webhook
