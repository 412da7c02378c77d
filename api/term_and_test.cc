#include "api/term_and.h"

#include <catch2/catch.hpp>

#include "api/names.h"
#include "base/testing/files.h"

namespace kmt::api {
namespace {

using json = nlohmann::json;
using kmt::base::testing::ReadTestJson;
using kmt::base::testing::TestFileStems;

NodeSelectorTerm ReadTerm(const std::string& path) {
  TermParse p = ParseNodeSelectorTerm(ReadTestJson(path), "");
  REQUIRE(p.term.has_value());
  return *p.term;
}

const std::string kGate(kSchedulingGate);

json Patch(const std::vector<json>& ops) {
  json array = ops;
  return array;
}

bool IsTest(const json& op) { return op["op"] == "test"; }

TEST_CASE("The AND, applied with nlohmann's JSON Patch, yields the golden pod") {
  const std::string name = GENERATE(from_range(TestFileStems("api/testdata/and", ".pod.json")));
  CAPTURE(name);
  const std::string dir = "api/testdata/and/" + name;
  const json pod = ReadTestJson(dir + ".pod.json");
  const NodeSelectorTerm term = ReadTerm(dir + ".term.json");
  const json golden = ReadTestJson(dir + ".golden.json");

  const std::vector<json> ops = AndTermIntoPod(pod, term, kGate);
  CAPTURE(Patch(ops).dump());
  REQUIRE_FALSE(ops.empty());
  // Tests first, then changes; nothing but add/remove/replace after them.
  size_t first_change = 0;
  while (first_change < ops.size() && IsTest(ops[first_change])) ++first_change;
  CHECK(first_change >= 2);  // uid + what the changes rely on
  CHECK(ops[0] == json{{"op", "test"},
                       {"path", "/metadata/uid"},
                       {"value", "cfad06b0-b6ec-4b1b-9f88-10d009f4c3ab"}});
  for (size_t i = first_change; i < ops.size(); ++i) {
    CHECK_FALSE(IsTest(ops[i]));
  }

  const json patched = pod.patch(Patch(ops));
  CHECK(patched == golden);
  CHECK(PodCarriesTerm(patched, term));
  CHECK_FALSE(PodHasGate(patched, kGate));
  CHECK(PodHasGate(pod, kGate));
  // Everything outside spec.affinity and spec.schedulingGates is identical.
  json a = pod, b = patched;
  a["spec"].erase("affinity");
  b["spec"].erase("affinity");
  a["spec"].erase("schedulingGates");
  b["spec"].erase("schedulingGates");
  CHECK(a == b);

  SECTION("idempotent: on the merged pod, no affinity change") {
    json merged_gated = patched;
    merged_gated["spec"]["schedulingGates"] = pod["spec"]["schedulingGates"];
    const std::vector<json> again = AndTermIntoPod(merged_gated, term, kGate);
    CAPTURE(Patch(again).dump());
    for (const json& op : again) {
      CHECK(op["path"].get<std::string>().rfind("/spec/affinity", 0) == std::string::npos);
    }
    CHECK(merged_gated.patch(Patch(again)) == golden);
    CHECK(AndTermIntoPod(patched, term, kGate).empty());
  }

  SECTION("the patch fails on any other version of the pod") {
    json other_uid = pod;
    other_uid["metadata"]["uid"] = "00000000-0000-0000-0000-000000000000";
    CHECK_THROWS_AS(other_uid.patch(Patch(ops)), json::other_error);

    json other_gates = pod;
    other_gates["spec"]["schedulingGates"].push_back({{"name", "example.com/late"}});
    CHECK_THROWS_AS(other_gates.patch(Patch(ops)), json::other_error);

    // A concurrent writer got there first: it created, or added to, the required node
    // affinity the patch is about to create or append to.
    json other_affinity = pod;
    const json extra_term = {{"matchExpressions", {{{"key", "x"}, {"operator", "Exists"}}}}};
    json& spec = other_affinity["spec"];
    if (!spec.contains("affinity")) {
      other_affinity["metadata"]["resourceVersion"] = "48214";
      spec["affinity"] = {{"nodeAffinity",
                           {{"requiredDuringSchedulingIgnoredDuringExecution",
                             {{"nodeSelectorTerms", {extra_term}}}}}}};
    } else if (!spec["affinity"].contains("nodeAffinity")) {
      spec["affinity"]["nodeAffinity"] = {{"requiredDuringSchedulingIgnoredDuringExecution",
                                           {{"nodeSelectorTerms", {extra_term}}}}};
    } else if (!spec["affinity"]["nodeAffinity"].contains(
                   "requiredDuringSchedulingIgnoredDuringExecution")) {
      spec["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"] = {
          {"nodeSelectorTerms", {extra_term}}};
    } else {
      spec["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
          ["nodeSelectorTerms"]
              .push_back(extra_term);
    }
    CHECK_THROWS_AS(other_affinity.patch(Patch(ops)), json::other_error);
  }
}

TEST_CASE("Exact operations for KubeVirt's host-model term") {
  const json pod = ReadTestJson("api/testdata/and/one_term.pod.json");
  const NodeSelectorTerm term = ReadTerm("api/testdata/and/one_term.term.json");
  const std::string req =
      "/spec/affinity/nodeAffinity/requiredDuringSchedulingIgnoredDuringExecution";
  const std::vector<json> want{
      {{"op", "test"},
       {"path", "/metadata/uid"},
       {"value", "cfad06b0-b6ec-4b1b-9f88-10d009f4c3ab"}},
      {{"op", "test"},
       {"path", req},
       {"value",
        pod["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]}},
      {{"op", "test"},
       {"path", "/spec/schedulingGates"},
       {"value", json::array({{{"name", kGate}}})}},
      {{"op", "add"},
       {"path", req + "/nodeSelectorTerms/0/matchExpressions/-"},
       {"value",
        json::parse(
            R"({"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["a"]})")}},
      {{"op", "add"},
       {"path", req + "/nodeSelectorTerms/0/matchFields"},
       {"value",
        json::parse(R"([{"key": "metadata.name", "operator": "In", "values": ["node-3"]}])")}},
      {{"op", "remove"}, {"path", "/spec/schedulingGates/0"}},
  };
  CHECK(Patch(AndTermIntoPod(pod, term, kGate)) == Patch(want));
}

TEST_CASE("Without spec.affinity the patch is guarded by resourceVersion") {
  const json pod = ReadTestJson("api/testdata/and/no_affinity.pod.json");
  const NodeSelectorTerm term = ReadTerm("api/testdata/and/no_affinity.term.json");
  const std::vector<json> ops = AndTermIntoPod(pod, term, kGate);
  REQUIRE(ops.size() >= 2);
  CHECK(ops[1] == json{{"op", "test"}, {"path", "/metadata/resourceVersion"}, {"value", "48213"}});
}

TEST_CASE("A pod that already carries the term but is gated only loses the gate") {
  json pod = ReadTestJson("api/testdata/and/one_term.golden.json");
  pod["spec"]["schedulingGates"] = {{{"name", "a"}}, {{"name", kGate}}, {{"name", kGate}}};
  const NodeSelectorTerm term = ReadTerm("api/testdata/and/one_term.term.json");
  const std::vector<json> ops = AndTermIntoPod(pod, term, kGate);
  const std::vector<json> want{
      {{"op", "test"},
       {"path", "/metadata/uid"},
       {"value", "cfad06b0-b6ec-4b1b-9f88-10d009f4c3ab"}},
      {{"op", "test"},
       {"path", "/spec/schedulingGates"},
       {"value", pod["spec"]["schedulingGates"]}},
      {{"op", "remove"}, {"path", "/spec/schedulingGates/2"}},
      {{"op", "remove"}, {"path", "/spec/schedulingGates/1"}},
  };
  CHECK(Patch(ops) == Patch(want));
  CHECK(pod.patch(Patch(ops))["spec"]["schedulingGates"] == json::array({{{"name", "a"}}}));
}

TEST_CASE("Malformed pods and empty terms yield no operations and never throw") {
  const NodeSelectorTerm term{{{"zone", "In", {"a"}}}, {}};
  auto input = GENERATE(
      as<std::string>{}, R"(null)", R"([])", R"({})", R"({"spec": 1})",
      R"({"spec": {"affinity": []}})", R"({"spec": {"affinity": {"nodeAffinity": "x"}}})",
      R"({"spec": {"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": 3}}}})",
      R"({"spec": {"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": {}}}}}})",
      R"({"spec": {"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [7]}}}}})",
      R"({"spec": {"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{"matchExpressions": "x"}]}}}}})",
      R"({"spec": {"affinity": {}, "schedulingGates": {"name": "g"}}})");
  CAPTURE(input);
  const json pod = json::parse(input);
  CHECK(AndTermIntoPod(pod, term, kGate).empty());
  CHECK_FALSE(PodCarriesTerm(pod, term));
  CHECK_FALSE(PodHasGate(pod, kGate));
  CHECK(
      AndTermIntoPod(ReadTestJson("api/testdata/and/one_term.pod.json"), NodeSelectorTerm{}, kGate)
          .empty());
}

