#include "cli/term_builder.h"

#include <catch2/catch.hpp>

namespace kmt::cli {
namespace {

using api::NodeSelectorRequirement;

Invocation Inv() {
  Invocation inv;
  inv.command = Command::kMigrate;
  inv.name = "db-1";
  return inv;
}

TEST_CASE("--node becomes matchFields metadata.name In [node]") {
  Invocation inv = Inv();
  inv.node = "worker-3";
  auto b = BuildTerm(inv, std::nullopt);
  REQUIRE(b.error.empty());
  CHECK(api::ToJson(*b.term).dump() ==
        R"({"matchFields":[{"key":"metadata.name","operator":"In","values":["worker-3"]}]})");
}

TEST_CASE("selector syntax maps to matchExpressions") {
  struct Row {
    const char* selector;
    std::vector<NodeSelectorRequirement> want;
  };
  auto row = GENERATE(
      Row{"pool=fast", {{"pool", "In", {"fast"}}}}, Row{"pool==fast", {{"pool", "In", {"fast"}}}},
      Row{"pool!=slow", {{"pool", "NotIn", {"slow"}}}},
      Row{"zone in (a,b)", {{"zone", "In", {"a", "b"}}}},
      Row{"zone notin (c)", {{"zone", "NotIn", {"c"}}}}, Row{"gpu", {{"gpu", "Exists", {}}}},
      Row{"!maintenance", {{"maintenance", "DoesNotExist", {}}}},
      Row{"cores>8", {{"cores", "Gt", {"8"}}}},
      Row{"pool=fast,zone in (a,b),!maintenance",
          {{"pool", "In", {"fast"}},
           {"zone", "In", {"a", "b"}},
           {"maintenance", "DoesNotExist", {}}}});
  CAPTURE(row.selector);
  auto b = TermFromSelector(row.selector);
  REQUIRE(b.error.empty());
  CHECK(b.term->match_expressions == row.want);
  CHECK(b.term->match_fields.empty());
}

TEST_CASE("flags combine by AND into one term") {
  Invocation inv = Inv();
  inv.node = "w3";
  inv.selector = "pool=fast";
  inv.exclude_nodes = {"w1", "w2"};
  inv.term_file = "term.json";
  auto b = BuildTerm(
      inv, std::string(R"({"matchExpressions":[{"key":"zone","operator":"In","values":["a"]}]})"));
  REQUIRE(b.error.empty());
  CHECK(b.term->match_expressions ==
        std::vector<NodeSelectorRequirement>{{"zone", "In", {"a"}}, {"pool", "In", {"fast"}}});
  CHECK(b.term->match_fields ==
        std::vector<NodeSelectorRequirement>{{"metadata.name", "In", {"w3"}},
                                             {"metadata.name", "NotIn", {"w1"}},
                                             {"metadata.name", "NotIn", {"w2"}}});
}

TEST_CASE("bad requests fail with the webhook's rule and the field") {
  Invocation inv = Inv();
  inv.node = "Not_A_Node";
  auto b = BuildTerm(inv, std::nullopt);
  CHECK_FALSE(b.term);
  CHECK(b.error.rfind("invalid request: matchFields[0].values[0]: ", 0) == 0);

  Invocation sel = Inv();
  sel.selector = "zone in (a";
  b = BuildTerm(sel, std::nullopt);
  CHECK_FALSE(b.term);
  CHECK(b.error.rfind("invalid --selector: ", 0) == 0);

  Invocation bad_key = Inv();
  bad_key.selector = "-bad=x";
  b = BuildTerm(bad_key, std::nullopt);
  CHECK_FALSE(b.term);
  CHECK_FALSE(b.error.empty());

  Invocation file = Inv();
  file.term_file = "t.json";
  b = BuildTerm(file, std::string(R"({"matchExpressions":[{"key":"a","operator":"Near"}]})"));
  CHECK_FALSE(b.term);
  CHECK(b.error.rfind("invalid --term-file t.json: matchExpressions[0].operator: ", 0) == 0);

  b = BuildTerm(file, std::string(R"({"matchLabels":{}})"));
  CHECK_FALSE(b.term);
  CHECK(b.error.find("matchLabels") != std::string::npos);
}

}  // namespace
}  // namespace kmt::cli
