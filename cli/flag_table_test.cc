#include "cli/flag_table.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <set>

namespace kmt::cli {
namespace {

TEST_CASE("every command's table names flags of the flag table, once each, none global") {
  std::set<std::string> accepted;
  for (const CommandDoc& c : Commands()) {
    CAPTURE(c.path);
    std::set<std::string> seen;
    for (const std::string& name : c.flags) {
      CAPTURE(name);
      const FlagDoc* f = FindFlag(name);
      REQUIRE(f != nullptr);
      CHECK_FALSE(f->global);
      CHECK(seen.insert(name).second);
      CHECK(Accepts(c.command, *f));
      accepted.insert(name);
    }
    // -o and the formats it prints go together.
    CHECK(seen.count("output") == (c.output_formats.empty() ? 0u : 1u));
  }
  for (const FlagDoc& f : FlagDocs()) {
    CAPTURE(f.name);
    CHECK((f.global || accepted.count(f.name) == 1));
    CHECK(f.set);
    CHECK_FALSE(f.usage.empty());
    CHECK_FALSE(f.shown_default.empty());
    if (f.shorthand != 0) CHECK(FindFlag(f.shorthand) == &f);
    // What completion offers and what a bare flag means pass the flag's own check.
    std::vector<std::string> values = f.choices;
    if (!f.takes_value()) values.push_back(f.bare);
    for (const std::string& v : values) {
      CAPTURE(v);
      if (f.check) CHECK(f.check(v).empty());
    }
    if (f.values == ValueKind::kChoices && f.name != "output") CHECK_FALSE(f.choices.empty());
  }
}

TEST_CASE("the commands: the main one first, the subcommands in table order") {
  REQUIRE(Commands().front().command == Command::kMigrate);
  CHECK(Commands().front().path.empty());
  std::vector<std::string> names;
  for (const SubcommandDoc& s : SubcommandDocs()) names.push_back(s.name);
  CHECK(names == std::vector<std::string>{"explain", "status", "cancel", "list", "policy"});
  CHECK(CommandOf(Command::kPolicyExplain).path == "policy explain");
}

TEST_CASE("-o: the command's formats, in help order and sorted") {
  const FlagDoc& output = *FindFlag("output");
  CHECK(HelpLine(Command::kList, output) == "One of: wide, name, yaml, json.");
  CHECK(HelpLine(Command::kPolicyExplain, output) == "One of: text, json, yaml.");
  CHECK(OutputFormats(Command::kList) == "json,name,wide,yaml");
  CHECK(OutputFormats(Command::kStatus).empty());
  CHECK(HelpLine(Command::kMigrate, *FindFlag("node")) == "Only this node.");
}

TEST_CASE("the rows' checks and setters speak kubectl's words") {
  Invocation inv;
  const FlagDoc& node = *FindFlag("node");
  CHECK(node.check("") == "flag --node needs a non-empty value");
  CHECK(node.set(inv, "a").empty());
  CHECK(inv.node == "a");
  CHECK(node.set(inv, "b").rfind("flag --node may be given only once; ", 0) == 0);
  const FlagDoc& all = *FindFlag('A');
  CHECK(all.check("yes") ==
        "invalid argument \"yes\" for \"--all-namespaces\" flag: not a boolean");
  CHECK(all.set(inv, "T").empty());
  CHECK(inv.all_namespaces);
  CHECK(FindFlag("timeout")->set(inv, "90s").empty());
  CHECK(inv.timeout == std::chrono::seconds(90));
  CHECK(FindFlag("no-such-flag") == nullptr);
  CHECK(FindFlag('x') == nullptr);
}

}  // namespace
}  // namespace kmt::cli
