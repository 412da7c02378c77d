#include "webhook/json_access.h"

#include <catch2/catch.hpp>

namespace kmt::webhook {
namespace {

using nlohmann::json;

TEST_CASE("Member walks objects and reads anything else as absent") {
  const json pod = json::parse(R"({"metadata": {"labels": {"a": "b", "n": null, "i": 3},
                                                 "annotations": "oops"},
                                    "spec": [1]})");
  CHECK(*Member(pod, {"metadata", "labels", "a"}) == "b");
  CHECK(Member(pod, {"metadata", "labels"})->size() == 3);
  CHECK(Member(pod, {}) == &pod);
  CHECK(Member(pod, {"metadata", "labels", "n"}) == nullptr);        // null
  CHECK(Member(pod, {"metadata", "labels", "missing"}) == nullptr);  // missing
  CHECK(Member(pod, {"metadata", "annotations", "x"}) == nullptr);   // not an object
  CHECK(Member(pod, {"spec", "nodeName"}) == nullptr);               // an array
  CHECK(Member(json("text"), {"metadata"}) == nullptr);              // not an object
}

TEST_CASE("StringAt reads strings only") {
  const json pod = json::parse(R"({"metadata": {"labels": {"a": "b", "i": 3}}})");
  CHECK(StringAt(pod, {"metadata", "labels", "a"}) == "b");
  CHECK(StringAt(pod, {"metadata", "labels", "i"}).empty());
  CHECK(StringAt(pod, {"metadata", "name"}).empty());
}

}  // namespace
}  // namespace kmt::webhook
