#include "api/policy.h"

#include <algorithm>
#include <catch2/catch.hpp>

namespace kmt::api {
namespace {

using json = nlohmann::json;

json Policy(const std::string& name, const std::string& spec) {
  return json{{"apiVersion", "migration-target.kubevirt.io/v1alpha1"},
              {"kind", "MigrationTargetPolicy"},
              {"metadata", {{"name", name}}},
              {"spec", json::parse(spec)}};
}

std::vector<std::string> Fields(const PolicyParse& p) {
  std::vector<std::string> out;
  out.reserve(p.causes.size());
  for (const Cause& c : p.causes) out.push_back(c.field + ": " + c.message);
  return out;
}

TEST_CASE("A policy parses: defaults, selectors, the term as its annotation text") {
  PolicyParse p = ParsePolicy(Policy("rack-b", R"({
    "match": {"sourceNodeSelector": {"matchLabels": {"rack": "a"}},
              "vmiSelector": {"matchExpressions": [{"key": "tier", "operator": "NotIn", "values": ["db"]}]}},
    "addedNodeSelectorTerm": {"matchExpressions": [{"key": "rack", "operator": "In", "values": ["b"]}]}})"));
  REQUIRE(p.causes.empty());
  REQUIRE(p.policy);
  CHECK(p.policy->name == "rack-b");
  CHECK(p.policy->priority == 0);
  CHECK(p.policy->origin == PolicyOrigin::kAny);
  CHECK_FALSE(p.policy->namespace_selector.has_value());
  CHECK(p.policy->term_text ==
        R"({"matchExpressions":[{"key":"rack","operator":"In","values":["b"]}]})");
  CHECK(p.policy->term.match_expressions.size() == 1);
}

TEST_CASE("Every broken rule is a cause with its field path from the object's root") {
  PolicyParse p = ParsePolicy(Policy("bad", R"({
    "priority": "high",
    "match": {"origin": "Drain",
              "namespaceSelector": {"matchLabels": {"bad key!": "v"},
                                    "matchExpressions": [{"key": "a", "operator": "In"},
                                                         {"key": "b", "operator": "Exists", "values": ["x"]},
                                                         {"key": "c", "operator": "Gt", "values": ["1"]}]}},
    "addedNodeSelectorTerm": {"matchFields": [{"key": "metadata.labels", "operator": "In", "values": ["x"]}]}})"));
  CHECK_FALSE(p.policy);
  // NOLINTBEGIN(bugprone-suspicious-missing-comma): the longer messages are split over lines.
  const std::vector<std::string> want = {
      "spec.priority: Invalid value: \"high\": must be of type integer, not string",
      "spec.match.origin: Unsupported value: \"Drain\": supported values: \"Any\", \"Evacuation\", "
      "\"Descheduler\"",
      "spec.match.namespaceSelector.matchLabels: Invalid value: \"bad key!\": name part must "
      "consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
      "alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for "
      "validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')",
      "spec.match.namespaceSelector.matchExpressions[0].values: Required value: must be specified "
      "when `operator` is 'In' or 'NotIn'",
      "spec.match.namespaceSelector.matchExpressions[1].values: Forbidden: may not be specified "
      "when `operator` is 'Exists' or 'DoesNotExist'",
      "spec.match.namespaceSelector.matchExpressions[2].operator: Unsupported value: \"Gt\": "
      "supported values: \"In\", \"NotIn\", \"Exists\", \"DoesNotExist\"",
      "spec.addedNodeSelectorTerm.matchFields[0].key: Invalid value: \"metadata.labels\": not a "
      "valid field selector key",
  };
  // NOLINTEND(bugprone-suspicious-missing-comma)
  CHECK(Fields(p) == want);
}

TEST_CASE("maxInboundPerNode: an integer 1..10000, absent by default; the annotation reads tight") {
  const std::string term =
      R"("addedNodeSelectorTerm": {"matchExpressions": [{"key": "a", "operator": "Exists"}]})";
  PolicyParse none = ParsePolicy(Policy("p", "{" + term + "}"));
  REQUIRE(none.policy);
  CHECK_FALSE(none.policy->max_inbound_per_node.has_value());
  PolicyParse two = ParsePolicy(Policy("p", R"({"maxInboundPerNode": 2, )" + term + "}"));
  REQUIRE(two.policy);
  CHECK(two.policy->max_inbound_per_node == 2);
  CHECK(Fields(ParsePolicy(Policy("p", R"({"maxInboundPerNode": 0, )" + term + "}"))) ==
        std::vector<std::string>{
            "spec.maxInboundPerNode: Invalid value: 0: must be between 1 and 10000, inclusive"});
  CHECK(Fields(ParsePolicy(Policy("p", R"({"maxInboundPerNode": 10001, )" + term + "}"))) ==
        std::vector<std::string>{"spec.maxInboundPerNode: Invalid value: 10001: must be between 1 "
                                 "and 10000, inclusive"});
  CHECK(Fields(ParsePolicy(Policy("p", R"({"maxInboundPerNode": "1", )" + term + "}"))) ==
        std::vector<std::string>{
            "spec.maxInboundPerNode: Invalid value: \"1\": must be of type integer, not string"});

  CHECK_FALSE(ParseMaxInbound(std::nullopt).has_value());
  CHECK(ParseMaxInbound("3") == 3);
  CHECK(ParseMaxInbound("10000") == 10000);
  for (const char* damaged : {"", "0", "-1", "03", "2.5", "ten", "10001", "99999999999", " 2"}) {
    INFO(damaged);
    CHECK(ParseMaxInbound(std::string(damaged)) == 1);
  }
}

TEST_CASE("A policy without a term or spec is refused") {
  CHECK(Fields(ParsePolicy(Policy("n", "{}"))) ==
        std::vector<std::string>{"spec.addedNodeSelectorTerm: Required value"});
  json no_spec = Policy("n", "{}");
  no_spec.erase("spec");
  CHECK(Fields(ParsePolicy(no_spec)) == std::vector<std::string>{"spec: Required value"});
  CHECK(Fields(ParsePolicy(Policy("n", R"({"addedNodeSelectorTerm": {}})"))).size() == 1);
}

MigrationTargetPolicy Parsed(const std::string& name, const std::string& spec) {
  PolicyParse p = ParsePolicy(Policy(name, spec));
  INFO(name);
  REQUIRE(p.causes.empty());
  return *p.policy;
}

constexpr const char* kTerm =
    R"("addedNodeSelectorTerm": {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n1"]}]})";

