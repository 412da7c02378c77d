#include "cli/explain_cmd.h"

#include <catch2/catch.hpp>
#include <sstream>
#include <utility>

#include "kube/fake_client.h"
#include "kube/resources.h"

namespace kmt::cli {
namespace {

using nlohmann::json;

json Node(const std::string& name, json extra_spec = json::object(), std::string memory = "16Gi") {
  json spec = json::object();
  for (auto& [k, v] : extra_spec.items()) spec[k] = v;
  return {
      {"apiVersion", "v1"},
      {"kind", "Node"},
      {"metadata",
       {{"name", name},
        {"labels",
         {{"kubernetes.io/hostname", name},
          {"kubevirt.io/schedulable", "true"},
          {"zone", name == "w5" ? "b" : "a"}}}}},
      {"spec", spec},
      {"status",
       {{"allocatable",
         {{"cpu", "8"}, {"memory", memory}, {"pods", "110"}, {"devices.kubevirt.io/kvm", "1k"}}},
        {"conditions", {{{"type", "Ready"}, {"status", "True"}}}}}}};
}

void Seed(kube::FakeClient& fake) {
  fake.Create(kube::kVirtualMachineInstances, "prod",
              {{"apiVersion", "kubevirt.io/v1"},
               {"kind", "VirtualMachineInstance"},
               {"metadata", {{"name", "db-1"}, {"namespace", "prod"}, {"uid", "vmi-uid"}}},
               {"spec", json::object()}});
  json vmi = fake.Get(kube::kVirtualMachineInstances, "prod", "db-1");
  vmi["status"] = {{"nodeName", "w1"}, {"phase", "Running"}};
  fake.Update(kube::kVirtualMachineInstances, "prod", vmi, "status");
  std::string uid = vmi["metadata"]["uid"];
  fake.Create(kube::kNodes, "", Node("w1"));
  fake.Create(kube::kNodes, "", Node("w2", {{"unschedulable", true}}));
  fake.Create(kube::kNodes, "", Node("w3"));
  fake.Create(kube::kNodes, "",
              Node("w4", {{"taints",
                           {{{"key", "dedicated"}, {"value", "gpu"}, {"effect", "NoSchedule"}}}}}));
  fake.Create(kube::kNodes, "", Node("w5"));
  fake.Create(kube::kNodes, "", Node("w6", json::object(), "1Gi"));
  json pod = json::parse(R"({
    "apiVersion": "v1", "kind": "Pod",
    "metadata": {"name": "virt-launcher-db-1-abcde", "namespace": "prod",
                 "labels": {"kubevirt.io": "virt-launcher"}},
    "spec": {
      "nodeName": "w1",
      "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}]}}},
      "nodeSelector": {"kubevirt.io/schedulable": "true"},
      "containers": [{"name": "compute", "resources": {"requests":
        {"cpu": "1", "memory": "2Gi", "devices.kubevirt.io/kvm": "1"}}}]},
    "status": {"phase": "Running"}})");
  pod["metadata"]["labels"]["kubevirt.io/created-by"] = uid;
  fake.Create(kube::kPods, "prod", pod);
}

TEST_CASE("explain names every reason, node by node, for the nodes the request allows") {
  kube::FakeClient fake;
  Seed(fake);
  api::NodeSelectorTerm term;
  term.match_expressions.push_back({"kubernetes.io/hostname", "NotIn", {"w3"}});
  std::ostringstream out, err;
  int rc = RunExplain("prod", "db-1", term, fake, {out, err});
  std::string o = out.str();
  CAPTURE(o, err.str());
  CHECK(rc == 1);  // w3 would fit but the request excludes it
  CHECK(o.find("w1     the VM already runs there") != std::string::npos);
  CHECK(o.find("w2     cordoned") != std::string::npos);
  CHECK(o.find("w3") == std::string::npos);
  CHECK(o.find("w4     taint dedicated=gpu:NoSchedule not tolerated") != std::string::npos);
  CHECK(o.find("w5     VM's own affinity `zone In [a]` excludes it") != std::string::npos);
  CHECK(o.find("w6     insufficient memory (requested 2Gi") != std::string::npos);
  CHECK(o.find("0 of 5 nodes allowed by the request would take virtualmachineinstance db-1.") !=
        std::string::npos);
}

TEST_CASE("explain without a request covers every node and exits 0 when one fits") {
  kube::FakeClient fake;
  Seed(fake);
  std::ostringstream out, err;
  CHECK(RunExplain("prod", "db-1", std::nullopt, fake, {out, err}) == 0);
  CHECK(out.str().find("w3     fits\n") != std::string::npos);
  CHECK(out.str().find("1 of 6 nodes would take virtualmachineinstance db-1.") !=
        std::string::npos);
}

TEST_CASE("explain names another pod whose anti-affinity keeps the VM off, namespaces read") {
  // ops/guard on w3 keeps virt-launcher pods of namespaces labelled tier=vm off its node.
  auto explain = [](const json& prod_labels) {
    kube::FakeClient fake;
    Seed(fake);
    fake.Create(kube::kNamespaces, "", {{"metadata", {{"name", "prod"}, {"labels", prod_labels}}}});
    fake.Create(kube::kPods, "ops", json::parse(R"({
      "metadata": {"name": "guard", "namespace": "ops"},
      "spec": {"nodeName": "w3", "containers": [],
        "affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
          {"labelSelector": {"matchLabels": {"kubevirt.io": "virt-launcher"}},
           "namespaceSelector": {"matchLabels": {"tier": "vm"}},
           "topologyKey": "kubernetes.io/hostname"}]}}},
      "status": {"phase": "Running"}})"));
    std::ostringstream out, err;
    const int rc = RunExplain("prod", "db-1", std::nullopt, fake, {out, err});
    return std::pair(rc, out.str());
  };
  const auto [rc, o] = explain({{"tier", "vm"}});
  CAPTURE(o);
  CHECK(rc == 1);
  CHECK(o.find("w3     pod ops/guard's anti-affinity (topologyKey kubernetes.io/hostname) "
               "excludes it\n") != std::string::npos);
  const auto [rc_other, o_other] = explain({{"tier", "batch"}});
  CHECK(rc_other == 0);
  CHECK(o_other.find("w3     fits\n") != std::string::npos);
}

