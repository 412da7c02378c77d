// kube/reads_test.cc
#include "kube/reads.h"

#include <catch2/catch.hpp>

#include "kube/error.h"
#include "kube/fake_client.h"
#include "kube/resources.h"

namespace kmt::kube {
namespace {

TEST_CASE("GetIfExists: the object, nothing for a 404, every other error thrown") {
  FakeClient client;
  client.Create(kPods, "ns", {{"metadata", {{"name", "a"}}}});
  auto got = GetIfExists(client, kPods, "ns", "a");
  REQUIRE(got.has_value());
  CHECK((*got)["metadata"]["name"] == "a");
  CHECK_FALSE(GetIfExists(client, kPods, "ns", "b").has_value());
  client.FailNext(Verb::kGet, 1, ErrorKind::kForbidden);
  try {
    GetIfExists(client, kPods, "ns", "a");
    FAIL("no error thrown");
  } catch (const KubeError& e) {
    CHECK(e.kind() == ErrorKind::kForbidden);
  }
}

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

}  // namespace
}  // namespace kmt::kube
