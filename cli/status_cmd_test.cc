#include "cli/status_cmd.h"

#include <catch2/catch.hpp>
#include <sstream>

#include "kube/fake_client.h"
#include "kube/resources.h"

namespace kmt::cli {
namespace {

using nlohmann::json;

TEST_CASE("status prints phase, nodes, conditions and the latest events in order") {
  kube::FakeClient fake;
  json vmim = {
      {"apiVersion", "kubevirt.io/v1"},
      {"kind", "VirtualMachineInstanceMigration"},
      {"metadata",
       {{"name", "m1"},
        {"namespace", "prod"},
        {"annotations",
         {{"migration-target.kubevirt.io/added-node-selector-term",
           R"({"matchFields":[{"key":"metadata.name","operator":"In","values":["w3"]}]})"}}}}},
      {"spec", {{"vmiName", "db-1"}}}};
  fake.Create(kube::kVirtualMachineInstanceMigrations, "prod", vmim);
  vmim = fake.Get(kube::kVirtualMachineInstanceMigrations, "prod", "m1");
  vmim["status"] = {{"phase", "Scheduling"},
                    {"migrationState", {{"sourceNode", "w1"}, {"targetNode", "w3"}}},
                    {"conditions",
                     {{{"type", "targetPodUnschedulable"},
                       {"status", "True"},
                       {"reason", "Unschedulable"},
                       {"message", "w3: cordoned"}}}}};
  fake.Update(kube::kVirtualMachineInstanceMigrations, "prod", vmim, "status");
  for (int i : {2, 1}) {
    fake.Create(
        kube::kEvents, "prod",
        {{"apiVersion", "v1"},
         {"kind", "Event"},
         {"metadata", {{"name", "e" + std::to_string(i)}, {"namespace", "prod"}}},
         {"involvedObject",
          {{"kind", "VirtualMachineInstanceMigration"}, {"name", "m1"}, {"namespace", "prod"}}},
         {"type", "Normal"},
         {"reason", "R" + std::to_string(i)},
         {"message", "msg" + std::to_string(i)},
         {"source", {{"component", "migration-target-operator"}}},
         {"lastTimestamp", "2026-01-01T00:00:0" + std::to_string(i) + "Z"}});
  }
  std::ostringstream out, err;
  CHECK(RunStatus("prod", "m1", fake, {out, err}) == 0);
  std::string o = out.str();
  CAPTURE(o);
  CHECK(o.find("Phase:        Scheduling\n") != std::string::npos);
  CHECK(o.find("Source node:  w1\n") != std::string::npos);
  CHECK(o.find("Target node:  w3\n") != std::string::npos);
  CHECK(o.find("Request:      {\"matchFields\"") != std::string::npos);
  CHECK(o.find("  targetPodUnschedulable=True (Unschedulable): w3: cordoned\n") !=
        std::string::npos);
  auto e1 = o.find("R1  migration-target-operator  msg1");
  auto e2 = o.find("R2  migration-target-operator  msg2");
  CHECK(e1 != std::string::npos);
  CHECK(e2 != std::string::npos);
  CHECK(e1 < e2);
}

TEST_CASE("status of a missing migration is kubectl's NotFound line") {
  kube::FakeClient fake;
  std::ostringstream out, err;
  CHECK(RunStatus("prod", "nope", fake, {out, err}) == 1);
  CHECK(err.str().rfind("Error from server (NotFound): ", 0) == 0);
}

}  // namespace
}  // namespace kmt::cli
