#include "cli/completion.h"

#include <catch2/catch.hpp>

#include "kube/fake_client.h"
#include "kube/resources.h"

namespace kmt::cli {
namespace {

using nlohmann::json;
using Lines = std::vector<std::string>;

void Add(kube::FakeClient& fake, const kube::Resource& r, const std::string& ns,
         const std::string& name, json labels = json::object(), const json& status = nullptr) {
  json obj = {{"metadata", {{"name", name}, {"labels", labels}}}};
  if (!ns.empty()) obj["metadata"]["namespace"] = ns;
  fake.Create(r, ns, obj);
  if (status.is_null()) return;
  json stored = fake.Get(r, ns, name);
  stored["status"] = status;
  fake.Update(r, ns, stored, "status");
}

// prod: VMIs db-1, db-2, cache; VMIMs m-done (Succeeded), m-run (Running); staging: VMI web.
// Nodes w1 (pool=fast, zone=a), w2 (pool=slow, gpu), x9 (zone=b).
struct Cluster {
  kube::FakeClient fake;
  Cluster() {
    for (const char* ns : {"prod", "staging"}) Add(fake, kube::kNamespaces, "", ns);
    for (const char* vmi : {"db-1", "db-2", "cache"}) {
      Add(fake, kube::kVirtualMachineInstances, "prod", vmi);
    }
    Add(fake, kube::kVirtualMachineInstances, "staging", "web");
    Add(fake, kube::kVirtualMachineInstanceMigrations, "prod", "m-done", {},
        {{"phase", "Succeeded"}});
    Add(fake, kube::kVirtualMachineInstanceMigrations, "prod", "m-run", {}, {{"phase", "Running"}});
    Add(fake, kube::kNodes, "", "w1", {{"pool", "fast"}, {"zone", "a"}});
    Add(fake, kube::kNodes, "", "w2", {{"pool", "slow"}, {"gpu", ""}});
    Add(fake, kube::kNodes, "", "x9", {{"zone", "b"}});
  }
  // As the plugin resolves it: a typed -n, else the kubeconfig context's namespace ("prod").
  CompletionAnswer Ask(const Lines& words) {
    CompletionRequest r = ReadCompletionLine(words);
    return Complete(r, r.ns.value_or("prod"), &fake);
  }
};

Lines Values(const CompletionAnswer& a) {
  Lines out;
  for (const auto& c : a.candidates) out.push_back(c.substr(0, c.find('\t')));
  return out;
}

TEST_CASE("the first word: subcommands, with descriptions, then the namespace's VMIs") {
  Cluster c;
  auto a = c.Ask({""});
  CHECK(Values(a) ==
        Lines{"explain", "status", "cancel", "list", "policy", "help", "cache", "db-1", "db-2"});
  CHECK(a.candidates[0] == "explain\tExplain, node by node, whether the VMI would fit");
  CHECK(a.directive == kDirectiveNoFileComp);
  CHECK(Values(c.Ask({"c"})) == Lines{"cancel", "cache"});
  CHECK(Values(c.Ask({"d"})) == Lines{"db-1", "db-2"});
  CHECK(Values(c.Ask({"-n", "staging", ""})).back() == "web");
  // After the VMI, nothing is left to name.
  CHECK(c.Ask({"db-1", ""}).candidates.empty());
}

TEST_CASE("each subcommand completes what it names") {
  Cluster c;
  CHECK(Values(c.Ask({"explain", "db"})) == Lines{"db-1", "db-2"});
  CHECK(Values(c.Ask({"status", ""})) == Lines{"m-done", "m-run"});
  // Only a migration that has not ended can be cancelled.
  CHECK(Values(c.Ask({"cancel", ""})) == Lines{"m-run"});
  CHECK(Values(c.Ask({"cancel", "--vmi", ""})) == Lines{"cache", "db-1", "db-2"});
  CHECK(Values(c.Ask({"cancel", "--vmi=db-1", ""})).empty());
  CHECK(Values(c.Ask({"list", ""})).empty());
  CHECK(Values(c.Ask({"help", ""})).empty());
}

TEST_CASE("policy explain: its subcommand, the node being left, --origin and -o choices") {
  Cluster c;
  auto first = c.Ask({"po"});
  CHECK(Values(first) == Lines{"policy"});
  CHECK(first.candidates[0] ==
        "policy\tPlan a node's drain: can every VM leave, under which policy, to where");
  CHECK(Values(c.Ask({"policy", ""})) == Lines{"explain"});
  CHECK(Values(c.Ask({"policy", "-n", "prod", "ex"})) == Lines{"explain"});
  CHECK(Values(c.Ask({"policy", "explain", ""})) == Lines{"w1", "w2", "x9"});
  CHECK(Values(c.Ask({"policy", "explain", "w"})) == Lines{"w1", "w2"});
  CHECK(Values(c.Ask({"policy", "explain", "w1", ""})).empty());
  CHECK(Values(c.Ask({"policy", "other", ""})).empty());
  CHECK(Values(c.Ask({"policy", "explain", "w1", "--origin", ""})) ==
        Lines{"Evacuation", "Descheduler"});
  CHECK(Values(c.Ask({"policy", "explain", "w1", "--origin=D"})) == Lines{"Descheduler"});
  CHECK(Values(c.Ask({"policy", "explain", "w1", "-o", ""})) == Lines{"json", "text", "yaml"});
  CHECK(Values(c.Ask({"policy", "explain", "w1", "--o"})) == Lines{"--output", "--origin"});
  auto flags = Values(c.Ask({"policy", "explain", "w1", "--origin", "Descheduler", "-"}));
  CHECK(std::ranges::find(flags, "--origin") == flags.end());
  CHECK(std::ranges::find(flags, "--node") == flags.end());
  CHECK(std::ranges::find(flags, "--namespace") != flags.end());
}

TEST_CASE("flag names: those the command accepts, a flag given once not again") {
  Cluster c;
  auto list = c.Ask({"list", "-"});
  CHECK(Values(list) == Lines{"--all-namespaces", "-A", "--output", "-o", "--context",
                              "--kubeconfig", "--namespace", "-n", "--help", "-h"});
  CHECK(list.candidates[0] == "--all-namespaces\tList the migrations of every namespace.");
  CHECK(list.directive == kDirectiveNoFileComp);
  auto migrate = Values(c.Ask({"db-1", "--node", "w1", "--exclude-node", "x9", "--"}));
  CHECK(std::ranges::find(migrate, "--node") == migrate.end());
  CHECK(std::ranges::find(migrate, "--exclude-node") != migrate.end());
  CHECK(std::ranges::find(migrate, "--wait") != migrate.end());
  CHECK(std::ranges::find(migrate, "--vmi") == migrate.end());
  CHECK(Values(c.Ask({"cancel", "--v"})) == Lines{"--vmi"});
  CHECK(Values(c.Ask({"explain", "db-1", "--t"})) == Lines{"--term-file"});
}

TEST_CASE("node names for --node and --exclude-node, in every spelling") {
  Cluster c;
  CHECK(Values(c.Ask({"db-1", "--node", ""})) == Lines{"w1", "w2", "x9"});
  CHECK(Values(c.Ask({"db-1", "--node", "w"})) == Lines{"w1", "w2"});
  // `--node=w<TAB>`: the values alone, as cobra answers (its shell scripts keep `--node=`).
  CHECK(Values(c.Ask({"db-1", "--node=w"})) == Lines{"w1", "w2"});
  CHECK(Values(c.Ask({"explain", "db-1", "--exclude-node", "w1", "--exclude-node", ""})) ==
        Lines{"w2", "x9"});
  CHECK(c.Ask({"db-1", "--node", ""}).directive == kDirectiveNoFileComp);
}

TEST_CASE("--selector: label keys of the nodes, then a key's values, part by part") {
  Cluster c;
  auto keys = c.Ask({"db-1", "--selector", ""});
  CHECK(Values(keys) == Lines{"gpu", "pool", "zone"});
  CHECK(keys.directive == (kDirectiveNoFileComp | kDirectiveNoSpace));
  CHECK(Values(c.Ask({"db-1", "-l", "po"})) == Lines{"pool"});
  CHECK(Values(c.Ask({"db-1", "-l", "pool="})) == Lines{"pool=fast", "pool=slow"});
  CHECK(Values(c.Ask({"db-1", "-l", "pool!=s"})) == Lines{"pool!=slow"});
  CHECK(Values(c.Ask({"db-1", "--selector=pool=fast,z"})) == Lines{"pool=fast,zone"});
  CHECK(Values(c.Ask({"db-1", "-l", "pool=fast,zone==b"})) == Lines{"pool=fast,zone==b"});
  CHECK(Values(c.Ask({"db-1", "-l", "!g"})) == Lines{"!gpu"});
  CHECK(Values(c.Ask({"db-1", "-l", "zone in (a"})).empty());
}

TEST_CASE("namespaces, output formats, dry-run choices and files") {
  Cluster c;
  CHECK(Values(c.Ask({"-n", ""})) == Lines{"prod", "staging"});
  CHECK(Values(c.Ask({"list", "-o", ""})) == Lines{"json", "name", "wide", "yaml"});
  CHECK(Values(c.Ask({"db-1", "--output="})) == Lines{"json", "name", "yaml"});
  CHECK(Values(c.Ask({"cancel", "m-run", "--dry-run=s"})) == Lines{"server"});
  // A bare --dry-run takes no value: the next word is the VMI again.
  CHECK(Values(c.Ask({"--dry-run", "db"})) == Lines{"db-1", "db-2"});
  auto file = c.Ask({"db-1", "--term-file", ""});
  CHECK(file.candidates.empty());
  CHECK(file.directive == kDirectiveDefault);  // the shell completes file names
  CHECK(c.Ask({"db-1", "--timeout", ""}).directive == kDirectiveNoFileComp);
}

TEST_CASE("the typed cluster flags are read, whatever their position") {
  auto r = ReadCompletionLine({"--kubeconfig", "/k", "explain", "--context=c", "-nprod", ""});
  CHECK(r.kubeconfig == "/k");
  CHECK(r.context == "c");
  CHECK(r.ns == "prod");
  CHECK(r.command == Command::kExplain);
  CHECK(r.want == Want::kVmi);
  CHECK(ReadCompletionLine({}).want == Want::kFirstWord);
  // After `--` every word is a name.
  CHECK(ReadCompletionLine({"--", "-"}).want == Want::kFirstWord);
}

TEST_CASE("a cluster that cannot be read gives directive 1 and no candidates") {
  Cluster c;
  c.fake.FailNext(kube::Verb::kList, 1, kube::ErrorKind::kForbidden);
  auto a = c.Ask({"explain", ""});
  CHECK(a.candidates.empty());
  CHECK(a.directive == kDirectiveError);
  // The first word still offers the subcommands.
  c.fake.FailNext(kube::Verb::kList, 1, kube::ErrorKind::kUnavailable);
  CHECK(Values(c.Ask({"l"})) == Lines{"list"});
  CHECK(Complete(ReadCompletionLine({"--node", ""}), "prod", nullptr).directive == kDirectiveError);
  // No kubeconfig at all: still the subcommands.
  CHECK(Values(Complete(ReadCompletionLine({"st"}), "prod", nullptr)) == Lines{"status"});
}

TEST_CASE("the protocol's output: one candidate a line, then :directive") {
  CompletionAnswer a{{"list\tList placed migrations", "db-1"}, kDirectiveNoFileComp};
  CHECK(FormatCompletion(a, true) == "list\tList placed migrations\ndb-1\n:4\n");
  CHECK(FormatCompletion(a, false) == "list\ndb-1\n:4\n");
  CHECK(FormatCompletion({{}, kDirectiveDefault}, true) == ":0\n");
}

}  // namespace
}  // namespace kmt::cli
