#include "cli/policy_explain_cmd.h"

#include <catch2/catch.hpp>
#include <sstream>

#include "kube/fake_client.h"
#include "kube/resources.h"

namespace kmt::cli {
namespace {

using nlohmann::json;

json Node(const std::string& name, const std::string& rack, bool cordoned = false) {
  return {{"apiVersion", "v1"},
          {"kind", "Node"},
          {"metadata",
           {{"name", name}, {"labels", {{"kubernetes.io/hostname", name}, {"rack", rack}}}}},
          {"spec", {{"unschedulable", cordoned}}},
          {"status",
           {{"allocatable", {{"cpu", "8"}, {"memory", "16Gi"}, {"pods", "110"}}},
            {"conditions", {{{"type", "Ready"}, {"status", "True"}}}}}}};
}

json Policy(const std::string& name, const std::string& spec) {
  return {{"apiVersion", "migration-target.kubevirt.io/v1alpha1"},
          {"kind", "MigrationTargetPolicy"},
          {"metadata", {{"name", name}}},
          {"spec", json::parse(spec)}};
}

// A running VMI on `node` with its virt-launcher pod there.
void StartVmi(kube::FakeClient& fake, const std::string& ns, const std::string& name,
              const std::string& node, json labels = json::object()) {
  fake.Create(kube::kVirtualMachineInstances, ns,
              {{"apiVersion", "kubevirt.io/v1"},
               {"kind", "VirtualMachineInstance"},
               {"metadata", {{"name", name}, {"namespace", ns}, {"labels", labels}}},
               {"spec", json::object()}});
  json vmi = fake.Get(kube::kVirtualMachineInstances, ns, name);
  vmi["status"] = {{"nodeName", node}, {"phase", "Running"}};
  fake.Update(kube::kVirtualMachineInstances, ns, vmi, "status");
  json pod = {
      {"apiVersion", "v1"},
      {"kind", "Pod"},
      {"metadata",
       {{"name", "virt-launcher-" + name},
        {"namespace", ns},
        {"labels",
         {{"kubevirt.io", "virt-launcher"}, {"kubevirt.io/created-by", vmi["metadata"]["uid"]}}}}},
      {"spec",
       {{"nodeName", node},
        {"containers",
         {{{"name", "compute"},
           {"resources", {{"requests", {{"cpu", "1"}, {"memory", "1Gi"}}}}}}}}}}};
  fake.Create(kube::kPods, ns, pod);
  json stored = fake.Get(kube::kPods, ns, "virt-launcher-" + name);
  stored["status"] = {{"phase", "Running"}};
  fake.Update(kube::kPods, ns, stored, "status");
}

// Rack a (the node being drained, a-0), rack b (b-1, b-2 cordoned), rack c (c-3); a policy
// "rack a → rack b" that leaves out VMIs labelled tier=db.
void Seed(kube::FakeClient& fake) {
  fake.Create(kube::kNodes, "", Node("a-0", "a"));
  fake.Create(kube::kNodes, "", Node("b-1", "b"));
  fake.Create(kube::kNodes, "", Node("b-2", "b", /*cordoned=*/true));
  fake.Create(kube::kNodes, "", Node("c-3", "c"));
  fake.Create(kube::kMigrationTargetPolicies, "", Policy("rack-a-to-b", R"({
    "match": {"origin": "Evacuation", "sourceNodeSelector": {"matchLabels": {"rack": "a"}},
              "vmiSelector": {"matchExpressions": [{"key": "tier", "operator": "NotIn", "values": ["db"]}]}},
    "addedNodeSelectorTerm": {"matchExpressions": [{"key": "rack", "operator": "In", "values": ["b"]}]}})"));
  StartVmi(fake, "prod", "web-1", "a-0", {{"tier", "web"}});
  StartVmi(fake, "prod", "db-1", "a-0", {{"tier", "db"}});
  StartVmi(fake, "other", "elsewhere", "c-3");
}

TEST_CASE("policy explain: the policy per VMI, node by node ANDed with its term, a summary") {
  kube::FakeClient fake;
  Seed(fake);
  std::ostringstream out, err;
  const int rc = RunPolicyExplain("a-0", std::nullopt, "Evacuation", "", fake, {out, err});
  const std::string o = out.str();
  CAPTURE(o, err.str());
  CHECK(rc == 0);
  CHECK(err.str().empty());
  CHECK(o == R"(Node a-0, origin Evacuation: 2 VMIs, 1 MigrationTargetPolicy

prod/db-1: no policy: the scheduler alone decides
  NODE   VERDICT
  b-1    fits
  b-2    cordoned
  c-3    fits
  2 of 3 nodes allowed: b-1, c-3

prod/web-1: policy rack-a-to-b (rack In [b])
  NODE   VERDICT
  b-1    fits
  b-2    cordoned
  c-3    term of policy rack-a-to-b does not match (`rack In [b]`)
  1 of 3 nodes allowed: b-1
)");
}

TEST_CASE("policy explain -o json carries the same verdicts") {
  kube::FakeClient fake;
  Seed(fake);
  std::ostringstream out, err;
  REQUIRE(RunPolicyExplain("a-0", std::nullopt, "Evacuation", "json", fake, {out, err}) == 0);
  const json j = json::parse(out.str());
  CHECK(j["node"] == "a-0");
  CHECK(j["origin"] == "Evacuation");
  CHECK(j["skippedPolicies"] == json::array());
  REQUIRE(j["vmis"].size() == 2);
  const json& web = j["vmis"][1];
  CHECK(web["namespace"] == "prod");
  CHECK(web["name"] == "web-1");
  CHECK(web["policy"]["name"] == "rack-a-to-b");
  CHECK(web["policy"]["priority"] == 0);
  CHECK(web["policy"]["addedNodeSelectorTerm"] ==
        json::parse(R"({"matchExpressions":[{"key":"rack","operator":"In","values":["b"]}]})"));
  CHECK(web["allowedNodes"] == json{"b-1"});
  REQUIRE(web["nodes"].size() == 3);
  CHECK(web["nodes"][2] == json{{"name", "c-3"},
                                {"fits", false},
                                {"reasons",
                                 {"term of policy rack-a-to-b does not match "
                                  "(`rack In [b]`)"}}});
  CHECK(web["summary"] == "1 of 3 nodes allowed: b-1");
  CHECK(j["vmis"][0]["policy"].is_null());
  CHECK_FALSE(j["vmis"][0].contains("error"));
}

TEST_CASE("policy explain: origin, -n, a skipped policy, why no node, a VMI without a pod") {
  kube::FakeClient fake;
  Seed(fake);
  fake.Create(kube::kMigrationTargetPolicies, "",
              Policy("broken", R"({"addedNodeSelectorTerm": {}})"));
  fake.Create(kube::kMigrationTargetPolicies, "", Policy("desched-to-c", R"({
    "priority": 5, "maxInboundPerNode": 3, "match": {"origin": "Descheduler"},
    "addedNodeSelectorTerm": {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["b-2"]}]}})"));

