#include "api/validation.h"

#include <catch2/catch.hpp>

namespace kmt::api {
namespace {

// Kubernetes' texts (see label_validation_test.cc for where they come from).
const std::string kNameRegex =
    "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end "
    "with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for "
    "validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";
const std::string kValueRegex =
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or "
    "'.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  "
    "or "
    "'12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')";
const std::string kDNSRegex =
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or "
    "'.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used "
    "for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";

NodeSelectorTerm Expr(NodeSelectorRequirement r) { return {{std::move(r)}, {}}; }
NodeSelectorTerm Field(NodeSelectorRequirement r) { return {{}, {std::move(r)}}; }

TEST_CASE("Valid terms have no causes") {
  auto term = GENERATE(
      Expr({"zone", "In", {"a", "b"}}), Expr({"zone", "NotIn", {"a"}}), Expr({"gpu", "Exists", {}}),
      Expr({"node-labeller.kubevirt.io/obsolete-host-model", "DoesNotExist", {}}),
      Expr({"cores", "Gt", {"4"}}), Expr({"cores", "Lt", {"16"}}), Expr({"k", "In", {""}}),
      Field({"metadata.name", "In", {"node-3"}}), Field({"metadata.name", "NotIn", {"a.b"}}),
      NodeSelectorTerm{{{"a", "Exists", {}}}, {{"metadata.name", "In", {"n"}}}});
  CAPTURE(ToString(term));
  CHECK(ValidateNodeSelectorTerm(term, "").empty());
}

TEST_CASE("One row per Kubernetes rule: exact type, field and message") {
  auto [term, want] = GENERATE_REF(table<NodeSelectorTerm, Cause>({
      // ValidateNodeSelectorRequirement: operators and value counts.
      {Expr({"zone", "In", {}}),
       {"FieldValueRequired", "t.matchExpressions[0].values",
        "Required value: must be specified when `operator` is 'In' or 'NotIn'"}},
      {Expr({"zone", "NotIn", {}}),
       {"FieldValueRequired", "t.matchExpressions[0].values",
        "Required value: must be specified when `operator` is 'In' or 'NotIn'"}},
      {Expr({"gpu", "Exists", {"x"}}),
       {"FieldValueForbidden", "t.matchExpressions[0].values",
        "Forbidden: may not be specified when `operator` is 'Exists' or 'DoesNotExist'"}},
      {Expr({"gpu", "DoesNotExist", {"x"}}),
       {"FieldValueForbidden", "t.matchExpressions[0].values",
        "Forbidden: may not be specified when `operator` is 'Exists' or 'DoesNotExist'"}},
      {Expr({"cores", "Gt", {}}),
       {"FieldValueRequired", "t.matchExpressions[0].values",
        "Required value: must be specified single value when `operator` is 'Lt' or 'Gt'"}},
      {Expr({"cores", "Lt", {"1", "2"}}),
       {"FieldValueRequired", "t.matchExpressions[0].values",
        "Required value: must be specified single value when `operator` is 'Lt' or 'Gt'"}},
      {Expr({"cores", "Gt", {"4x"}}),
       {"FieldValueInvalid", "t.matchExpressions[0].values[0]",
        R"(Invalid value: "4x": for 'Gt', 'Lt' operators, the value must be an integer)"}},
      {Expr({"cores", "Gt", {"99999999999999999999"}}),
       {"FieldValueInvalid", "t.matchExpressions[0].values[0]",
        R"(Invalid value: "99999999999999999999": for 'Gt', 'Lt' operators, the value must be an integer)"}},
      {Expr({"zone", "in", {"a"}}),
       {"FieldValueInvalid", "t.matchExpressions[0].operator",
        R"(Invalid value: "in": not a valid selector operator)"}},
      {Expr({"zone", "", {"a"}}),
       {"FieldValueInvalid", "t.matchExpressions[0].operator",
        R"(Invalid value: "": not a valid selector operator)"}},
      // ValidateLabelName on the key.
      {Expr({"-zone", "Exists", {}}),
       {"FieldValueInvalid", "t.matchExpressions[0].key",
        R"(Invalid value: "-zone": )" + kNameRegex}},
      {Expr({std::string(64, 'k'), "Exists", {}}),
       {"FieldValueInvalid", "t.matchExpressions[0].key",
        "Invalid value: \"" + std::string(64, 'k') +
            "\": name part must be no more than 63 characters"}},
      {Expr({"/zone", "Exists", {}}),
       {"FieldValueInvalid", "t.matchExpressions[0].key",
        R"(Invalid value: "/zone": prefix part must be non-empty)"}},
      // IsValidLabelValue on each value.
      {Expr({"zone", "In", {"a", "b c"}}),
       {"FieldValueInvalid", "t.matchExpressions[0].values[1]",
        R"(Invalid value: "b c": )" + kValueRegex}},
      {Expr({"zone", "In", {std::string(64, 'v')}}),
       {"FieldValueInvalid", "t.matchExpressions[0].values[0]",
        "Invalid value: \"" + std::string(64, 'v') + "\": must be no more than 63 characters"}},
      // validateNodeFieldSelectorRequirement.
      {Field({"metadata.name", "In", {}}),
       {"FieldValueRequired", "t.matchFields[0].values",
        "Required value: must be only one value when `operator` is 'In' or 'NotIn' for node field "
        "selector"}},
      {Field({"metadata.name", "NotIn", {"a", "b"}}),
       {"FieldValueRequired", "t.matchFields[0].values",
        "Required value: must be only one value when `operator` is 'In' or 'NotIn' for node field "
        "selector"}},
      {Field({"metadata.name", "Exists", {}}),
       {"FieldValueInvalid", "t.matchFields[0].operator",
        R"(Invalid value: "Exists": not a valid selector operator)"}},
      {Field({"metadata.uid", "In", {"x"}}),
       {"FieldValueInvalid", "t.matchFields[0].key",
        R"(Invalid value: "metadata.uid": not a valid field selector key)"}},
      {Field({"metadata.name", "In", {"Node_1"}}),
       {"FieldValueInvalid", "t.matchFields[0].values[0]",
        R"(Invalid value: "Node_1": )" + kDNSRegex}},
      // This project's limits.
      {NodeSelectorTerm{},
       {"FieldValueRequired", "t",
        "Required value: must have at least one requirement in matchExpressions or matchFields"}},
  }));
  CAPTURE(ToString(term));
  CHECK(ValidateNodeSelectorTerm(term, "t") == std::vector<Cause>{want});
}

TEST_CASE("At most kMaxRequirements requirements in total") {
  NodeSelectorTerm term;
  for (int i = 0; i < 60; ++i)
    term.match_expressions.push_back({"k" + std::to_string(i), "Exists", {}});
  for (int i = 0; i < 4; ++i)
    term.match_fields.push_back({"metadata.name", "NotIn", {"n" + std::to_string(i)}});
  CHECK(ValidateNodeSelectorTerm(term, "t").empty());
  term.match_fields.push_back({"metadata.name", "NotIn", {"n9"}});
  CHECK(ValidateNodeSelectorTerm(term, "t") ==
        std::vector<Cause>{{"FieldValueTooMany", "t", "Too many: 65: must have at most 64 items"}});
}

TEST_CASE("Every cause is reported, in Kubernetes' order") {
  const NodeSelectorTerm term{{{"", "Sometimes", {"-x"}}, {"ok", "Exists", {}}, {"zone", "In", {}}},
                              {{"spec.nodeName", "Gt", {"A", "B"}}}};
  const std::vector<Cause> want{
      {"FieldValueInvalid", "matchExpressions[0].operator",
       R"(Invalid value: "Sometimes": not a valid selector operator)"},
      {"FieldValueInvalid", "matchExpressions[0].key",
       R"(Invalid value: "": name part must be non-empty)"},
      {"FieldValueInvalid", "matchExpressions[0].key", R"(Invalid value: "": )" + kNameRegex},
      {"FieldValueInvalid", "matchExpressions[0].values[0]",
       R"(Invalid value: "-x": )" + kValueRegex},
      {"FieldValueRequired", "matchExpressions[2].values",
       "Required value: must be specified when `operator` is 'In' or 'NotIn'"},
      {"FieldValueInvalid", "matchFields[0].operator",
       R"(Invalid value: "Gt": not a valid selector operator)"},
      {"FieldValueInvalid", "matchFields[0].key",
       R"(Invalid value: "spec.nodeName": not a valid field selector key)"},
  };
  CHECK(ValidateNodeSelectorTerm(term, "") == want);
}

}  // namespace
}  // namespace kmt::api