TEST_CASE("explain reports a request no node matches, and a VMI that does not run") {
  kube::FakeClient fake;
  Seed(fake);
  api::NodeSelectorTerm nowhere;
  nowhere.match_fields.push_back({"metadata.name", "In", {"w9"}});
  std::ostringstream out, err;
  CHECK(RunExplain("prod", "db-1", nowhere, fake, {out, err}) == 1);
  CHECK(out.str() == "No node matches the request (metadata.name In [w9]).\n");

  std::ostringstream out2, err2;
  CHECK(RunExplain("prod", "nope", nowhere, fake, {out2, err2}) == 1);
  CHECK(err2.str().rfind("Error from server (NotFound): ", 0) == 0);
}

// The VM's pod mounts claim `claim` (created by the caller, or not).
void MountClaim(kube::FakeClient& fake, const std::string& claim) {
  json pod = fake.Get(kube::kPods, "prod", "virt-launcher-db-1-abcde");
  pod["spec"]["volumes"] = {{{"name", "disk"}, {"persistentVolumeClaim", {{"claimName", claim}}}}};
  fake.Update(kube::kPods, "prod", pod);
}

TEST_CASE("explain reads the VM's claims and PVs: a PV pinned to a zone, an unbound claim") {
  kube::FakeClient fake;
  Seed(fake);
  SECTION("a bound PV's node affinity") {
    fake.Create(
        kube::kPersistentVolumeClaims, "prod",
        {{"metadata",
          {{"name", "data"}, {"annotations", {{"pv.kubernetes.io/bind-completed", "yes"}}}}},
         {"spec", {{"volumeName", "pv-data"}}}});
    fake.Create(kube::kPersistentVolumes, "",
                json::parse(R"({"metadata": {"name": "pv-data"}, "spec": {
                  "claimRef": {"namespace": "prod", "name": "data"}, "nodeAffinity":
                  {"required": {"nodeSelectorTerms": [{"matchExpressions":
                    [{"key": "kubernetes.io/hostname", "operator": "In", "values": ["w1", "w6"]}]}]}}}})"));
    MountClaim(fake, "data");
    std::ostringstream out, err;
    CHECK(RunExplain("prod", "db-1", std::nullopt, fake, {out, err}) == 1);
    CAPTURE(out.str(), err.str());
    CHECK(out.str().find("w3     PersistentVolume pv-data (claim prod/data) node affinity "
                         "`kubernetes.io/hostname In [w1, w6]` excludes it\n") !=
          std::string::npos);
    CHECK(out.str().find("0 of 6 nodes would take") != std::string::npos);
  }
  SECTION("a PV whose claimRef names another claim is not described, with a note") {
    fake.Create(
        kube::kPersistentVolumeClaims, "prod",
        {{"metadata",
          {{"name", "data"}, {"annotations", {{"pv.kubernetes.io/bind-completed", "yes"}}}}},
         {"spec", {{"volumeName", "pv-theirs"}}}});
    fake.Create(kube::kPersistentVolumes, "",
                json::parse(R"({"metadata": {"name": "pv-theirs"}, "spec": {
                  "claimRef": {"namespace": "other", "name": "data"}, "nodeAffinity":
                  {"required": {"nodeSelectorTerms": [{"matchExpressions":
                    [{"key": "kubernetes.io/hostname", "operator": "In", "values": ["w1"]}]}]}}}})"));
    MountClaim(fake, "data");
    std::ostringstream out, err;
    CHECK(RunExplain("prod", "db-1", std::nullopt, fake, {out, err}) == 0);
    CAPTURE(out.str(), err.str());
    CHECK(out.str().find("w3     fits\n") != std::string::npos);
    CHECK(out.str().find("pv-theirs") == std::string::npos);
    CHECK(err.str() ==
          "note: claim prod/data names PersistentVolume pv-theirs, whose claimRef names another "
          "claim; that volume is not checked\n");
  }
  SECTION("a claim that does not exist keeps it off every node") {
    MountClaim(fake, "gone");
    std::ostringstream out, err;
    CHECK(RunExplain("prod", "db-1", std::nullopt, fake, {out, err}) == 1);
    CHECK(out.str().find("w3     claim prod/gone not found\n") != std::string::npos);
  }
  SECTION("WaitForFirstConsumer: not checked, and said so") {
    fake.Create(kube::kPersistentVolumeClaims, "prod",
                {{"metadata", {{"name", "late"}}}, {"spec", {{"storageClassName", "local"}}}});
    fake.Create(kube::kStorageClasses, "",
                {{"metadata", {{"name", "local"}}}, {"volumeBindingMode", "WaitForFirstConsumer"}});
    MountClaim(fake, "late");
    std::ostringstream out, err;
    CHECK(RunExplain("prod", "db-1", std::nullopt, fake, {out, err}) == 0);
    CHECK(out.str().find("w3     fits\n") != std::string::npos);
    CHECK(err.str() ==
          "note: claim prod/late is not bound and waits for its first consumer "
          "(WaitForFirstConsumer); where it can be provisioned is not checked\n");
  }
  SECTION("volumes the user may not read are not checked, with a note") {
    MountClaim(fake, "data");
    fake.FailNext(kube::Verb::kGet, 1, kube::ErrorKind::kForbidden, "persistentvolumeclaims");
    std::ostringstream out, err;
    CHECK(RunExplain("prod", "db-1", std::nullopt, fake, {out, err}) == 0);
    CHECK(out.str().find("w3     fits\n") != std::string::npos);
    CHECK(err.str().rfind("note: cannot read the volumes of prod/virt-launcher-db-1-abcde (", 0) ==
          0);
  }
}

