// kube/managed_fields_test.cc
#include "kube/managed_fields.h"

#include <algorithm>
#include <array>
#include <catch2/catch.hpp>
#include <cstdio>
#include <sstream>
#include <string>
#include <vector>

#include "base/testing/files.h"

namespace kmt::kube {
namespace {

using base::testing::ReadTestFile;

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

// The oracle: ParseTrimmed as it was before it became a user of base/json_filter.h, on
// nlohmann's callback parser (which builds each dropped value before discarding it). Kept here
// only to show the filtered parse gives the same bytes.
Json CallbackParseTrimmed(std::string_view text, ObjectsAt at, const ObjectTrim& trim) {
  if (!trim.any()) return Json::parse(text, nullptr, /*allow_exceptions=*/false);
  struct Step {
    int depth;
    std::string_view key;
  };
  std::array<Step, 2> path{};
  size_t n = 0;
  switch (at) {
    case ObjectsAt::kTop:
      path = {{{1, "metadata"}}};
      n = 1;
      break;
    case ObjectsAt::kListItems:
      path = {{{1, "items"}, {3, "metadata"}}};
      n = 2;
      break;
    case ObjectsAt::kWatchEvent:
      path = {{{1, "object"}, {2, "metadata"}}};
      n = 2;
      break;
  }
  const int meta_depth = path[n - 1].depth;
  const int field_depth = meta_depth + 1;
  const int label_depth = meta_depth + 2;
  std::array<bool, 2> on_path{};
  bool in_labels = false;
  size_t left = 0, dropped = 0;
  auto callback = [&](int depth, Json::parse_event_t event, Json& parsed) {
    if (event == Json::parse_event_t::object_end) {
      if (depth == meta_depth && trim.max_label_bytes > 0 && on_path[n - 1] && dropped > 0 &&
          parsed.is_object()) {
        parsed[std::string(kLabelsDropped)] = dropped;
      }
      return true;
    }
    if (event != Json::parse_event_t::key || depth > label_depth) return true;
    const auto& key = parsed.get_ref<const std::string&>();
    for (size_t i = 0; i < n; ++i) {
      if (path[i].depth == depth) on_path[i] = key == path[i].key;
    }
    if (depth == meta_depth && on_path[n - 1]) {
      left = trim.max_label_bytes;
      dropped = 0;
    }
    for (size_t i = 0; i < n; ++i) {
      if (!on_path[i]) return true;
    }
    if (depth == field_depth) {
      in_labels = key == "labels";
      return !(trim.managed_fields && key == "managedFields");
    }
    if (depth == label_depth && in_labels && trim.max_label_bytes > 0) {
      const size_t cost = key.size() + kMaxLabelValueBytes;
      if (dropped == 0 && cost <= left) {
        left -= cost;
        return true;
      }
      ++dropped;
      return false;
    }
    return true;
  };
  return Json::parse(text, callback, /*allow_exceptions=*/false);
}

// The objects of the recorded watch streams, each also with a server-side apply history and
// with a tenant's share of labels, as the API server sends them.
std::vector<Json> TestdataObjects() {
  std::vector<Json> out;
  for (const char* file :
       {"kube/testdata/watch_pods.jsonl", "kube/testdata/watch_pods_crlf.jsonl"}) {
    std::istringstream lines(ReadTestFile(file));
    for (std::string line; std::getline(lines, line);) {
      if (!line.empty() && line.back() == '\r') line.pop_back();
      if (line.empty()) continue;
      Json event = Json::parse(line);
      if (!event["object"].is_object() || !event["object"].contains("metadata")) continue;
      Json pod = event["object"];
      out.push_back(pod);
      pod["metadata"]["managedFields"] = Json::array(
          {{{"manager", "virt-controller"},
            {"operation", "Update"},
            {"fieldsType", "FieldsV1"},
            {"fieldsV1",
             {{"f:metadata", {{"f:labels", {{".", Json::object()}}}}},
              {"f:spec", {{"f:containers", {{R"(k:{"name":"compute"})", Json::object()}}}}}}}},
           {{"manager", "kubelet"},
            {"subresource", "status"},
            {"fieldsV1", {{"f:status", Json::object()}}}}});
      out.push_back(pod);
      for (int i = 0; i < 40; ++i) {
        char key[40];
        std::snprintf(key, sizeof key, "tenant.example.com/label-%02d", i);
        pod["metadata"]["labels"][key] = std::string(static_cast<size_t>(i), 'v');
      }
      out.push_back(pod);
    }
  }
  REQUIRE(out.size() >= 9);
  return out;
}

TEST_CASE("ParseTrimmed gives the bytes the callback-based parse gave, on the testdata bodies") {
  const std::vector<Json> objects = TestdataObjects();
  const Json list = {{"apiVersion", "v1"},
                     {"kind", "PodList"},
                     {"metadata", {{"resourceVersion", "7"}, {"continue", "c"}}},
                     {"items", objects}};
  std::vector<std::pair<std::string, ObjectsAt>> bodies = {{list.dump(), ObjectsAt::kListItems}};
  for (const Json& o : objects) {
    bodies.emplace_back(o.dump(), ObjectsAt::kTop);
    bodies.emplace_back(Json{{"type", "MODIFIED"}, {"object", o}}.dump(), ObjectsAt::kWatchEvent);
  }
  // The recorded lines themselves, BOOKMARK and ERROR included, as the watcher reads them.
  std::istringstream lines(ReadTestFile("kube/testdata/watch_pods.jsonl"));
  for (std::string line; std::getline(lines, line);) {
    if (!line.empty()) bodies.emplace_back(line, ObjectsAt::kWatchEvent);
  }
  for (const bool mf : {false, true}) {
    for (const size_t budget : {size_t{0}, size_t{1}, size_t{200}, size_t{1024}, size_t{4096}}) {
      const ObjectTrim trim{.managed_fields = mf, .max_label_bytes = budget};
      for (const auto& [body, at] : bodies) {
        CAPTURE(mf, budget, static_cast<int>(at), body.substr(0, 120));
        const Json got = ParseTrimmed(body, at, trim);
        REQUIRE_FALSE(got.is_discarded());
        CHECK(got.dump() == CallbackParseTrimmed(body, at, trim).dump());
        // The same body parsed for another place is whole, as before.
        for (const ObjectsAt other :
             {ObjectsAt::kTop, ObjectsAt::kListItems, ObjectsAt::kWatchEvent}) {
          CHECK(ParseTrimmed(body, other, trim).dump() ==
                CallbackParseTrimmed(body, other, trim).dump());
        }
      }
      // A list's items, trimmed in the list, are each what TrimObject makes of them.
      const Json got = ParseTrimmed(list.dump(), ObjectsAt::kListItems, trim);
      REQUIRE(got["items"].size() == objects.size());
      for (size_t i = 0; i < objects.size(); ++i) {
        Json want = objects[i];
        TrimObject(want, trim);
        CHECK(got["items"][i].dump() == want.dump());
      }
    }
  }
}

TEST_CASE("Odd shapes are trimmed only where an object's metadata is, as before") {
  const ObjectTrim trim{.managed_fields = true, .max_label_bytes = 70};
  for (
      const char* body : {
          R"({"items": {"metadata": {"managedFields": 1}}})",
          R"({"items": [1, "s", null, [], {"metadata": [{"managedFields": 1}]}]})",
          R"({"items": [{"metadata": {"labels": ["a", "b"], "managedFields": {"x": 1}}}]})",
          R"({"items": [{"metadata": {"labels": {"aa": {"deep": 1}, "bb": 2}, "labels": {"cc": 3}}}]})",
          R"({"items": [{"metadata": null}, {"metadata": 3}, {"spec": {"metadata": {"managedFields": 1}}}]})",
          R"({"object": [{"metadata": {"managedFields": 1}}], "type": "ADDED"})",
          R"({"type": "ADDED", "object": {"metadata": {"labels": {}}, "labels": {"a": 1}}})",
          R"([{"metadata": {"managedFields": 1}}])",
          R"("metadata")",
          R"({"metadata": {"managedFields": [], "managedFields": 2, "name": "n"}})",
      }) {
    for (const ObjectsAt at : {ObjectsAt::kTop, ObjectsAt::kListItems, ObjectsAt::kWatchEvent}) {
      CAPTURE(body, static_cast<int>(at));
      CHECK(ParseTrimmed(body, at, trim).dump() == CallbackParseTrimmed(body, at, trim).dump());
    }
  }
}

TEST_CASE("With reads, ParseTrimmed builds only the read members, as TrimObject keeps them") {
  const std::vector<Json> objects = TestdataObjects();
  const base::ObjectReads nothing{};
  const base::ObjectReads labels{{"metadata", "labels"}, {"metadata", "name"}};
  const base::ObjectReads some_labels{{"metadata", "labels", "kubevirt.io"},
                                      {"metadata", "labels", "tenant.example.com/label-03"},
                                      {"metadata", "labels", "tenant.example.com/label-39"}};
  const base::ObjectReads containers{{"spec", "containers", "name"},
                                     {"spec", "schedulingGates"},
                                     {"metadata", "annotations", "note"},
                                     {"status"}};
  for (const base::ObjectReads* reads : {&nothing, &labels, &some_labels, &containers}) {
    for (const bool mf : {false, true}) {
      for (const size_t budget : {size_t{0}, size_t{200}, size_t{4096}}) {
        const ObjectTrim trim{.managed_fields = mf, .max_label_bytes = budget, .reads = reads};
        for (const Json& o : objects) {
          CAPTURE(reads->paths().size(), mf, budget, o.dump().substr(0, 120));
          Json faked = o;
          TrimObject(faked, trim);
          CHECK(ParseTrimmed(o.dump(), ObjectsAt::kTop, trim) == faked);
          CHECK(ParseTrimmed(Json{{"type", "ADDED"}, {"object", o}}.dump(), ObjectsAt::kWatchEvent,
                             trim) == Json{{"type", "ADDED"}, {"object", faked}});
          CHECK(ParseTrimmed(Json{{"metadata", {{"continue", "c"}}}, {"items", {o}}}.dump(),
                             ObjectsAt::kListItems,
                             trim) == Json{{"metadata", {{"continue", "c"}}}, {"items", {faked}}});
          // Nothing but the reads (and a Status's members at the top) is left.
          for (auto it = faked.begin(); it != faked.end(); ++it) {
            const bool status =
                std::ranges::find(kStatusMembers, it.key()) != std::end(kStatusMembers);
            CHECK((status || reads->root().members.contains(it.key())));
          }
        }
      }
    }
  }
  const Json& pod = objects.at(2);  // 40 tenant labels, managedFields
  Json kept = pod;
  TrimObject(kept, {.managed_fields = true, .reads = &containers});
  CHECK(kept["spec"]["containers"] == Json::parse(R"([{"name": "compute"}])"));
  CHECK(kept["metadata"] ==
        Json{{"annotations", {{"note", pod["metadata"]["annotations"]["note"]}}}});
  Json some = pod;
  TrimObject(some, {.max_label_bytes = 2 * (28 + kMaxLabelValueBytes), .reads = &some_labels});
  // Only the labels read take budget: kubevirt.io and label-03 fit (the 36 unread ones between
  // them take none), label-39 does not.
  CHECK(some["metadata"]["labels"].size() == 2);
  CHECK(some["metadata"][std::string(kLabelsDropped)] == 1);
}

}  // namespace
}  // namespace kmt::kube
