#include "cli/cancel_cmd.h"

#include <catch2/catch.hpp>
#include <sstream>

#include "kube/fake_client.h"
#include "kube/resources.h"

namespace kmt::cli {
namespace {

using nlohmann::json;

// A VMIM as virt-api stores it: labelled with its VMI, in `phase`, with KubeVirt's finalizer.
std::string AddMigration(kube::FakeClient& fake, const std::string& ns, const std::string& name,
                         const std::string& vmi, const std::string& phase) {
  fake.Create(kube::kVirtualMachineInstanceMigrations, ns,
              json{{"apiVersion", "kubevirt.io/v1"},
                   {"kind", "VirtualMachineInstanceMigration"},
                   {"metadata",
                    {{"name", name},
                     {"namespace", ns},
                     {"labels", {{"kubevirt.io/vmi-name", vmi}}},
                     {"finalizers", {"kubevirt.io/migrationJobFinalize"}}}},
                   {"spec", {{"vmiName", vmi}}}});
  json stored = fake.Get(kube::kVirtualMachineInstanceMigrations, ns, name);
  if (!phase.empty()) {
    stored["status"] = {{"phase", phase}};
    stored = fake.Update(kube::kVirtualMachineInstanceMigrations, ns, stored, "status");
  }
  return stored["metadata"]["uid"].get<std::string>();
}

Invocation Cancel(const std::string& name) {
  Invocation inv;
  inv.command = Command::kCancel;
  inv.name = name;
  return inv;
}

Invocation CancelVmi(const std::string& vmi) {
  Invocation inv;
  inv.command = Command::kCancel;
  inv.vmi = vmi;
  return inv;
}

bool Deleting(kube::FakeClient& fake, const std::string& ns, const std::string& name) {
  return fake.Get(kube::kVirtualMachineInstanceMigrations, ns, name)["metadata"].contains(
      "deletionTimestamp");
}

TEST_CASE("cancel by name deletes that VMIM with its uid as precondition") {
  kube::FakeClient fake;
  std::string uid = AddMigration(fake, "prod", "m1", "db-1", "Scheduling");
  fake.ClearCalls();
  std::ostringstream out, err;
  CHECK(RunCancel(Cancel("m1"), "prod", fake, {out, err}) == 0);
  CHECK(out.str() == "virtualmachineinstancemigration.kubevirt.io/m1 cancelled\n");
  CHECK(err.str().empty());
  auto calls = fake.Calls();
  REQUIRE(calls.size() == 2);
  CHECK(calls[0].verb == kube::Verb::kGet);
  CHECK(calls[1].verb == kube::Verb::kDelete);
  CHECK(calls[1].name == "m1");
  // KubeVirt's finalizer keeps it until virt-controller has aborted the migration.
  CHECK(Deleting(fake, "prod", "m1"));
  CHECK(fake.Get(kube::kVirtualMachineInstanceMigrations, "prod", "m1")["metadata"]["uid"] == uid);
}

TEST_CASE("cancel --vmi deletes the VMI's migration that has not ended, as virtctl does") {
  kube::FakeClient fake;
  AddMigration(fake, "prod", "old-ok", "db-1", "Succeeded");
  AddMigration(fake, "prod", "old-failed", "db-1", "Failed");
  AddMigration(fake, "prod", "active", "db-1", "Running");
  AddMigration(fake, "prod", "other-vm", "db-2", "Running");
  AddMigration(fake, "staging", "same-vmi-elsewhere", "db-1", "Running");
  std::ostringstream out, err;
  CHECK(RunCancel(CancelVmi("db-1"), "prod", fake, {out, err}) == 0);
  CHECK(out.str() == "virtualmachineinstancemigration.kubevirt.io/active cancelled\n");
  CHECK(Deleting(fake, "prod", "active"));
  for (const char* untouched : {"old-ok", "old-failed", "other-vm"}) {
    CAPTURE(untouched);
    CHECK_FALSE(Deleting(fake, "prod", untouched));
  }
  CHECK_FALSE(Deleting(fake, "staging", "same-vmi-elsewhere"));
}

TEST_CASE("a VMIM without a phase yet counts as active") {
  kube::FakeClient fake;
  AddMigration(fake, "prod", "fresh", "db-1", "");
  std::ostringstream out, err;
  CHECK(RunCancel(CancelVmi("db-1"), "prod", fake, {out, err}) == 0);
  CHECK(Deleting(fake, "prod", "fresh"));
}

TEST_CASE("nothing to cancel exits 1 and deletes nothing") {
  kube::FakeClient fake;
  AddMigration(fake, "prod", "done", "db-1", "Succeeded");
  std::ostringstream out, err;
  SECTION("--vmi with only ended migrations") {
    CHECK(RunCancel(CancelVmi("db-1"), "prod", fake, {out, err}) == 1);
    CHECK(err.str() ==
          "error: found no migration to cancel for virtualmachineinstance \"db-1\" in namespace "
          "\"prod\"\n");
  }
  SECTION("--vmi of a VMI without migrations") {
    CHECK(RunCancel(CancelVmi("db-9"), "prod", fake, {out, err}) == 1);
    CHECK(err.str().find("found no migration to cancel") != std::string::npos);
  }
  SECTION("a named migration that already ended") {
    CHECK(RunCancel(Cancel("done"), "prod", fake, {out, err}) == 1);
    CHECK(err.str() == "error: migration done has already Succeeded; there is nothing to cancel\n");
  }
  SECTION("a named migration that does not exist") {
    CHECK(RunCancel(Cancel("nope"), "prod", fake, {out, err}) == 1);
    CHECK(err.str() ==
          "Error from server (NotFound): virtualmachineinstancemigrations.kubevirt.io \"nope\" "
          "not found\n");
  }
  CHECK(out.str().empty());
  CHECK_FALSE(Deleting(fake, "prod", "done"));
}

TEST_CASE("dry runs delete nothing") {
  kube::FakeClient fake;
  AddMigration(fake, "prod", "m1", "db-1", "Running");
  std::ostringstream out, err;
  Invocation client = Cancel("m1");
  client.dry_run = DryRun::kClient;
  CHECK(RunCancel(client, "prod", fake, {out, err}) == 0);
  CHECK(out.str() == "virtualmachineinstancemigration.kubevirt.io/m1 cancelled (dry run)\n");
  Invocation server = CancelVmi("db-1");
  server.dry_run = DryRun::kServer;
  server.output = "name";
  std::ostringstream out2;
  CHECK(RunCancel(server, "prod", fake, {out2, err}) == 0);
  CHECK(out2.str() == "virtualmachineinstancemigration.kubevirt.io/m1\n");
  CHECK_FALSE(Deleting(fake, "prod", "m1"));
  bool sent_dry_run = false;
  for (const auto& c : fake.Calls()) {
    if (c.verb == kube::Verb::kDelete) sent_dry_run = c.dry_run;
  }
  CHECK(sent_dry_run);
}

TEST_CASE("-o yaml shows the VMIM as the API server answered the delete") {
  kube::FakeClient fake;
  AddMigration(fake, "prod", "m1", "db-1", "Running");
  Invocation inv = Cancel("m1");
  inv.output = "json";
  std::ostringstream out, err;
  CHECK(RunCancel(inv, "prod", fake, {out, err}) == 0);
  json shown = json::parse(out.str());
  CHECK(shown["metadata"]["name"] == "m1");
  CHECK(shown["metadata"].contains("deletionTimestamp"));
}

TEST_CASE("a VMIM replaced between the read and the delete is not deleted") {
  kube::FakeClient fake;
  AddMigration(fake, "prod", "m1", "db-1", "Running");
  // Between our GET and our DELETE someone replaces m1 by a new object of the same name.
  bool replaced = false;
  fake.SetCallHook([&](const kube::FakeCall& call) {
    if (call.verb != kube::Verb::kDelete || replaced) return;
    replaced = true;
    json old = fake.Get(kube::kVirtualMachineInstanceMigrations, "prod", "m1");
    old["metadata"]["finalizers"] = json::array();
    fake.Update(kube::kVirtualMachineInstanceMigrations, "prod", old);
    fake.Delete(kube::kVirtualMachineInstanceMigrations, "prod", "m1");
    AddMigration(fake, "prod", "m1", "db-1", "Pending");
  });
  std::ostringstream out, err;
  CHECK(RunCancel(Cancel("m1"), "prod", fake, {out, err}) == 1);
  CHECK(err.str().rfind("Error from server (Conflict): ", 0) == 0);
  fake.SetCallHook(nullptr);
  CHECK_FALSE(Deleting(fake, "prod", "m1"));
}

TEST_CASE("a refused delete is printed as the API server returned it") {
  kube::FakeClient fake;
  AddMigration(fake, "prod", "m1", "db-1", "Running");
  json status = {{"kind", "Status"},
                 {"apiVersion", "v1"},
                 {"status", "Failure"},
                 {"reason", "Forbidden"},
                 {"code", 403},
                 {"message",
                  "virtualmachineinstancemigrations.kubevirt.io \"m1\" is forbidden: User "
                  "\"viewer\" cannot delete resource"}};
  fake.FailNextWith(kube::Verb::kDelete, 1,
                    kube::ErrorFromResponse(403, status.dump(), std::nullopt, "delete"));
  std::ostringstream out, err;
  CHECK(RunCancel(Cancel("m1"), "prod", fake, {out, err}) == 1);
  CHECK(err.str() ==
        "Error from server (Forbidden): virtualmachineinstancemigrations.kubevirt.io \"m1\" is "
        "forbidden: User \"viewer\" cannot delete resource\n");
  CHECK(out.str().empty());
}

}  // namespace
}  // namespace kmt::cli
