#include "cli/args.h"

#include <catch2/catch.hpp>

namespace kmt::cli {
namespace {

ArgsParse Parse(const std::vector<std::string>& a) { return ParseArgs(a); }

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

TEST_CASE("policy explain NODE, its flags and its usage errors") {
  auto p = Parse({"policy", "explain", "worker-3", "--origin", "Descheduler", "-o", "json"});
  REQUIRE(p.error.empty());
  CHECK(p.invocation->command == Command::kPolicyExplain);
  CHECK(p.invocation->name == "worker-3");
  CHECK(p.invocation->origin == "Descheduler");
  CHECK(p.invocation->output == "json");
  CHECK_FALSE(p.invocation->ns.has_value());  // every namespace unless -n

  auto d = Parse({"-n", "prod", "policy", "explain", "worker-3"});
  REQUIRE(d.error.empty());
  CHECK(d.invocation->origin == "Evacuation");
  CHECK(d.invocation->ns == "prod");
  CHECK(d.invocation->output.empty());
  CHECK(Parse({"policy", "explain", "w", "-o", "text"}).error.empty());

  auto h = Parse({"policy", "explain", "--help"});
  REQUIRE(h.error.empty());
  CHECK(h.invocation->help_for == Command::kPolicyExplain);

  struct Row {
    std::vector<std::string> args;
    const char* error;
  };
  auto row = GENERATE(
      Row{{"policy"}, "policy needs a subcommand: explain"},
      Row{{"policy", "show", "w"},
          "unknown command \"show\" for \"kubectl migrate policy\": the only one is explain"},
      Row{{"policy", "explain"}, "exactly one NODE is required, got 0"},
      Row{{"policy", "explain", "a", "b"}, "exactly one NODE is required, got 2"},
      Row{{"policy", "explain", "w", "--origin", "Drain"},
          "invalid argument \"Drain\" for \"--origin\" flag: must be \"Evacuation\" or "
          "\"Descheduler\""},
      Row{{"policy", "explain", "w", "-o", "wide"},
          "unable to match a printer suitable for the output format \"wide\", allowed formats "
          "are: json,text,yaml"},
      Row{{"policy", "explain", "w", "--node", "x"},
          "flag --node does not apply to 'kubectl migrate policy explain NODE'"},
      Row{{"db-1", "--node", "n", "--origin", "Evacuation"},
          "flag --origin does not apply to 'kubectl migrate NAME'"});
  CAPTURE(row.args);
  auto bad = Parse(row.args);
  CHECK_FALSE(bad.invocation);
  CHECK(bad.error == row.error);
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
      Row{{"db-1", "--namespace="}, "flag --namespace needs a non-empty value"},
      Row{{"cancel"}, "cancel needs a MIGRATION or --vmi VMI"},
      Row{{"cancel", "m", "--vmi", "db-1"}, "cancel takes a MIGRATION or --vmi VMI, not both"},
      Row{{"cancel", "m1", "m2"}, "exactly one MIGRATION is required, got 2"},
      Row{{"cancel", "m", "--node", "a"}, "flag --node does not apply to 'kubectl migrate cancel'"},
      Row{{"cancel", "m", "-o", "wide"},
          "unable to match a printer suitable for the output format \"wide\", allowed formats "
          "are: json,name,yaml"},
      Row{{"list", "m"}, "list takes no arguments, got 1"},
      Row{{"list", "--wait"}, "flag --wait does not apply to 'kubectl migrate list'"},
      Row{{"list", "-o", "table"},
          "unable to match a printer suitable for the output format \"table\", allowed formats "
          "are: json,name,wide,yaml"},
      Row{{"db-1", "--node", "a", "--vmi", "db-1"},
          "flag --vmi does not apply to 'kubectl migrate NAME'"},
      Row{{"db-1", "--node", "a", "-A"},
          "flag --all-namespaces does not apply to 'kubectl migrate NAME'"},
      Row{{"status", "m", "--vmi", "v"},
          "flag --vmi does not apply to 'kubectl migrate status MIGRATION'"});
  CAPTURE(row.args);
  auto p = ParseArgs(row.args);
  CHECK_FALSE(p.invocation.has_value());
  CHECK(p.error == row.error);
}

TEST_CASE("cancel takes a migration name or --vmi, and a dry run") {
  auto by_name = Parse({"cancel", "db-1-migration-abcde", "-n", "prod", "--dry-run=server"});
  REQUIRE(by_name.error.empty());
  CHECK(by_name.invocation->command == Command::kCancel);
  CHECK(by_name.invocation->name == "db-1-migration-abcde");
  CHECK_FALSE(by_name.invocation->vmi);
  CHECK(by_name.invocation->dry_run == DryRun::kServer);

  auto by_vmi = Parse({"cancel", "--vmi=db-1", "-o", "name"});
  REQUIRE(by_vmi.error.empty());
  CHECK(by_vmi.invocation->name.empty());
  CHECK(by_vmi.invocation->vmi == "db-1");
  CHECK(by_vmi.invocation->output == "name");
}

TEST_CASE("list takes -A and -o wide") {
  auto p = Parse({"list", "-A", "-o", "wide"});
  REQUIRE(p.error.empty());
  CHECK(p.invocation->command == Command::kList);
  CHECK(p.invocation->all_namespaces);
  CHECK(p.invocation->output == "wide");
  auto q = Parse({"list", "--all-namespaces=false", "-n", "prod"});
  REQUIRE(q.error.empty());
  CHECK_FALSE(q.invocation->all_namespaces);
  CHECK(q.invocation->ns == "prod");
  auto h = Parse({"list", "-h"});
  REQUIRE(h.error.empty());
  CHECK(h.invocation->command == Command::kHelp);
  CHECK(h.invocation->help_for == Command::kList);
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
  CHECK(HelpText(Command::kCancel).find("kubectl migrate cancel --vmi VMI") != std::string::npos);
  CHECK(HelpText(Command::kList).find("kubectl migrate list [options]") != std::string::npos);
  CHECK(HelpText(Command::kStatus).find("kubectl migrate status MIGRATION") != std::string::npos);
  CHECK(HelpText(Command::kPolicyExplain).find("kubectl migrate policy explain NODE [options]") !=
        std::string::npos);
}

// The flag table is what the parser accepts and what completion offers; every help text must
// name the flags its command accepts, and the main help every subcommand.
TEST_CASE("every flag a command accepts is in that command's help and parses there") {
  auto command = GENERATE(Command::kMigrate, Command::kExplain, Command::kStatus, Command::kCancel,
                          Command::kList, Command::kPolicyExplain);
  std::string help = HelpText(command);
  for (const FlagDoc& f : FlagDocs()) {
    if (!Accepts(command, f)) continue;
    CAPTURE(static_cast<int>(command), f.name);
    const std::string where = f.global ? HelpText(Command::kMigrate) : help;
    CHECK(where.find("--" + f.name + "=") != std::string::npos);
    if (f.shorthand != 0) {
      CHECK(where.find(std::string("-") + f.shorthand + ", --" + f.name) != std::string::npos);
    }
  }
  for (const SubcommandDoc& s : SubcommandDocs()) {
    CAPTURE(s.name);
    CHECK(HelpText(Command::kMigrate).find("  " + s.name + "  ") != std::string::npos);
    auto p = ParseArgs({s.name, "--help"});
    REQUIRE(p.invocation);
    CHECK(p.invocation->help_for == s.command);
  }
}

}  // namespace
}  // namespace kmt::cli