TEST_CASE("Matching: origin, the three selectors, absent and empty selectors") {
  EvacuationFacts drain{false, json{{"app", "db"}}, json{{"team", "a"}}, json{{"rack", "a"}}};
  EvacuationFacts desched = drain;
  desched.descheduler = true;

  CHECK(PolicyMatches(Parsed("any", std::string("{") + kTerm + "}"), drain));
  CHECK(PolicyMatches(Parsed("any", std::string("{") + kTerm + "}"), desched));
  const auto evac =
      Parsed("e", std::string(R"({"match": {"origin": "Evacuation"},)") + kTerm + "}");
  CHECK(PolicyMatches(evac, drain));
  CHECK_FALSE(PolicyMatches(evac, desched));
  const auto des =
      Parsed("d", std::string(R"({"match": {"origin": "Descheduler"},)") + kTerm + "}");
  CHECK_FALSE(PolicyMatches(des, drain));
  CHECK(PolicyMatches(des, desched));

  const auto rack = Parsed(
      "r", std::string(R"({"match": {"sourceNodeSelector": {"matchLabels": {"rack": "a"}}},)") +
               kTerm + "}");
  CHECK(PolicyMatches(rack, drain));
  EvacuationFacts other = drain;
  other.source_node_labels = json{{"rack", "b"}};
  CHECK_FALSE(PolicyMatches(rack, other));
  other.source_node_labels = nullptr;
  CHECK_FALSE(PolicyMatches(rack, other));

  const auto ns = Parsed(
      "n",
      std::string(
          R"({"match": {"namespaceSelector": {"matchExpressions": [{"key": "team", "operator": "Exists"}]}},)") +
          kTerm + "}");
  CHECK(PolicyMatches(ns, drain));
  other = drain;
  other.namespace_labels = json::object();
  CHECK_FALSE(PolicyMatches(ns, other));

  const auto notdb = Parsed(
      "v",
      std::string(
          R"({"match": {"vmiSelector": {"matchExpressions": [{"key": "app", "operator": "NotIn", "values": ["db"]}]}},)") +
          kTerm + "}");
  CHECK_FALSE(PolicyMatches(notdb, drain));
  other = drain;
  other.vmi_labels = nullptr;  // NotIn matches an object without the key
  CHECK(PolicyMatches(notdb, other));

  const auto empty = Parsed("x", std::string(R"({"match": {"vmiSelector": {}},)") + kTerm + "}");
  CHECK(PolicyMatches(empty, drain));
}

