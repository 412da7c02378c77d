#include "cli/args.h"

#include <catch2/catch.hpp>

namespace kmt::cli {
namespace {

ArgsParse Parse(std::vector<std::string> a) { return ParseArgs(a); }

TEST_CASE("kubectl-style flags parse in every spelling") {
  auto p = Parse({"db-1", "--node=worker-3", "-n", "prod", "--wait", "--timeout", "90s", "-o",
                  "yaml", "--exclude-node", "w1", "--exclude-node=w2", "--context=ctx",
                  "--kubeconfig", "/tmp/k"});
  REQUIRE(p.error.empty());
  const Invocation& inv = *p.invocation;
  CHECK(inv.command == Command::kMigrate);
  CHECK(inv.name == "db-1");
  CHECK(inv.node == "worker-3");
  CHECK(inv.ns == "prod");
  CHECK(inv.wait);
  CHECK(inv.timeout == std::chrono::seconds(90));
  CHECK(inv.output == "yaml");
  CHECK(inv.exclude_nodes == std::vector<std::string>{"w1", "w2"});
  CHECK(inv.context == "ctx");
  CHECK(inv.kubeconfig == "/tmp/k");
}

TEST_CASE("shorthands accept attached values and flags may precede the name") {
  auto p = Parse({"-nprod", "-o=json", "--selector", "pool=fast", "db-1", "--dry-run=server"});
  REQUIRE(p.error.empty());
  CHECK(p.invocation->ns == "prod");
  CHECK(p.invocation->output == "json");
  CHECK(p.invocation->selector == "pool=fast");
  CHECK(p.invocation->name == "db-1");
  CHECK(p.invocation->dry_run == DryRun::kServer);
}

TEST_CASE("a bare --dry-run means client, as kubectl's historical default") {
  auto p = Parse({"db-1", "--node", "n", "--dry-run"});
  REQUIRE(p.error.empty());
  CHECK(p.invocation->dry_run == DryRun::kClient);
}

TEST_CASE("subcommands") {
  auto e = Parse({"explain", "db-1", "--node", "n"});
  REQUIRE(e.error.empty());
  CHECK(e.invocation->command == Command::kExplain);
  CHECK(e.invocation->name == "db-1");

  auto all = Parse({"explain", "db-1"});
  REQUIRE(all.error.empty());
  CHECK_FALSE(all.invocation->HasRequest());

  auto s = Parse({"status", "db-1-migration-abcde", "-n", "prod"});
  REQUIRE(s.error.empty());
  CHECK(s.invocation->command == Command::kStatus);
  CHECK(s.invocation->name == "db-1-migration-abcde");

  auto h = Parse({"explain", "--help"});
  REQUIRE(h.error.empty());
  CHECK(h.invocation->command == Command::kHelp);
  CHECK(h.invocation->help_for == Command::kExplain);
  CHECK(Parse({}).invocation->command == Command::kHelp);
}

TEST_CASE("usage errors say exactly what is wrong") {
  struct Row {
    std::vector<std::string> args;
    const char* error;
  };
  auto row = GENERATE(
      Row{{"db-1"},
          "one of --node, --selector, --term-file or --exclude-node is required; for a migration "
          "without placement use 'virtctl migrate'"},
      Row{{"--node", "n"}, "exactly one NAME is required, got 0"},
      Row{{"a", "b", "--node", "n"}, "exactly one NAME is required, got 2"},
      Row{{"db-1", "--nod", "n"}, "unknown flag: --nod"},
      Row{{"db-1", "-x", "n"}, "unknown shorthand flag: 'x' in -x"},
      Row{{"db-1", "--node"}, "flag needs an argument: --node"},
      Row{{"db-1", "--node", "a", "--node", "b"},
          "flag --node may be given only once; for a set of nodes use --selector "
          "'kubernetes.io/hostname in (node-a,node-b)'"},
      Row{{"db-1", "--node", "a", "--dry-run=maybe"},
          "invalid argument \"maybe\" for \"--dry-run\" flag: must be \"none\", \"server\", or "
          "\"client\""},
      Row{{"db-1", "--node", "a", "--wait=perhaps"},
          "invalid argument \"perhaps\" for \"--wait\" flag: not a boolean"},
      Row{{"db-1", "--node", "a", "--timeout", "5"},
          "invalid argument \"5\" for \"--timeout\" flag: invalid duration \"5\": missing unit "
          "(one of ns, us, ms, s, m, h)"},
      Row{{"db-1", "--node", "a", "--timeout", "0"}, "--timeout must be greater than 0"},
      Row{{"db-1", "--node", "a", "-o", "wide"},
          "unable to match a printer suitable for the output format \"wide\", allowed formats "
          "are: json,name,yaml"},
      Row{{"db-1", "--node", "a", "--wait", "--dry-run=server"},
          "--wait cannot be combined with --dry-run"},
      Row{{"explain", "db-1", "--wait"},
          "explain accepts only --node, --selector, --term-file and --exclude-node"},
      Row{{"status", "m", "--node", "a"}, "status accepts no placement, --dry-run or --wait flags"},
      Row{{"status"}, "exactly one MIGRATION is required, got 0"},
      Row{{"db-1", "--namespace="}, "flag --namespace needs a non-empty value"});
  CAPTURE(row.args);
  auto p = ParseArgs(row.args);
  CHECK_FALSE(p.invocation.has_value());
  CHECK(p.error == row.error);
}

TEST_CASE("-- ends flag parsing") {
  auto p = Parse({"--node", "n", "--", "--weird-name"});
  REQUIRE(p.error.empty());
  CHECK(p.invocation->name == "--weird-name");
}

TEST_CASE("help texts name every flag") {
  std::string h = HelpText(Command::kMigrate);
  for (const char* f :
       {"--node", "--selector", "--term-file", "--exclude-node", "--dry-run", "--wait", "--timeout",
        "--output", "--namespace", "--kubeconfig", "--context"}) {
    CAPTURE(f);
    CHECK(h.find(f) != std::string::npos);
  }
  CHECK(HelpText(Command::kExplain).find("kubectl migrate explain NAME") != std::string::npos);
  CHECK(HelpText(Command::kStatus).find("kubectl migrate status MIGRATION") != std::string::npos);
}

}  // namespace
}  // namespace kmt::cli
