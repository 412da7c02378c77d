// kube/managed_fields_test.cc
#include "kube/managed_fields.h"

#include <catch2/catch.hpp>
#include <cstdio>
#include <string>

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

// A pod with `n` labels "k-000".."k-<n-1>" (sorted as the server writes them), each with
// a 60-byte value, next to members named "labels" that are no pod's labels.
Json LabelledPod(int n) {
  Json labels = Json::object();
  for (int i = 0; i < n; ++i) {
    char key[16];
    std::snprintf(key, sizeof key, "k-%03d", i);
    labels[key] = std::string(60, 'v');
  }
  return Json{{"metadata",
               {{"name", "p"},
                {"annotations", {{"labels", "an annotation"}}},
                {"labels", labels},
                {"managedFields", Json::array({{{"manager", "m"}}})}}},
              {"spec", {{"labels", {{"a", "spec field"}}}}}};
}

TEST_CASE("Labels are kept while each one's key and the longest value fit the budget") {
  // Each label costs its 5-byte key + 63: a budget of 3 labels' worth keeps k-000..k-002.
  const ObjectTrim trim{.managed_fields = true, .max_label_bytes = 3 * (5 + 63)};
  const Json got = ParseTrimmed(LabelledPod(10).dump(), ObjectsAt::kTop, trim);
  const Json& meta = got["metadata"];
  REQUIRE(meta["labels"].size() == 3);
  CHECK(meta["labels"].contains("k-000"));
  CHECK(meta["labels"].contains("k-002"));
  CHECK_FALSE(meta["labels"].contains("k-003"));
  CHECK(meta["labels"]["k-001"] == std::string(60, 'v'));
  CHECK(meta[std::string(kLabelsDropped)] == 7);
  CHECK_FALSE(meta.contains("managedFields"));
  // Members named "labels" elsewhere are whole.
  CHECK(meta["annotations"]["labels"] == "an annotation");
  CHECK(got["spec"]["labels"]["a"] == "spec field");
}

TEST_CASE("Labels within the budget are all kept, and no count is added") {
  const ObjectTrim trim{.max_label_bytes = 10 * (5 + 63)};
  const Json got = ParseTrimmed(LabelledPod(10).dump(), ObjectsAt::kTop, trim);
  CHECK(got == LabelledPod(10));
  CHECK_FALSE(got["metadata"].contains(std::string(kLabelsDropped)));
}

TEST_CASE("Each list item and each watch event's object has a budget of its own") {
  const ObjectTrim trim{.max_label_bytes = 2 * (5 + 63)};
  Json list = {
      {"metadata", {{"resourceVersion", "7"}, {"labels", LabelledPod(5)["metadata"]["labels"]}}},
      {"items", Json::array({LabelledPod(5), LabelledPod(1), LabelledPod(4)})}};
  const Json got = ParseTrimmed(list.dump(), ObjectsAt::kListItems, trim);
  REQUIRE(got["items"].size() == 3);
  CHECK(got["items"][0]["metadata"]["labels"].size() == 2);
  CHECK(got["items"][0]["metadata"][std::string(kLabelsDropped)] == 3);
  CHECK(got["items"][1]["metadata"]["labels"].size() == 1);
  CHECK_FALSE(got["items"][1]["metadata"].contains(std::string(kLabelsDropped)));
  CHECK(got["items"][2]["metadata"][std::string(kLabelsDropped)] == 2);
  // The list's own metadata is not an item's.
  CHECK(got["metadata"]["labels"].size() == 5);
  CHECK_FALSE(got["metadata"].contains(std::string(kLabelsDropped)));

  const Json event = {{"type", "ADDED"}, {"object", LabelledPod(6)}};
  const Json e = ParseTrimmed(event.dump(), ObjectsAt::kWatchEvent, trim);
  CHECK(e["object"]["metadata"]["labels"].size() == 2);
  CHECK(e["object"]["metadata"][std::string(kLabelsDropped)] == 4);
}

TEST_CASE("A label too long for the whole budget leaves out it and every later one") {
  Json pod = LabelledPod(3);
  pod["metadata"]["labels"]["a-long-key-" + std::string(200, 'x')] = "v";  // sorts first
  const ObjectTrim trim{.max_label_bytes = 100};
  const Json got = ParseTrimmed(pod.dump(), ObjectsAt::kTop, trim);
  CHECK(got["metadata"]["labels"] == Json::object());
  CHECK(got["metadata"][std::string(kLabelsDropped)] == 4);
}

TEST_CASE("TrimObject on a parsed object equals ParseTrimmed on its text") {
  for (int n : {0, 1, 3, 10, 50}) {
    for (size_t budget : {size_t{0}, size_t{68}, size_t{300}, size_t{10000}}) {
      for (bool mf : {false, true}) {
        const ObjectTrim trim{.managed_fields = mf, .max_label_bytes = budget};
        Json trimmed = LabelledPod(n);
        TrimObject(trimmed, trim);
        CHECK(trimmed == ParseTrimmed(LabelledPod(n).dump(), ObjectsAt::kTop, trim));
      }
    }
  }
  Json not_an_object = Json::array({1, 2});
  TrimObject(not_an_object, ObjectTrim{.managed_fields = true, .max_label_bytes = 1});
  CHECK(not_an_object == Json::array({1, 2}));
}

}  // namespace
}  // namespace kmt::kube
