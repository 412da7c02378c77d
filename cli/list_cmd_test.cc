#include "cli/list_cmd.h"

#include <catch2/catch.hpp>
#include <sstream>

#include "kube/fake_client.h"
#include "kube/resources.h"

namespace kmt::cli {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;

// The fake stamps every object with 2026-01-01T00:00:00Z.
const auto kCreated = std::chrono::system_clock::time_point(std::chrono::seconds(1767225600));

constexpr const char* kToW3 =
    R"({"matchFields":[{"key":"metadata.name","operator":"In","values":["w3"]}]})";

void AddMigration(kube::FakeClient& fake, const std::string& ns, const std::string& name,
                  const std::string& vmi, const char* term, const json& status) {
  json m = {{"apiVersion", "kubevirt.io/v1"},
            {"kind", "VirtualMachineInstanceMigration"},
            {"metadata", {{"name", name}, {"namespace", ns}}},
            {"spec", {{"vmiName", vmi}}}};
  if (term != nullptr) {
    m["metadata"]["annotations"] = {
        {"migration-target.kubevirt.io/added-node-selector-term", term}};
  }
  fake.Create(kube::kVirtualMachineInstanceMigrations, ns, m);
  if (status.is_null()) return;
  json stored = fake.Get(kube::kVirtualMachineInstanceMigrations, ns, name);
  stored["status"] = status;
  fake.Update(kube::kVirtualMachineInstanceMigrations, ns, stored, "status");
}

json Cond(const char* type, const char* status, const char* reason, const char* message) {
  return {{"type", type}, {"status", status}, {"reason", reason}, {"message", message}};
}

// prod: a scheduled placed migration, an unschedulable one, a plain one; staging: one placed.
void Seed(kube::FakeClient& fake) {
  AddMigration(fake, "prod", "db-1-migration-aaaaa", "db-1", kToW3,
               {{"phase", "Running"},
                {"migrationState",
                 {{"sourceNode", "w1"}, {"targetNode", "w3"}, {"targetPod", "virt-launcher-x"}}},
                {"conditions",
                 {Cond("addedNodeSelectorTermApplied", "True", "TermApplied", "ANDed"),
                  Cond("targetPodUnschedulable", "False", "Scheduled", "scheduled to node w3")}}});
  AddMigration(
      fake, "prod", "db-2-migration-bbbbb", "db-2",
      R"({"matchExpressions":[{"key":"pool","operator":"In","values":["fast","gpu"]}]})",
      {{"phase", "Scheduling"},
       {"conditions",
        {Cond("addedNodeSelectorTermApplied", "True", "TermApplied", "ANDed"),
         Cond("targetPodUnschedulable", "True", "Unschedulable", "w4: cordoned\nw5: not Ready")}}});
  AddMigration(fake, "prod", "plain-migration", "db-3", nullptr, {{"phase", "Running"}});
  AddMigration(fake, "staging", "web-migration-ccccc", "web", kToW3, nullptr);
}

TEST_CASE("list shows only placed migrations, in kubectl's table") {
  kube::FakeClient fake;
  Seed(fake);
  Invocation inv;
  inv.command = Command::kList;
  std::ostringstream out, err;
  CHECK(RunList(inv, "prod", fake, {out, err}, kCreated + 200s) == 0);
  CHECK(err.str().empty());
  CHECK(out.str() ==
        "NAME                   VMI    PHASE        TERM                    NODE     APPLIED   "
        "UNSCHEDULABLE   AGE\n"
        "db-1-migration-aaaaa   db-1   Running      metadata.name In [w3]   w3       True      "
        "False           3m20s\n"
        "db-2-migration-bbbbb   db-2   Scheduling   pool In [fast, gpu]     <none>   True      "
        "True            3m20s\n");
}

TEST_CASE("list -A adds the namespace, -o wide the source, target pod and why it is held") {
  kube::FakeClient fake;
  Seed(fake);
  Invocation inv;
  inv.command = Command::kList;
  inv.all_namespaces = true;
  inv.output = "wide";
  std::ostringstream out, err;
  CHECK(RunList(inv, "ignored", fake, {out, err}, kCreated + 5s) == 0);
  std::string o = out.str();
  CAPTURE(o);
  std::istringstream lines(o);
  std::string header, first, second, third, extra;
  std::getline(lines, header);
  std::getline(lines, first);
  std::getline(lines, second);
  std::getline(lines, third);
  CHECK_FALSE(std::getline(lines, extra));
  CHECK(header.rfind("NAMESPACE   NAME ", 0) == 0);
  CHECK(header.find("   AGE   SOURCE   TARGET POD        MESSAGE") != std::string::npos);
  CHECK(first.rfind("prod        db-1-migration-aaaaa", 0) == 0);
  CHECK(first.find("   5s    w1       virt-launcher-x   <none>") != std::string::npos);
  // The per-node explanation stays on the row.
  CHECK(second.find("   <none>   <none>            w4: cordoned w5: not Ready") !=
        std::string::npos);
  // No status yet: every status cell is <none>.
  CHECK(
      third.rfind(
          "staging     web-migration-ccccc    web    <none>       metadata.name In [w3]   <none>   "
          "<none>    <none>          5s    <none>   <none>            <none>",
          0) == 0);
}

TEST_CASE("list -o json and -o yaml print a v1 List of the placed VMIMs") {
  kube::FakeClient fake;
  Seed(fake);
  Invocation inv;
  inv.command = Command::kList;
  inv.output = "json";
  std::ostringstream out, err;
  CHECK(RunList(inv, "prod", fake, {out, err}, kCreated) == 0);
  json list = json::parse(out.str());
  CHECK(list["kind"] == "List");
  CHECK(list["apiVersion"] == "v1");
  REQUIRE(list["items"].size() == 2);
  CHECK(list["items"][0]["metadata"]["name"] == "db-1-migration-aaaaa");
  CHECK(list["items"][0]["kind"] == "VirtualMachineInstanceMigration");
  CHECK(list["items"][1]["status"]["phase"] == "Scheduling");

  inv.output = "yaml";
  std::ostringstream yaml;
  CHECK(RunList(inv, "prod", fake, {yaml, err}, kCreated) == 0);
  CHECK(yaml.str().rfind("apiVersion: v1\nitems:\n- apiVersion: kubevirt.io/v1\n", 0) == 0);

  inv.output = "name";
  std::ostringstream names;
  CHECK(RunList(inv, "prod", fake, {names, err}, kCreated) == 0);
  CHECK(names.str() ==
        "virtualmachineinstancemigration.kubevirt.io/db-1-migration-aaaaa\n"
        "virtualmachineinstancemigration.kubevirt.io/db-2-migration-bbbbb\n");
}

TEST_CASE("in flight, NODE and TARGET POD come from the target pod, SOURCE from the VMI") {
  // KubeVirt fills the VMIM's migrationState only when the migration has ended.
  kube::FakeClient fake;
  AddMigration(fake, "prod", "db-4-migration-ddddd", "db-4", kToW3, {{"phase", "Running"}});
  const std::string uid = fake.Get(kube::kVirtualMachineInstanceMigrations, "prod",
                                   "db-4-migration-ddddd")["metadata"]["uid"];
  auto pod = [&](const std::string& name, const std::string& node) {
    json p = {
        {"metadata",
         {{"name", name},
          {"namespace", "prod"},
          {"labels", {{"kubevirt.io", "virt-launcher"}, {"kubevirt.io/migrationJobUID", uid}}}}},
        {"spec", json::object()}};
    if (!node.empty()) p["spec"]["nodeName"] = node;
    fake.Create(kube::kPods, "prod", p);
  };
  pod("virt-launcher-db-4-old", "");  // an unplaced one the bound one wins over
  pod("virt-launcher-db-4-tgt", "w3");
  fake.Create(kube::kPods, "prod",
              {{"metadata", {{"name", "virt-launcher-db-4-src"}, {"namespace", "prod"}}},
               {"spec", {{"nodeName", "w1"}}}});
  fake.Create(kube::kVirtualMachineInstances, "prod",
              {{"metadata", {{"name", "db-4"}, {"namespace", "prod"}}}, {"spec", json::object()}});
  json vmi = fake.Get(kube::kVirtualMachineInstances, "prod", "db-4");
  vmi["status"] = {{"nodeName", "w1"}};
  fake.Update(kube::kVirtualMachineInstances, "prod", vmi, "status");

  Invocation inv;
  inv.command = Command::kList;
  inv.output = "wide";
  std::ostringstream out, err;
  CHECK(RunList(inv, "prod", fake, {out, err}, kCreated) == 0);
  CAPTURE(out.str());
  CHECK(
      out.str().find("db-4-migration-ddddd   db-4   Running   metadata.name In [w3]   w3     <none>"
                     "    <none>          0s    w1       virt-launcher-db-4-tgt   <none>\n") !=
      std::string::npos);

  // Without the right to read pods the table still prints, from the VMIM alone.
  fake.FailNext(kube::Verb::kList, 1, kube::ErrorKind::kForbidden, "pods");
  inv.output.clear();
  std::ostringstream out2;
  CHECK(RunList(inv, "prod", fake, {out2, err}, kCreated) == 0);
  CHECK(out2.str().find("   Running   metadata.name In [w3]   <none>   <none>") !=
        std::string::npos);
}

TEST_CASE("an annotation written around the webhook shows as <invalid>") {
  kube::FakeClient fake;
  AddMigration(fake, "prod", "bad", "db-1", R"({"matchFields":"nope"})", nullptr);
  Invocation inv;
  inv.command = Command::kList;
  std::ostringstream out, err;
  CHECK(RunList(inv, "prod", fake, {out, err}, kCreated) == 0);
  CHECK(out.str().find("bad    db-1   <none>   <invalid>   <none>") != std::string::npos);
}

TEST_CASE("no placed migration says so on stderr, like kubectl get") {
  kube::FakeClient fake;
  AddMigration(fake, "prod", "plain", "db-1", nullptr, nullptr);
  Invocation inv;
  inv.command = Command::kList;
  std::ostringstream out, err;
  CHECK(RunList(inv, "prod", fake, {out, err}, kCreated) == 0);
  CHECK(out.str().empty());
  CHECK(err.str() == "No placed migrations found in prod namespace.\n");
  inv.all_namespaces = true;
  std::ostringstream err2;
  CHECK(RunList(inv, "prod", fake, {out, err2}, kCreated) == 0);
  CHECK(err2.str() == "No placed migrations found.\n");
}

TEST_CASE("list pages through every VMIM and reports an API error as kubectl does") {
  kube::FakeClient fake;
  for (int i = 0; i < 1200; ++i) {
    AddMigration(fake, "prod", "m" + std::to_string(i), "v", i % 2 == 0 ? kToW3 : nullptr, nullptr);
  }
  Invocation inv;
  inv.command = Command::kList;
  inv.output = "name";
  std::ostringstream out, err;
  CHECK(RunList(inv, "prod", fake, {out, err}, kCreated) == 0);
  size_t lines = 0;
  for (char c : out.str()) lines += c == '\n';
  CHECK(lines == 600);

  fake.FailNext(kube::Verb::kList, 1, kube::ErrorKind::kForbidden);
  std::ostringstream out2, err2;
  CHECK(RunList(inv, "prod", fake, {out2, err2}, kCreated) == 1);
  CHECK(err2.str().rfind("Error from server (Forbidden): ", 0) == 0);
}

}  // namespace
}  // namespace kmt::cli