TEST_CASE("AffinityTheAndReads keeps what the AND tests and writes into, and nothing else") {
  const NodeSelectorTerm term{{{"zone", "In", {"a"}}}, {{"metadata.name", "In", {"node-3"}}}};
  SECTION("every golden pod: the same operations") {
    auto name = GENERATE(from_range(TestFileStems("api/testdata/and", ".pod.json")));
    CAPTURE(name);
    const json pod = ReadTestJson("api/testdata/and/" + name + ".pod.json");
    const NodeSelectorTerm golden_term = ReadTerm("api/testdata/and/" + name + ".term.json");
    json trimmed = pod;
    if (pod["spec"].contains("affinity")) {
      trimmed["spec"]["affinity"] = AffinityTheAndReads(pod["spec"]["affinity"]);
    }
    CHECK(Patch(AndTermIntoPod(trimmed, golden_term, kGate)) ==
          Patch(AndTermIntoPod(pod, golden_term, kGate)));
    CHECK(Patch(AndTermIntoPod(trimmed, term, kGate)) == Patch(AndTermIntoPod(pod, term, kGate)));
  }
  SECTION("each shape of spec.affinity") {
    auto affinity = GENERATE(
        as<std::string>{}, R"(null)", R"([])", R"("x")", R"({})",
        R"({"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": []}})",
        R"({"nodeAffinity": null, "podAffinity": {}})",
        R"({"nodeAffinity": "x", "podAffinity": {}})",
        R"({"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": []}, "podAffinity": {}})",
        R"({"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": null, "p": 1}})",
        R"({"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": 3}, "podAffinity": {}})",
        R"({"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": []}}})",
        R"({"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}]}, "preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 1}]}, "podAntiAffinity": {}})",
        R"({"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{"matchFields": "x"}]}}})");
    CAPTURE(affinity);
    const json pod = {
        {"metadata", {{"uid", "u"}, {"resourceVersion", "7"}}},
        {"spec", {{"affinity", json::parse(affinity)}, {"schedulingGates", {{{"name", kGate}}}}}}};
    json trimmed = pod;
    trimmed["spec"]["affinity"] = AffinityTheAndReads(pod["spec"]["affinity"]);
    CHECK(Patch(AndTermIntoPod(trimmed, term, kGate)) == Patch(AndTermIntoPod(pod, term, kGate)));
  }
  SECTION("what is dropped") {
    const json affinity = ReadTestJson("api/testdata/and/one_term.pod.json")["spec"]["affinity"];
    REQUIRE(affinity.contains("podAntiAffinity"));
    CHECK(AffinityTheAndReads(affinity) ==
          json{{"nodeAffinity",
                {{"requiredDuringSchedulingIgnoredDuringExecution",
                  affinity["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]}}}});
    const json only_preferred =
        ReadTestJson("api/testdata/and/only_preferred.pod.json")["spec"]["affinity"];
    CHECK(AffinityTheAndReads(only_preferred) ==
          json{{"nodeAffinity", only_preferred["nodeAffinity"]}});
    const json only_anti =
        ReadTestJson("api/testdata/and/only_pod_anti_affinity.pod.json")["spec"]["affinity"];
    CHECK(AffinityTheAndReads(only_anti) == only_anti);  // tested whole
  }
}

TEST_CASE("PodCarriesTerm needs every required term to hold every requirement") {
  const json pod = ReadTestJson("api/testdata/and/requirement_already_present.pod.json");
  CHECK(PodCarriesTerm(
      pod, {{{"node-labeller.kubevirt.io/obsolete-host-model", "DoesNotExist", {}}}, {}}));
  CHECK_FALSE(PodCarriesTerm(
      pod, {{{"topology.kubernetes.io/zone", "In", {"a", "b"}}}, {}}));  // term 1 lacks it
  CHECK_FALSE(PodCarriesTerm(ReadTestJson("api/testdata/and/only_preferred.pod.json"),
                             {{{"disktype", "In", {"ssd"}}}, {}}));  // preferred does not count
  CHECK(SelectorCarriesTerm({{{{{"a", "Exists", {}}, {"b", "In", {"1", "2"}}}, {}}}},
                            {{{"b", "In", {"2", "1"}}}, {}}));
  CHECK_FALSE(SelectorCarriesTerm({}, {{{"a", "Exists", {}}}, {}}));
}

TEST_CASE("WithoutTerm takes out what the AND appended, leaving the pod's own affinity") {
  const NodeSelectorTerm term{{{"zone", "In", {"a"}}}, {{"metadata.name", "In", {"w1"}}}};
  // Two own terms, each carrying the appended requirements after the AND.
  const NodeSelector merged{{
      {{{"arch", "In", {"amd64"}}, {"zone", "In", {"a"}}}, {{"metadata.name", "In", {"w1"}}}},
      {{{"gpu", "Exists", {}}, {"zone", "In", {"a"}}}, {{"metadata.name", "In", {"w1"}}}},
  }};
  const NodeSelector own{{
      {{{"arch", "In", {"amd64"}}}, {}},
      {{{"gpu", "Exists", {}}}, {}},
  }};
  CHECK(WithoutTerm(merged, term) == own);
  // No affinity before the AND: the AND created terms holding only the request.
  CHECK(WithoutTerm(NodeSelector{{term}}, term) == std::nullopt);
  CHECK(WithoutTerm(std::nullopt, term) == std::nullopt);
  // An own term left empty by the AND (it matches no node) stays, as long as another has content.
  const NodeSelector with_empty{{{{{"arch", "In", {"amd64"}}, {"zone", "In", {"a"}}}, {}}, {}}};
  CHECK(WithoutTerm(with_empty, term) == NodeSelector{{{{{"arch", "In", {"amd64"}}}, {}}, {}}});
}

}  // namespace
}  // namespace kmt::api
