// kube/selector_test.cc
#include "kube/selector.h"

#include <catch2/catch.hpp>

#include "api/label_requirement_table.h"

namespace kmt::kube {
namespace {

using nlohmann::json;

TEST_CASE("Label selectors match like the API server's") {
  const json labels = {{"app", "web"}, {"tier", "front"}, {"kubevirt.io/migrationJobUID", "u-1"},
                       {"n", "7"},     {"plus", "+5"},    {"empty", ""}};
  struct Row {
    const char* selector;
    bool match;
  };
  const Row row = GENERATE(values<Row>({
      {"", true},
      {"app", true},
      {"missing", false},
      {"!missing", true},
      {"!app", false},
      {"app=web", true},
      {"app==web", true},
      {"app=db", false},
      {"app!=db", true},
      {"app!=web", false},
      {"missing!=x", true},  // != matches objects without the key
      {"app in (db,web)", true},
      {"app in (db)", false},
      {"missing in (a)", false},
      {"app notin (db)", true},
      {"app notin (web,db)", false},
      {"missing notin (a)", true},
      {"app=web,tier=front", true},
      {"app=web,tier=back", false},
      {"app in (web, db),!missing,tier", true},
      {"kubevirt.io/migrationJobUID=u-1", true},
      {"kubevirt.io/migrationJobUID in (u-2,u-3)", false},
      {"n>6", true},
      {"n>7", false},
      {"n<8", true},
      {"app>1", false},  // non-numeric label never matches > or <
      {"plus>4", true},  // strconv.ParseInt reads the label "+5" as 5
      {"plus<6", true},
      {"empty=", true},
      {"empty", true},
      {"  app = web ,  tier  ", true},
  }));
  CAPTURE(row.selector);
  CHECK(LabelSelector::Parse(row.selector).Matches(labels) == row.match);
}

// The project's one table of label-requirement matching (api/label_requirement_table.h).
TEST_CASE("Label requirements: the table, through kube's label selectors") {
  using api::LabelOp;
  using Op = LabelRequirement::Op;
  for (const api::testing::RequirementRow& row : api::testing::RequirementTable()) {
    std::optional<Op> op;
    switch (row.op) {
      case LabelOp::kIn:
        op = Op::kIn;
        break;
      case LabelOp::kNotIn:
        op = Op::kNotIn;
        break;
      case LabelOp::kEquals:
        op = Op::kEquals;
        break;
      case LabelOp::kNotEquals:
        op = Op::kNotEquals;
        break;
      case LabelOp::kExists:
        op = Op::kExists;
        break;
      case LabelOp::kDoesNotExist:
        op = Op::kDoesNotExist;
        break;
      case LabelOp::kGt:
        op = Op::kGt;
        break;
      case LabelOp::kLt:
        op = Op::kLt;
        break;
      case LabelOp::kUnknown:
        break;  // the selector language has no other operator
    }
    if (!op) continue;
    CAPTURE(row.why);
    json labels = {{"other", "x"}};
    if (row.label) labels[row.key] = *row.label;
    CHECK(RequirementMatches(LabelRequirement{row.key, *op, row.values}, labels) == row.match);
  }
}

TEST_CASE("Label selectors against objects without labels") {
  CHECK(LabelSelector::Parse("").Matches(nullptr));
  CHECK(LabelSelector::Parse("!a").Matches(nullptr));
  CHECK(LabelSelector::Parse("a!=b").Matches(nullptr));
  CHECK_FALSE(LabelSelector::Parse("a").Matches(nullptr));
  CHECK_FALSE(LabelSelector::Parse("a in (b)").Matches(json::object()));
}

TEST_CASE("Parsed requirements are normalised") {
  LabelSelector s = LabelSelector::Parse("b notin (z,y,z),a");
  REQUIRE(s.requirements().size() == 2);
  CHECK(s.requirements()[0].key == "b");
  CHECK(s.requirements()[0].op == LabelRequirement::Op::kNotIn);
  CHECK(s.requirements()[0].values == std::vector<std::string>{"y", "z"});
  CHECK(s.requirements()[1].op == LabelRequirement::Op::kExists);
}

TEST_CASE("Malformed label selectors are rejected with a precise message") {
  struct Row {
    const char* selector;
    const char* message;
  };
  const Row row = GENERATE(values<Row>({
      {"a in (x", "label selector \"a in (x\": missing ')'"},
      {"a in x", "label selector \"a in x\": 'in' must be followed by '('"},
      {"a in ()", "label selector \"a in ()\": 'in' needs at least one value"},
      {"a,", "label selector \"a,\": missing key"},
      {",a", "label selector \",a\": expected a key, found ','"},
      {"a b", "label selector \"a b\": expected an operator after \"a\", found 'b'"},
      {"a>x", "label selector \"a>x\": '>' needs an integer value"},
      // labels.NewRequirement: the operand is ParseInt's and a label value.
      {"a>+5", "label selector \"a>+5\": invalid label value \"+5\""},
      {"a<-1", "label selector \"a<-1\": invalid label value \"-1\""},
      {"a>99999999999999999999",
       "label selector \"a>99999999999999999999\": '>' needs an integer value"},
      {"-a=b", "label selector \"-a=b\": invalid label key \"-a\""},
      {"a=b c", "label selector \"a=b c\": unexpected 'c' after a requirement"},
      {"a=-b", "label selector \"a=-b\": invalid label value \"-b\""},
      {"Example.COM/a=b",
       "label selector \"Example.COM/a=b\": invalid label key \"Example.COM/a\""},
      {"!", "label selector \"!\": missing key"},
  }));
  CAPTURE(row.selector);
  try {
    LabelSelector::Parse(row.selector);
    FAIL("parsed");
  } catch (const std::invalid_argument& e) {
    CHECK(std::string(e.what()) == row.message);
  }
}

TEST_CASE("Label key and value syntax") {
  CHECK(IsValidLabelKey("kubevirt.io/migrationJobUID"));
  CHECK(IsValidLabelKey("a"));
  CHECK_FALSE(IsValidLabelKey(""));
  CHECK_FALSE(IsValidLabelKey("/a"));
  CHECK_FALSE(IsValidLabelKey("a/"));
  CHECK_FALSE(IsValidLabelKey(std::string(64, 'a')));
  CHECK(IsValidLabelKey(std::string(63, 'a')));
  CHECK(IsValidLabelValue(""));
  CHECK(IsValidLabelValue("A_b.c-9"));
  CHECK_FALSE(IsValidLabelValue("a b"));
  CHECK_FALSE(IsValidLabelValue(std::string(64, 'v')));
}

TEST_CASE("Field selectors") {
  const json pod = {{"metadata", {{"name", "p"}, {"namespace", "ns"}}},
                    {"spec", {{"nodeName", "n1"}}},
                    {"status", {{"phase", "Running"}}}};
  const json unbound = {{"metadata", {{"name", "q"}, {"namespace", "ns"}}},
                        {"spec", json::object()}};
  struct Row {
    const char* selector;
    bool pod;
    bool unbound;
  };
  const Row row = GENERATE(values<Row>({
      {"", true, true},
      {"metadata.name=p", true, false},
      {"metadata.name==p", true, false},
      {"metadata.namespace=ns,metadata.name!=p", false, true},
      {"spec.nodeName=n1", true, false},
      {"spec.nodeName=", false, true},
      {"spec.nodeName!=", true, false},
      {"status.phase!=Succeeded,status.phase!=Failed", true, true},
  }));
  CAPTURE(row.selector);
  FieldSelector s = FieldSelector::Parse(row.selector);
  CHECK(s.Matches(pod) == row.pod);
  CHECK(s.Matches(unbound) == row.unbound);
}

TEST_CASE("Malformed field selectors") {
  const char* bad = GENERATE("name", "=x", "a=b,c");
  CAPTURE(bad);
  CHECK_THROWS_AS(FieldSelector::Parse(bad), std::invalid_argument);
  try {
    FieldSelector::Parse("a=b,c");
  } catch (const std::invalid_argument& e) {
    CHECK(std::string(e.what()) ==
          "field selector \"a=b,c\": invalid requirement \"c\" (want field=value or field!=value)");
  }
}

TEST_CASE("FieldValue renders non-strings as JSON text") {
  const json node = {{"spec", {{"unschedulable", true}}}, {"n", 3}, {"z", nullptr}};
  CHECK(FieldValue(node, "spec.unschedulable") == "true");
  CHECK(FieldValue(node, "n") == "3");
  CHECK(FieldValue(node, "z") == "");
  CHECK(FieldValue(node, "spec.unschedulable.deeper") == "");
  CHECK(FieldValue(node, "nope") == "");
}

}  // namespace
}  // namespace kmt::kube