// The VM now runs in the target pod of migration m1, whose request was
// `metadata.name In [w1]`: the VMIM exists, and the running pod carries m1's markings
// and `required` as its required node affinity (what m1's AND left there).
void PlaceByEarlierMigration(kube::FakeClient& fake, const json& required) {
  fake.Create(
      kube::kVirtualMachineInstanceMigrations, "prod",
      json::parse(R"({"apiVersion": "kubevirt.io/v1", "kind": "VirtualMachineInstanceMigration",
                "metadata": {"name": "m1", "namespace": "prod", "annotations": {
                  "migration-target.kubevirt.io/added-node-selector-term":
                  "{\"matchFields\":[{\"key\":\"metadata.name\",\"operator\":\"In\",\"values\":[\"w1\"]}]}"}},
                "spec": {"vmiName": "db-1"}})"));
  json pod = fake.Get(kube::kPods, "prod", "virt-launcher-db-1-abcde");
  pod["metadata"]["labels"]["kubevirt.io/migrationJobUID"] = "m1-uid";
  pod["metadata"]["annotations"] = {{"kubevirt.io/migrationJobName", "m1"}};
  pod["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"] =
      required;
  fake.Delete(kube::kPods, "prod", "virt-launcher-db-1-abcde");
  pod["metadata"].erase("resourceVersion");
  pod["metadata"].erase("uid");
  fake.Create(kube::kPods, "prod", pod);
}

TEST_CASE("after a placed migration, the earlier request does not constrain the next one") {
  kube::FakeClient fake;
  Seed(fake);
  // m1 ANDed `zone In [a]` — the same requirement as the owner's — and
  // `metadata.name In [w1]` into the owner's term.
  PlaceByEarlierMigration(fake, json::parse(R"({"nodeSelectorTerms": [{
      "matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}],
      "matchFields": [{"key": "metadata.name", "operator": "In", "values": ["w1"]}]}]})"));
  std::ostringstream out, err;
  CHECK(RunExplain("prod", "db-1", std::nullopt, fake, {out, err}) == 0);
  CAPTURE(out.str(), err.str());
  CHECK(out.str().find("w3     fits\n") != std::string::npos);  // not excluded by m1's request
  CHECK(err.str().empty());

  // When m1 is gone, the plugin says the affinity may still carry its request.
  fake.Delete(kube::kVirtualMachineInstanceMigrations, "prod", "m1");
  std::ostringstream out2, err2;
  RunExplain("prod", "db-1", std::nullopt, fake, {out2, err2});
  CHECK(err2.str().find("note: the VM's pod was created by migration m1, which no longer exists") !=
        std::string::npos);
}