  SECTION("the descheduler's eviction picks the descheduler's policy, for every VMI") {
    std::ostringstream out, err;
    REQUIRE(RunPolicyExplain("a-0", std::string("prod"), "Descheduler", "", fake, {out, err}) == 0);
    const std::string o = out.str();
    CAPTURE(o);
    CHECK(o.rfind("Node a-0, origin Descheduler: 2 VMIs, 3 MigrationTargetPolicies (1 skipped)\n"
                  "MigrationTargetPolicy \"broken\" is skipped: spec.addedNodeSelectorTerm",
                  0) == 0);
    CHECK(o.find("prod/db-1: policy desched-to-c (metadata.name In [b-2]), at most 3 inbound per "
                 "node (the rest wait gated)\n") != std::string::npos);
    CHECK(o.find("prod/web-1: policy desched-to-c") != std::string::npos);
    // b-2 is the only node the term allows, and it is cordoned.
    CHECK(o.find("  no node allowed of 3 nodes: 2 excluded by the term of policy desched-to-c, "
                 "1 cordoned\n") != std::string::npos);
  }

  SECTION("a VMI already marked by the descheduler counts as the descheduler's") {
    json vmi = fake.Get(kube::kVirtualMachineInstances, "prod", "web-1");
    vmi["metadata"]["annotations"] = {{"kubevirt.io/eviction-source", "descheduler"}};
    fake.Update(kube::kVirtualMachineInstances, "prod", vmi);
    std::ostringstream out, err;
    REQUIRE(RunPolicyExplain("a-0", std::string("prod"), "Evacuation", "", fake, {out, err}) == 0);
    CHECK(out.str().find("prod/web-1: policy desched-to-c") != std::string::npos);
    CHECK(out.str().find("prod/db-1: no policy") != std::string::npos);
  }

  SECTION("-n restricts to one namespace; a VMI without its pod is said so") {
    StartVmi(fake, "other", "lone", "a-0");
    fake.Delete(kube::kPods, "other", "virt-launcher-lone");
    std::ostringstream out, err;
    REQUIRE(RunPolicyExplain("a-0", std::string("other"), "Evacuation", "", fake, {out, err}) == 0);
    CHECK(out.str() == R"(Node a-0, origin Evacuation: 1 VMI, 3 MigrationTargetPolicies (1 skipped)
MigrationTargetPolicy "broken" is skipped: spec.addedNodeSelectorTerm: Required value: must have at least one requirement in matchExpressions or matchFields

other/lone: policy rack-a-to-b (rack In [b])
  cannot explain: no running virt-launcher pod to model the migration target on
)");
  }
}

