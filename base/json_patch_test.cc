#include "base/json_patch.h"

#include <catch2/catch.hpp>

namespace kmt::base {
namespace {

using nlohmann::json;

TEST_CASE("PointerToken escapes ~ before /, as RFC 6901 says") {
  CHECK(PointerToken("plain") == "plain");
  CHECK(PointerToken("migration-target.kubevirt.io/added-node-selector-term") ==
        "migration-target.kubevirt.io~1added-node-selector-term");
  CHECK(PointerToken("a~b") == "a~0b");
  CHECK(PointerToken("~1") == "~01");  // not "~1" read back as "/"
  CHECK(PointerToken("/~") == "~1~0");
  CHECK(PointerToken("") == "");
}

TEST_CASE("Pointer joins escaped tokens") {
  CHECK(Pointer({}) == "");
  CHECK(Pointer({""}) == "/");  // the member named "" (RFC 6901 §5)
  CHECK(Pointer({"metadata", "annotations", "a/b"}) == "/metadata/annotations/a~1b");
  CHECK(Pointer({"spec", "schedulingGates", "-"}) == "/spec/schedulingGates/-");
}

TEST_CASE("JsonPatch keeps the operations in order, in RFC 6902's shape") {
  JsonPatch p;
  CHECK(p.empty());
  p.Test("/metadata/uid", "u-1").Add("/spec/x", json{{"k", 1}}).Replace("/a", 2).Remove("/b/0");
  CHECK(p.size() == 4);
  CHECK(p.ToJson() == json::parse(R"([
    {"op": "test", "path": "/metadata/uid", "value": "u-1"},
    {"op": "add", "path": "/spec/x", "value": {"k": 1}},
    {"op": "replace", "path": "/a", "value": 2},
    {"op": "remove", "path": "/b/0"}])"));
  // A null value is a value (add null), not an absent one.
  JsonPatch n;
  n.Add("/x", nullptr);
  CHECK(n.ToJson().dump() == R"([{"op":"add","path":"/x","value":null}])");
}

TEST_CASE("Append puts the other patch's operations after this one's") {
  JsonPatch tests;
  tests.Test("/a", 1);
  JsonPatch changes;
  changes.Remove("/b").Add("/c", 3);
  tests.Append(std::move(changes));
  const std::vector<json> ops = std::move(tests).TakeOps();
  REQUIRE(ops.size() == 3);
  CHECK(ops[0]["op"] == "test");
  CHECK(ops[1]["op"] == "remove");
  CHECK(ops[2]["op"] == "add");
}

}  // namespace
}  // namespace kmt::base
