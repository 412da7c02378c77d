#include "api/node_selector.h"

#include <catch2/catch.hpp>

namespace kmt::api {
namespace {

using json = nlohmann::json;

TEST_CASE("ParseNodeSelectorTerm accepts a valid term and round-trips it") {
  const json j = json::parse(R"({
    "matchExpressions": [
      {"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["a", "b"]},
      {"key": "gpu", "operator": "Exists"}
    ],
    "matchFields": [{"key": "metadata.name", "operator": "In", "values": ["node-3"]}]
  })");
  const TermParse p = ParseNodeSelectorTerm(j, "");
  REQUIRE(p.causes.empty());
  REQUIRE(p.term.has_value());
  const NodeSelectorTerm want{
      {{"topology.kubernetes.io/zone", "In", {"a", "b"}}, {"gpu", "Exists", {}}},
      {{"metadata.name", "In", {"node-3"}}}};
  CHECK(*p.term == want);
  CHECK(ToJson(*p.term) == j);
  CHECK(ToString(*p.term) ==
        "topology.kubernetes.io/zone In [a, b], gpu Exists, metadata.name In [node-3]");
}

TEST_CASE("ParseNodeSelectorTerm treats null members as absent") {
  const TermParse p = ParseNodeSelectorTerm(
      json::parse(R"({"matchExpressions": null, "matchFields": [{"key": "metadata.name",
                      "operator": "In", "values": ["n"]}]})"),
      "p");
  REQUIRE(p.term.has_value());
  CHECK(p.term->match_expressions.empty());
  CHECK(p.term->match_fields.size() == 1);
  const TermParse q = ParseNodeSelectorTerm(json::parse(R"({"matchExpressions": [{"key": "k",
                                           "operator": "Exists", "values": null}]})"),
                                            "p");
  REQUIRE(q.term.has_value());
  CHECK(q.term->match_expressions[0].values.empty());
}

TEST_CASE("ParseNodeSelectorTerm rejects unknown members and wrong types, naming the path") {
  auto [input, path, want] = GENERATE(table<std::string, std::string, std::vector<Cause>>({
      {R"([])",
       "",
       {{"FieldValueTypeInvalid", "", "Invalid value: []: must be of type object, not array"}}},
      {R"("x")",
       "t",
       {{"FieldValueTypeInvalid", "t",
         R"(Invalid value: "x": must be of type object, not string)"}}},
      {R"({"nodeSelectorTerms": []})",
       "t",
       {{"FieldValueNotSupported", "t.nodeSelectorTerms",
         R"(Unsupported value: "nodeSelectorTerms": supported values: "matchExpressions", "matchFields")"}}},
      {R"({"matchExpressions": {"key": "a"}})",
       "",
       {{"FieldValueTypeInvalid", "matchExpressions",
         R"(Invalid value: {"key":"a"}: must be of type array, not object)"}}},
      {R"({"matchExpressions": [{"key": "a", "operator": "In", "value": ["x"]}]})",
       "",
       {{"FieldValueNotSupported", "matchExpressions[0].value",
         R"(Unsupported value: "value": supported values: "key", "operator", "values")"}}},
      {R"({"matchExpressions": [{"key": 5, "operator": true, "values": "x"}]})",
       "",
       {{"FieldValueTypeInvalid", "matchExpressions[0].key",
         "Invalid value: 5: must be of type string, not integer"},
        {"FieldValueTypeInvalid", "matchExpressions[0].operator",
         "Invalid value: true: must be of type string, not boolean"},
        {"FieldValueTypeInvalid", "matchExpressions[0].values",
         R"(Invalid value: "x": must be of type array, not string)"}}},
      {R"({"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["a", 1.5, null]}]})",
       "t",
       {{"FieldValueTypeInvalid", "t.matchFields[0].values[1]",
         "Invalid value: 1.5: must be of type string, not number"},
        {"FieldValueTypeInvalid", "t.matchFields[0].values[2]",
         "Invalid value: null: must be of type string, not null"}}},
      {R"({"matchFields": ["metadata.name"], "x": 1})",
       "",
       {{"FieldValueNotSupported", "x",
         R"(Unsupported value: "x": supported values: "matchExpressions", "matchFields")"},
        {"FieldValueTypeInvalid", "matchFields[0]",
         R"(Invalid value: "metadata.name": must be of type object, not string)"}}},
  }));
  CAPTURE(input);
  const TermParse p = ParseNodeSelectorTerm(json::parse(input), path);
  CHECK_FALSE(p.term.has_value());
  CHECK(p.causes == want);
}

TEST_CASE("ToJson omits empty lists as Go's omitempty does") {
  CHECK(ToJson(NodeSelectorRequirement{"k", "Exists", {}}) ==
        json{{"key", "k"}, {"operator", "Exists"}});
  CHECK(ToJson(NodeSelectorTerm{}) == json::object());
  CHECK(
      ToJson(NodeSelector{{NodeSelectorTerm{{{"k", "In", {"v"}}}, {}}}}) ==
      json::parse(
          R"({"nodeSelectorTerms":[{"matchExpressions":[{"key":"k","operator":"In","values":["v"]}]}]})"));
}

TEST_CASE("ToString of requirements") {
  auto [r, want] = GENERATE(table<NodeSelectorRequirement, std::string>({
      {{"zone", "In", {"a"}}, "zone In [a]"},
      {{"zone", "NotIn", {"a", "b"}}, "zone NotIn [a, b]"},
      {{"gpu", "Exists", {}}, "gpu Exists"},
      {{"gpu", "DoesNotExist", {}}, "gpu DoesNotExist"},
      {{"cores", "Gt", {"4"}}, "cores Gt [4]"},
  }));
  CHECK(ToString(r) == want);
}

TEST_CASE("SameRequirement compares values as a set") {
  CHECK(SameRequirement({"k", "In", {"a", "b"}}, {"k", "In", {"b", "a"}}));
  CHECK_FALSE(SameRequirement({"k", "In", {"a", "b"}}, {"k", "NotIn", {"a", "b"}}));
  CHECK_FALSE(SameRequirement({"k", "In", {"a"}}, {"k", "In", {"a", "b"}}));
  CHECK_FALSE(SameRequirement({"k", "In", {"a", "a"}}, {"k", "In", {"a", "b"}}));
  CHECK_FALSE(SameRequirement({"k", "Exists", {}}, {"j", "Exists", {}}));
}

TEST_CASE("Lenient readers skip what has the wrong shape") {
  const json j = json::parse(R"({"nodeSelectorTerms": [
      {"matchExpressions": [{"key": "a", "operator": "In", "values": ["x", 1]}, "junk"],
       "matchFields": 7},
      {}]})");
  const NodeSelector s = NodeSelectorFromJsonLenient(j);
  REQUIRE(s.terms.size() == 2);
  CHECK(s.terms[0].match_expressions == std::vector<NodeSelectorRequirement>{{"a", "In", {"x"}}});
  CHECK(s.terms[0].match_fields.empty());
  CHECK(s.terms[1].empty());
  CHECK(NodeSelectorFromJsonLenient(json("x")).terms.empty());
  CHECK(NodeSelectorFromJsonLenient(json::parse(R"({"nodeSelectorTerms": {}})")).terms.empty());
}

}  // namespace
}  // namespace kmt::api