TEST_CASE("policy explain: namespaceSelector reads the namespace's labels") {
  kube::FakeClient fake;
  Seed(fake);
  fake.Create(kube::kNamespaces, "",
              {{"apiVersion", "v1"},
               {"kind", "Namespace"},
               {"metadata", {{"name", "prod"}, {"labels", {{"team", "x"}}}}}});
  fake.Create(kube::kMigrationTargetPolicies, "", Policy("team-x", R"({
    "priority": 1, "match": {"namespaceSelector": {"matchLabels": {"team": "x"}}},
    "addedNodeSelectorTerm": {"matchExpressions": [{"key": "rack", "operator": "In", "values": ["c"]}]}})"));
  std::ostringstream out, err;
  REQUIRE(RunPolicyExplain("a-0", std::nullopt, "Evacuation", "", fake, {out, err}) == 0);
  CHECK(out.str().find("prod/db-1: policy team-x (rack In [c])") != std::string::npos);
  CHECK(out.str().find("prod/web-1: policy team-x (rack In [c])") != std::string::npos);
}

// A user who may list VMIs only in some namespaces (not cluster-wide, not in "secret").
class NamespacedViewer : public kube::FakeClient {
 public:
  json List(const kube::Resource& r, std::string_view ns, const kube::ListOptions& o) override {
    if (r.resource == kube::kVirtualMachineInstances.resource && (ns.empty() || ns == "secret")) {
      throw kube::KubeError(kube::ErrorKind::kForbidden, "forbidden", 403);
    }
    return FakeClient::List(r, ns, o);
  }
};

TEST_CASE("policy explain: listing VMIs cluster-wide forbidden falls back per namespace") {
  NamespacedViewer fake;
  Seed(fake);
  for (const char* ns : {"prod", "other", "secret"}) {
    fake.Create(kube::kNamespaces, "",
                {{"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", ns}}}});
  }
  StartVmi(fake, "secret", "hidden", "a-0");
  std::ostringstream out, err;
  REQUIRE(RunPolicyExplain("a-0", std::nullopt, "Evacuation", "", fake, {out, err}) == 0);
  CAPTURE(out.str());
  CHECK(err.str() == "note: 1 namespace skipped: you may not list virtualmachineinstances there\n");
  CHECK(out.str().find("prod/web-1: policy rack-a-to-b") != std::string::npos);
  CHECK(out.str().find("prod/db-1: no policy") != std::string::npos);
  CHECK(out.str().find("hidden") == std::string::npos);

  // With -n, no fallback: the namespace's own answer.
  std::ostringstream out2, err2;
  CHECK(RunPolicyExplain("a-0", std::string("secret"), "Evacuation", "", fake, {out2, err2}) == 1);
  CHECK(err2.str().find("forbidden") != std::string::npos);
}

TEST_CASE("policy explain: exit 1 with the error when NODE or the policies cannot be read") {
  kube::FakeClient fake;
  Seed(fake);
  std::ostringstream out, err;
  CHECK(RunPolicyExplain("nope", std::nullopt, "Evacuation", "", fake, {out, err}) == 1);
  CHECK(out.str().empty());
  CHECK(err.str() == "Error from server (NotFound): nodes \"nope\" not found\n");

  fake.FailNext(kube::Verb::kList, 1, kube::ErrorKind::kForbidden,
                "migrationtargetpolicies.migration-target.kubevirt.io");
  std::ostringstream out2, err2;
  CHECK(RunPolicyExplain("a-0", std::nullopt, "Evacuation", "", fake, {out2, err2}) == 1);
  CHECK(out2.str().empty());
  CHECK(err2.str().rfind("Error from server (Forbidden): ", 0) == 0);
}

TEST_CASE("policy explain: no VMI on the node, and no other node") {
  kube::FakeClient fake;
  fake.Create(kube::kNodes, "", Node("solo", "a"));
  std::ostringstream out, err;
  CHECK(RunPolicyExplain("solo", std::nullopt, "Evacuation", "", fake, {out, err}) == 0);
  CHECK(out.str() == "Node solo, origin Evacuation: 0 VMIs, 0 MigrationTargetPolicies\n");
  StartVmi(fake, "ns", "vm", "solo");
  std::ostringstream out2, err2;
  CHECK(RunPolicyExplain("solo", std::nullopt, "Evacuation", "", fake, {out2, err2}) == 0);
  CHECK(out2.str() == R"(Node solo, origin Evacuation: 1 VMI, 0 MigrationTargetPolicies

ns/vm: no policy: the scheduler alone decides
  no node allowed: no other node in the cluster
)");
}

}  // namespace
}  // namespace kmt::cli