TEST_CASE(
    "after a placed migration of a VM with no affinity of its own, no node is excluded by it") {
  kube::FakeClient fake;
  Seed(fake);
  // The VM has no required node affinity; m1's AND created one holding only its request.
  PlaceByEarlierMigration(fake, json::parse(R"({"nodeSelectorTerms": [{"matchFields": [
      {"key": "metadata.name", "operator": "In", "values": ["w1"]}]}]})"));
  std::ostringstream out, err;
  CHECK(RunExplain("prod", "db-1", std::nullopt, fake, {out, err}) == 0);
  const std::string o = out.str();
  CAPTURE(o, err.str());
  CHECK(o.find("VM's own affinity") == std::string::npos);
  CHECK(o.find("w3     fits\n") != std::string::npos);
  CHECK(o.find("w5     fits\n") != std::string::npos);  // zone b: nothing of the VM's excludes it
  CHECK(o.find("2 of 6 nodes would take virtualmachineinstance db-1.") != std::string::npos);
  CHECK(err.str().empty());
}

// Answers the VMI read and the pod list with whatever a test gives, nodes and bound
// pods with nothing: the shapes a confused proxy or a broken aggregated server could send.
class OddAnswers : public kube::FakeClient {
 public:
  OddAnswers(json vmi, json launchers) : vmi_(std::move(vmi)), launchers_(std::move(launchers)) {}
  json Get(const kube::Resource& r, std::string_view ns, std::string_view name,
           std::string_view sub) override {
    if (r.resource == kube::kVirtualMachineInstances.resource) return vmi_;
    return FakeClient::Get(r, ns, name, sub);
  }
  json List(const kube::Resource& r, std::string_view, const kube::ListOptions& o) override {
    const bool launchers = r.resource == kube::kPods.resource && o.field_selector.empty();
    return {{"kind", "List"}, {"items", launchers ? launchers_ : json::array()}};
  }

 private:
  json vmi_;
  json launchers_;
};

TEST_CASE("explain reads odd VMI and pod answers as absent fields, never throwing") {
  const char* vmi_ok = R"({"metadata": {"uid": "u"}, "status": {"nodeName": "w1"}})";
  const std::string no_model =
      "error: virtualmachineinstance db-1 in namespace prod has no running virt-launcher pod to "
      "model the migration target on\n";
  const std::string no_node = "No node matches the request.\n";
  struct Row {
    const char* vmi;
    const char* launchers;
    std::string out;
    std::string err;
  };
  const Row row = GENERATE_COPY(values<Row>({
      {"[]", "[]", "", no_model},
      {"null", "[]", "", no_model},
      {R"({"metadata": {"uid": 5}, "status": {"nodeName": ["w1"]}})", "[]", "", no_model},
      {R"({"metadata": "m", "status": "Running"})", "[]", "", no_model},
      {vmi_ok, R"([{"metadata": {"name": "p"}, "spec": [], "status": "x"}])", "", no_model},
      {vmi_ok, R"(["pod", null, 7, []])", "", no_model},
      {vmi_ok, R"([{"metadata": {"name": "p"}, "spec": {"nodeName": "w1"}, "status": null}])",
       no_node, ""},
      {vmi_ok, R"([{"spec": {"nodeName": "w1"}}])", no_node, ""},
      {vmi_ok,
       R"([{"metadata": {"labels": "x", "annotations": []}, "spec": {"nodeName": "w1"},
            "status": {"phase": 3}}])",
       no_node, ""},
      {vmi_ok,
       R"([{"metadata": {"labels": {"kubevirt.io/migrationJobUID": "m1-uid"},
                         "annotations": {"kubevirt.io/migrationJobName": 5}},
            "spec": {"nodeName": "w1"}}])",
       no_node,
       "note: the VM's pod was created by migration <unknown>, which no longer exists; its node "
       "affinity may still include that migration's request\n"},
  }));
  CAPTURE(row.vmi, row.launchers);
  OddAnswers client(json::parse(row.vmi), json::parse(row.launchers));
  std::ostringstream out, err;
  int rc = 0;
  REQUIRE_NOTHROW(rc = RunExplain("prod", "db-1", std::nullopt, client, {out, err}));
  CHECK(rc == 1);
  CHECK(out.str() == row.out);
  CHECK(err.str() == row.err);
}

}  // namespace
}  // namespace kmt::cli