TEST_CASE("Precedence: highest priority, then smallest name, whatever the list order") {
  const EvacuationFacts facts{false, json::object(), json::object(), json::object()};
  std::vector<MigrationTargetPolicy> ps = {
      Parsed("b", std::string(R"({"priority": 5,)") + kTerm + "}"),
      Parsed("a", std::string(R"({"priority": 5,)") + kTerm + "}"),
      Parsed("z", std::string(R"({"priority": 1,)") + kTerm + "}"),
      Parsed("high-but-no-match",
             std::string(R"({"priority": 9, "match": {"origin": "Descheduler"},)") + kTerm + "}"),
  };
  REQUIRE(SelectPolicy(ps, facts) != nullptr);
  CHECK(SelectPolicy(ps, facts)->name == "a");
  std::ranges::reverse(ps);
  CHECK(SelectPolicy(ps, facts)->name == "a");
  EvacuationFacts desched = facts;
  desched.descheduler = true;
  CHECK(SelectPolicy(ps, desched)->name == "high-but-no-match");
  CHECK(SelectPolicy({}, facts) == nullptr);
}

TEST_CASE("EvacuationFactsOf reads what the webhook and the plugin match on") {
  const json vmi = json::parse(R"({"metadata": {"name": "vm", "labels": {"app": "web"},
      "annotations": {"kubevirt.io/eviction-source": "descheduler"}}})");
  const json ns = json::parse(R"({"metadata": {"name": "prod", "labels": {"team": "x"}}})");
  const json node = json::parse(R"({"rack": "a"})");
  EvacuationFacts f = EvacuationFactsOf(vmi, ns, node);
  CHECK(f.descheduler);
  CHECK(f.vmi_labels == json::parse(R"({"app": "web"})"));
  CHECK(f.namespace_labels == json::parse(R"({"team": "x"})"));
  CHECK(f.source_node_labels == node);

  // Absent or odd objects: null labels, not the descheduler's.
  for (const char* odd :
       {"null", "[]", R"({"metadata": 5})",
        R"({"metadata": {"annotations": {"kubevirt.io/eviction-source": 1}}})",
        R"({"metadata": {"annotations": {"kubevirt.io/eviction-source": "x"}}})"}) {
    CAPTURE(odd);
    EvacuationFacts g = EvacuationFactsOf(json::parse(odd), json::parse(odd), nullptr);
    CHECK_FALSE(g.descheduler);
    CHECK(g.vmi_labels.is_null());
    CHECK(g.namespace_labels.is_null());
    CHECK(g.source_node_labels.is_null());
  }
}

TEST_CASE("ParsePolicies keeps those that parse in order and skips the others with a cause") {
  PolicySet set = ParsePolicies({
      Policy("ns-scoped", R"({"match": {"namespaceSelector": {"matchLabels": {"team": "x"}}},
        "addedNodeSelectorTerm": {"matchExpressions": [{"key": "rack", "operator": "Exists"}]}})"),
      Policy("broken", R"({"addedNodeSelectorTerm": {}})"),
      Policy(
          "plain",
          R"({"addedNodeSelectorTerm": {"matchExpressions": [{"key": "rack", "operator": "Exists"}]}})"),
      json("not an object"),
  });
  REQUIRE(set.policies.size() == 2);
  CHECK(set.policies[0].name == "ns-scoped");
  CHECK(set.policies[1].name == "plain");
  CHECK(set.wants_namespace);
  REQUIRE(set.skipped.size() == 2);
  CHECK(set.skipped[0].name == "broken");
  CHECK(set.skipped[0].Warning() ==
        "MigrationTargetPolicy \"broken\" is skipped: spec.addedNodeSelectorTerm: Required value: "
        "must have at least one requirement in matchExpressions or matchFields");
  CHECK(set.skipped[1].name.empty());
  CHECK_FALSE(
      ParsePolicies(
          {Policy(
              "plain",
              R"({"addedNodeSelectorTerm": {"matchExpressions": [{"key": "rack", "operator": "Exists"}]}})")})
          .wants_namespace);
}

}  // namespace
}  // namespace kmt::api
