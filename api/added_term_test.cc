#include "api/added_term.h"

#include <catch2/catch.hpp>

#include "api/names.h"

namespace kmt::api {
namespace {

using json = nlohmann::json;

const std::string kField =
    "metadata.annotations[migration-target.kubevirt.io/added-node-selector-term]";

TEST_CASE("AddedTermSource reads the annotation") {
  json vmim =
      json::parse(R"({"apiVersion": "kubevirt.io/v1", "kind": "VirtualMachineInstanceMigration",
      "metadata": {"name": "m", "annotations": {"other": "x"}}, "spec": {"vmiName": "vm"}})");
  CHECK_FALSE(AddedTermSource(vmim).has_value());
  vmim["metadata"]["annotations"][std::string(kAddedTermAnnotation)] = R"({"matchFields": []})";
  CHECK(AddedTermSource(vmim) == std::optional<std::string>(R"({"matchFields": []})"));
  CHECK_FALSE(AddedTermSource(json::parse(R"({"metadata": {"annotations": null}})")).has_value());
  CHECK_FALSE(AddedTermSource(json::parse(R"({"metadata": 3})")).has_value());
  CHECK_FALSE(AddedTermSource(json::array()).has_value());
  CHECK_FALSE(
      AddedTermSource(
          json::parse(
              R"({"metadata": {"annotations": {"migration-target.kubevirt.io/added-node-selector-term": 1}}})"))
          .has_value());
}

TEST_CASE("AddedTermFieldPath names the annotation") { CHECK(AddedTermFieldPath() == kField); }

TEST_CASE("ParseAddedTerm accepts a valid term") {
  const AddedTermParse p = ParseAddedTerm(
      R"({"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["node-3"]}]})");
  REQUIRE(p.causes.empty());
  REQUIRE(p.term.has_value());
  CHECK(*p.term == NodeSelectorTerm{{}, {{"metadata.name", "In", {"node-3"}}}});
}

TEST_CASE("ParseAddedTerm reports each failure under the annotation's path") {
  auto [text, want] = GENERATE_REF(table<std::string, std::vector<Cause>>({
      {std::string(kMaxAddedTermBytes + 1, ' '),
       {{"FieldValueTooLong", kField, "Too long: may not be more than 16384 bytes"}}},
      {"",
       {{"FieldValueInvalid", kField,
         "Invalid value: must be the JSON of a NodeSelectorTerm: parse error at line 1, column 1: "
         "syntax error while parsing value - unexpected end of input; expected '[', '{', or a "
         "literal"}}},
      {R"({"matchFields": [})",
       {{"FieldValueInvalid", kField,
         "Invalid value: must be the JSON of a NodeSelectorTerm: parse error at line 1, column 18: "
         "syntax error while parsing value - unexpected '}'; expected '[', '{', or a literal"}}},
      {R"(["x"])",
       {{"FieldValueTypeInvalid", kField,
         R"(Invalid value: ["x"]: must be of type object, not array)"}}},
      {R"({"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"], "x": 1}]})",
       {{"FieldValueNotSupported", kField + ".matchExpressions[0].x",
         R"(Unsupported value: "x": supported values: "key", "operator", "values")"}}},
      {R"({"matchExpressions": [{"key": "zone", "operator": "Gt", "values": ["a"]}]})",
       {{"FieldValueInvalid", kField + ".matchExpressions[0].values[0]",
         R"(Invalid value: "a": for 'Gt', 'Lt' operators, the value must be an integer)"}}},
      // Found by the differential tier (hack/differential.sh): nlohmann skips a byte order
      // mark and keeps the last of repeated members, which Go's decoder rejects / the API
      // server's strict decoding rejects.
      {"\xEF\xBB\xBF{\"matchExpressions\": [{\"key\": \"a\", \"operator\": \"Exists\"}]}",
       {{"FieldValueInvalid", kField,
         "Invalid value: must be the JSON of a NodeSelectorTerm: a byte order mark is not JSON"}}},
      {std::string(R"({"matchExpressions": [{"key": "a", "operator": "Exists"}]})"
                   "\0"
                   R"({"matchFields": "ignored after the NUL"})",
                   99),
       {{"FieldValueInvalid", kField,
         "Invalid value: must be the JSON of a NodeSelectorTerm: a NUL byte (at byte 59) is not "
         "JSON"}}},
      {R"({"matchExpressions": [{"key": "a", "operator": "Bad", "operator": "Exists"}]})",
       {{"FieldValueInvalid", kField + ".matchExpressions[0].operator",
         "Invalid value: duplicate member: a name may appear only once in an object"}}},
      {R"({"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["a"]}],)"
       R"( "matchExpressions": [], "matchFields": [{"key": "metadata.name", "operator": "In",)"
       R"( "values": ["b"]}]})",
       {{"FieldValueInvalid", kField + ".matchFields",
         "Invalid value: duplicate member: a name may appear only once in an object"}}},
      {R"({"matchExpressions": [{"key": "a", "operator": "Exists"}, {"key": "b", "values": [],)"
       R"( "key": "c", "operator": "Exists", "x": {"y": 1, "y": 2}}]})",
       {{"FieldValueInvalid", kField + ".matchExpressions[1].key",
         "Invalid value: duplicate member: a name may appear only once in an object"},
        {"FieldValueInvalid", kField + ".matchExpressions[1].x.y",
         "Invalid value: duplicate member: a name may appear only once in an object"}}},
      {R"({})",
       {{"FieldValueRequired", kField,
         "Required value: must have at least one requirement in matchExpressions or matchFields"}}},
      {R"({"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["a", "b"]}]})",
       {{"FieldValueRequired", kField + ".matchFields[0].values",
         "Required value: must be only one value when `operator` is 'In' or 'NotIn' for node field "
         "selector"}}},
  }));
  CAPTURE(text.substr(0, 80));
  const AddedTermParse p = ParseAddedTerm(text);
  CHECK_FALSE(p.term.has_value());
  CHECK(p.causes == want);
}

TEST_CASE("ParseAddedTerm accepts exactly kMaxAddedTermBytes") {
  std::string text =
      R"({"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n"]}]})";
  text.resize(kMaxAddedTermBytes, ' ');
  CHECK(ParseAddedTerm(text).causes.empty());
}

TEST_CASE("ParseAddedTerm survives invalid UTF-8") {
  const AddedTermParse p = ParseAddedTerm("{\"matchExpressions\": [{\"key\": \"\xff\"}]}");
  CHECK_FALSE(p.term.has_value());
  REQUIRE(p.causes.size() == 1);
  CHECK(p.causes[0].type == "FieldValueInvalid");
  CHECK(p.causes[0].field == kField);
}

}  // namespace
}  // namespace kmt::api

namespace kmt::api {
namespace {}  // namespace
}  // namespace kmt::api
