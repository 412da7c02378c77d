#include "api/labels.h"

#include <catch2/catch.hpp>

namespace kmt::api {
namespace {

TEST_CASE("Intern returns one stable copy per text") {
  const std::string* a = Intern("cpu-feature.node.kubevirt.io/avx2");
  CHECK(*a == "cpu-feature.node.kubevirt.io/avx2");
  CHECK(Intern(std::string("cpu-feature.node.kubevirt.io/") + "avx2") == a);
  CHECK(FindInterned("cpu-feature.node.kubevirt.io/avx2") == a);
  CHECK(FindInterned("never-interned-anywhere-9f2c") == nullptr);
  for (int i = 0; i < 10000; ++i) Intern("filler-" + std::to_string(i));  // rehashes
  CHECK(Intern("cpu-feature.node.kubevirt.io/avx2") == a);
}

TEST_CASE("Intern ids name the same texts") {
  const InternId id = InternIdOf("topology.kubernetes.io/zone");
  CHECK(id != kNoIntern);
  CHECK(FindInternId("topology.kubernetes.io/zone") == id);
  CHECK(InternText(id) == "topology.kubernetes.io/zone");
  CHECK(&InternText(id) == Intern("topology.kubernetes.io/zone"));
  CHECK(FindInternId("never-interned-anywhere-77aa") == kNoIntern);
  CHECK(InternText(kNoIntern).empty());
}

TEST_CASE("Labels find by text and by interned key") {
  const Labels l{{"kubernetes.io/hostname", "node-1"}, {"zone", "a"}, {"gpu", ""}};
  CHECK(l.size() == 3);
  REQUIRE(l.Find("zone") != nullptr);
  CHECK(*l.Find("zone") == "a");
  CHECK(*l.Find("gpu") == "");
  CHECK(l.Find("rack") == nullptr);
  CHECK(l.Find("never-interned-anywhere-1b7d") == nullptr);
  CHECK(InternText(l.FindId(InternIdOf("kubernetes.io/hostname"))) == "node-1");
  CHECK(l.FindId(kNoIntern) == kNoIntern);
  CHECK(l.FindId(InternIdOf("rack")) == kNoIntern);
  CHECK(l.Sorted() == std::vector<std::pair<std::string, std::string>>{
                          {"gpu", ""}, {"kubernetes.io/hostname", "node-1"}, {"zone", "a"}});
}

TEST_CASE("Labels from JSON keep string values only") {
  const Labels l =
      Labels::FromJson(nlohmann::json::parse(R"({"a": "1", "b": 2, "c": null, "d": "x"})"));
  CHECK(l.Sorted() == std::vector<std::pair<std::string, std::string>>{{"a", "1"}, {"d", "x"}});
  CHECK(l.ToJson() == nlohmann::json::parse(R"({"a": "1", "d": "x"})"));
  CHECK(Labels::FromJson(nlohmann::json::array()).empty());
  CHECK(Labels::FromJson(nullptr).empty());
  CHECK(Labels::FromJson(nlohmann::json::parse(R"({"a": "1"})")) == Labels{{"a", "1"}});
}

TEST_CASE("Duplicate keys keep the first value") {
  const Labels l{{"a", "1"}, {"a", "2"}};
  CHECK(l.size() == 1);
  CHECK(*l.Find("a") == "1");
}

}  // namespace
}  // namespace kmt::api
