// kube/managed_fields_test.cc
#include "kube/managed_fields.h"

#include <catch2/catch.hpp>

namespace kmt::kube {
namespace {

// An object whose metadata.managedFields must go, next to members of the same name that
// must stay: a spec field, an annotation key, and a list's own metadata.
const char* kPod = R"({
  "apiVersion": "v1", "kind": "Pod",
  "metadata": {"name": "p", "annotations": {"managedFields": "an annotation"},
               "managedFields": [{"manager": "virt-controller", "fieldsV1": {"f:spec": {}}}],
               "labels": {"a": "b"}},
  "spec": {"managedFields": "a spec field", "metadata": {"managedFields": "deeper"}}})";

Json Expected() {
  Json pod = Json::parse(kPod);
  pod["metadata"].erase("managedFields");
  return pod;
}

TEST_CASE("A single object loses metadata.managedFields and nothing else") {
  const Json got = ParseOmittingManagedFields(kPod, ObjectsAt::kTop);
  CHECK(got == Expected());
  CHECK(got["metadata"]["annotations"]["managedFields"] == "an annotation");
  CHECK(got["spec"]["managedFields"] == "a spec field");
  CHECK(got["spec"]["metadata"]["managedFields"] == "deeper");
}

TEST_CASE("Every list item loses it; the list's own metadata is not an item's") {
  const std::string list = std::string(R"({"kind": "PodList",
    "metadata": {"resourceVersion": "7", "managedFields": "kept: not an item"},
    "items": [)") + kPod + "," +
                           kPod + R"(, {"metadata": {"name": "no-fields"}}]})";
  const Json got = ParseOmittingManagedFields(list, ObjectsAt::kListItems);
  REQUIRE(got["items"].size() == 3);
  CHECK(got["items"][0] == Expected());
  CHECK(got["items"][1] == Expected());
  CHECK(got["items"][2] == Json::parse(R"({"metadata": {"name": "no-fields"}})"));
  CHECK(got["metadata"]["managedFields"] == "kept: not an item");
  CHECK(got["metadata"]["resourceVersion"] == "7");
}

TEST_CASE("A watch event's object loses it") {
  const std::string event = std::string(R"({"type": "MODIFIED", "object": )") + kPod + "}";
  const Json got = ParseOmittingManagedFields(event, ObjectsAt::kWatchEvent);
  CHECK(got["type"] == "MODIFIED");
  CHECK(got["object"] == Expected());
}

TEST_CASE("The same text parsed for another place is left whole") {
  const Json whole = Json::parse(kPod);
  CHECK(ParseOmittingManagedFields(kPod, ObjectsAt::kListItems) == whole);
  CHECK(ParseOmittingManagedFields(kPod, ObjectsAt::kWatchEvent) == whole);
}

TEST_CASE("Text that is not JSON is a discarded value, as Json::parse without exceptions") {
  CHECK(ParseOmittingManagedFields(R"({"metadata": {"managedFields": [)", ObjectsAt::kTop)
            .is_discarded());
  CHECK(ParseOmittingManagedFields("", ObjectsAt::kListItems).is_discarded());
}

}  // namespace
}  // namespace kmt::kube
