#include "base/json.h"

#include <catch2/catch.hpp>
#include <string>
#include <vector>

namespace kmt::base {
namespace {

const Json kPod = Json::parse(R"({
  "metadata": {"name": "virt-launcher-db-1", "uid": "u-1", "labels": null, "generation": 3,
               "annotations": {"a/b": "x"}},
  "spec": {"nodeName": 7, "hostNetwork": true, "gates": [], "affinity": "not an object",
           "big": 18446744073709551615, "max": 9223372036854775807, "neg": -9223372036854775808,
           "real": 3.0, "empty": ""},
  "status": null
})");

TEST_CASE("Find tells a present value from a missing member, a null and a non-object step") {
  struct Row {
    std::vector<std::string> path;
    Lookup want;
  };
  auto row = GENERATE(values<Row>({
      {{"metadata", "name"}, Lookup::kPresent},
      {{"metadata"}, Lookup::kPresent},
      {{"spec", "gates"}, Lookup::kPresent},
      {{"spec", "empty"}, Lookup::kPresent},
      {{"missing"}, Lookup::kMissing},
      {{"metadata", "missing"}, Lookup::kMissing},
      {{"missing", "name"}, Lookup::kMissing},
      {{"status"}, Lookup::kNull},
      {{"status", "phase"}, Lookup::kNull},  // a null on the way reads as null too
      {{"metadata", "labels"}, Lookup::kNull},
      {{"metadata", "labels", "app"}, Lookup::kNull},
      {{"spec", "affinity", "nodeAffinity"}, Lookup::kWrongType},  // a string on the way
      {{"spec", "gates", "0"}, Lookup::kWrongType},  // paths name members, not indices
      {{"metadata", "name", "x"}, Lookup::kWrongType},
  }));
  std::string shown;
  for (const auto& k : row.path) shown += "/" + k;
  CAPTURE(shown);
  // The path as the callers write it: a braced list of keys.
  JsonField<const Json*> got = Lookup::kMissing;
  switch (row.path.size()) {
    case 1:
      got = Find(kPod, {row.path[0]});
      break;
    case 2:
      got = Find(kPod, {row.path[0], row.path[1]});
      break;
    case 3:
      got = Find(kPod, {row.path[0], row.path[1], row.path[2]});
      break;
    default:
      FAIL("a row's path has 1 to 3 keys");
  }
  CHECK(got.status() == row.want);
  CHECK(got.ok() == (row.want == Lookup::kPresent));
  CHECK((Member(kPod, {row.path[0]}) != nullptr) == Find(kPod, {row.path[0]}).ok());
}

TEST_CASE("The root itself: an empty path, and roots that are not objects") {
  CHECK(*Find(kPod, {}) == &kPod);
  CHECK(Find(Json(), {}).status() == Lookup::kNull);
  for (const Json& root : {Json(), Json(1), Json("s"), Json::array({1}), Json(true), Json(1.5)}) {
    CAPTURE(root.dump());
    const Lookup want = root.is_null() ? Lookup::kNull : Lookup::kWrongType;
    CHECK(Find(root, "a").status() == want);
    CHECK(String(root, {"a", "b"}).status() == want);
    CHECK(Int(root, "a").status() == want);
    CHECK(Member(root, "a") == nullptr);
    CHECK(At(root, "a").is_null());
    CHECK(StringAt(root, {"a"}) == "");
  }
  CHECK(Find(Json::object(), "a").status() == Lookup::kMissing);
}

TEST_CASE("A single key, a std::string key and a braced path read the same member") {
  const std::string key = "spec";
  CHECK(Member(kPod, "spec") == &kPod["spec"]);
  CHECK(Member(kPod, key) == &kPod["spec"]);
  CHECK(Member(kPod, {"spec"}) == &kPod["spec"]);
  CHECK(Member(kPod, std::string_view("spec")) == &kPod["spec"]);
  CHECK(Member(kPod, {"metadata", "annotations", "a/b"}) ==
        &kPod["metadata"]["annotations"]["a/b"]);
}

TEST_CASE("A path built at run time reads like the braced one") {
  const std::vector<std::string_view> keys = {"metadata", "annotations", "a/b"};
  CHECK(Member(kPod, JsonPath(std::span(keys))) ==
        Member(kPod, {"metadata", "annotations", "a/b"}));
  CHECK(JsonPath(std::span(keys).first(2)).size() == 2);
  CHECK(Object(kPod, JsonPath(std::span(keys).first(2))).ok());
  CHECK(Find(kPod, JsonPath(std::span<const std::string_view>())).value_or(nullptr) == &kPod);
}

TEST_CASE("String: present, missing, null and wrong type") {
  CHECK(*String(kPod, {"metadata", "name"}) == "virt-launcher-db-1");
  CHECK(*String(kPod, {"spec", "empty"}) == "");  // an empty string is present
  CHECK(String(kPod, {"metadata", "nope"}).status() == Lookup::kMissing);
  CHECK(String(kPod, "status").status() == Lookup::kNull);
  CHECK(String(kPod, {"spec", "nodeName"}).status() == Lookup::kWrongType);
  CHECK(String(kPod, "spec").status() == Lookup::kWrongType);
  CHECK(String(kPod, "spec").value_or("fallback") == "fallback");
  CHECK(StringAt(kPod, {"metadata", "uid"}) == "u-1");
  CHECK(StringAt(kPod, {"spec", "nodeName"}) == "");
  CHECK(StringAt(kPod, {"metadata", "labels", "app"}) == "");
}

TEST_CASE("Bool: only JSON booleans") {
  CHECK(*Bool(kPod, {"spec", "hostNetwork"}) == true);
  CHECK(Bool(kPod, {"spec", "nodeName"}).status() == Lookup::kWrongType);  // 7 is not true
  CHECK(Bool(kPod, {"spec", "empty"}).status() == Lookup::kWrongType);
  CHECK(Bool(kPod, {"spec", "missing"}).status() == Lookup::kMissing);
  CHECK(Bool(Json::parse(R"({"b": false})"), "b").value_or(true) == false);
}

TEST_CASE("Int: JSON integers over the whole int64 range; larger ones are out of range") {
  CHECK(*Int(kPod, {"metadata", "generation"}) == 3);
  CHECK(*Int(kPod, {"spec", "max"}) == INT64_MAX);
  CHECK(*Int(kPod, {"spec", "neg"}) == INT64_MIN);
  CHECK(Int(kPod, {"spec", "big"}).status() == Lookup::kOutOfRange);
  CHECK(Int(kPod, {"spec", "real"}).status() == Lookup::kWrongType);  // 3.0 is not an integer
  CHECK(Int(kPod, {"spec", "empty"}).status() == Lookup::kWrongType);
  CHECK(Int(kPod, {"spec", "hostNetwork"}).status() == Lookup::kWrongType);
  CHECK(Int(kPod, {"metadata", "missing"}).status() == Lookup::kMissing);
  CHECK(Int(kPod, {"status", "x"}).status() == Lookup::kNull);
  CHECK(Int(Json::parse("{\"n\": 9223372036854775808}"), "n").status() == Lookup::kOutOfRange);
  CHECK(*Int(Json::parse("{\"n\": 0}"), "n") == 0);
  CHECK(!Int(kPod, {"spec", "real"}).optional().has_value());
}

TEST_CASE("Object and Array check the container type") {
  CHECK(*Object(kPod, "metadata") == &kPod["metadata"]);
  CHECK(Object(kPod, {"spec", "gates"}).status() == Lookup::kWrongType);
  CHECK(Object(kPod, {"spec", "affinity"}).status() == Lookup::kWrongType);
  CHECK(Object(kPod, {"metadata", "labels"}).status() == Lookup::kNull);
  CHECK(Object(kPod, "nope").status() == Lookup::kMissing);
  CHECK((*Array(kPod, {"spec", "gates"}))->empty());
  CHECK(Array(kPod, "metadata").status() == Lookup::kWrongType);
  CHECK(Array(kPod, {"spec", "nope"}).status() == Lookup::kMissing);
}

TEST_CASE("Member and At read null as absent; At chains never throw") {
  CHECK(Member(kPod, "status") == nullptr);
  CHECK(Member(kPod, {"metadata", "labels"}) == nullptr);
  CHECK(Member(kPod, {"spec", "affinity", "x"}) == nullptr);
  CHECK(Member(kPod, {"spec", "nodeName"})->get<int>() == 7);
  CHECK(At(At(kPod, "spec"), "hostNetwork") == true);
  CHECK(At(At(At(kPod, "spec"), "nodeName"), "x").is_null());
  CHECK(At(At(kPod, "nope"), "nope").is_null());
}

// Moved from kube/reads_test.cc with kube::Member and kube::StringAt.
TEST_CASE("Member and StringAt read odd JSON as absent, never throwing") {
  struct Row {
    const char* json;
    bool member;         // Member(root, {"metadata", "name"}) != nullptr
    std::string string;  // StringAt(root, {"metadata", "name"})
  };
  const Row row = GENERATE(values<Row>({
      {R"({"metadata": {"name": "a"}})", true, "a"},
      {R"({"metadata": {"name": 5}})", true, ""},
      {R"({"metadata": {"name": ["a"]}})", true, ""},
      {R"({"metadata": {"name": null}})", false, ""},
      {R"({"metadata": {}})", false, ""},
      {R"({"metadata": "a"})", false, ""},
      {R"({"metadata": ["name"]})", false, ""},
      {R"({"metadata": null})", false, ""},
      {R"({})", false, ""},
      {R"([{"metadata": {"name": "a"}}])", false, ""},
      {R"("metadata")", false, ""},
      {R"(null)", false, ""},
      {R"(7)", false, ""},
  }));
  CAPTURE(row.json);
  const Json root = Json::parse(row.json);
  CHECK((Member(root, {"metadata", "name"}) != nullptr) == row.member);
  CHECK(StringAt(root, {"metadata", "name"}) == row.string);
  CHECK(Member(root, {}) == (root.is_null() ? nullptr : &root));
}

// Moved from webhook/json_access_test.cc with webhook/json_access.h.
TEST_CASE("Member walks objects and reads anything else as absent") {
  const Json pod = Json::parse(R"({"metadata": {"labels": {"a": "b", "n": null, "i": 3},
                                                 "annotations": "oops"},
                                    "spec": [1]})");
  CHECK(*Member(pod, {"metadata", "labels", "a"}) == "b");
  CHECK(Member(pod, {"metadata", "labels"})->size() == 3);
  CHECK(Member(pod, {}) == &pod);
  CHECK(Member(pod, {"metadata", "labels", "n"}) == nullptr);        // null
  CHECK(Member(pod, {"metadata", "labels", "missing"}) == nullptr);  // missing
  CHECK(Member(pod, {"metadata", "annotations", "x"}) == nullptr);   // not an object
  CHECK(Member(pod, {"spec", "nodeName"}) == nullptr);               // an array
  CHECK(Member(Json("text"), {"metadata"}) == nullptr);              // not an object
}

TEST_CASE("StringAt reads strings only") {
  const Json pod = Json::parse(R"({"metadata": {"labels": {"a": "b", "i": 3}}})");
  CHECK(StringAt(pod, {"metadata", "labels", "a"}) == "b");
  CHECK(StringAt(pod, {"metadata", "labels", "i"}).empty());
  CHECK(StringAt(pod, {"metadata", "name"}).empty());
}

TEST_CASE("ToString names every reason") {
  CHECK(ToString(Lookup::kPresent) == "present");
  CHECK(ToString(Lookup::kMissing) == "missing");
  CHECK(ToString(Lookup::kNull) == "null");
  CHECK(ToString(Lookup::kWrongType) == "wrong type");
  CHECK(ToString(Lookup::kOutOfRange) == "out of range");
}

}  // namespace
}  // namespace kmt::base
