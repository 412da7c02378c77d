// The policy attacher (mutating, VMIM CREATE of evacuations) and the validator's provenance
// check of what it attached, against an in-memory cluster.
#include "webhook/policy_attacher.h"

#include <catch2/catch.hpp>
#include <string>

#include "api/names.h"
#include "webhook/testing/fake_access_reviewer.h"
#include "webhook/testing/fake_cluster_view.h"
#include "webhook/vmim_validator.h"

namespace kmt::webhook {
namespace {

using testing::FakeAccessReviewer;
using testing::FakeClusterView;

constexpr const char* kController = "system:serviceaccount:kubevirt:kubevirt-controller";
const std::string kTermA =
    R"({"matchExpressions":[{"key":"rack","operator":"In","values":["b"]}]})";

Json Policy(const std::string& name, const std::string& spec) {
  return {{"apiVersion", "migration-target.kubevirt.io/v1alpha1"},
          {"kind", "MigrationTargetPolicy"},
          {"metadata", {{"name", name}}},
          {"spec", Json::parse(spec)}};
}

struct World {
  FakeClusterView cluster;
  FakeAccessReviewer access;
  World() {
    cluster.AddNode("a-1", {{"rack", "a"}, {"kubernetes.io/hostname", "a-1"}});
    cluster.AddNode("b-1", {{"rack", "b"}, {"kubernetes.io/hostname", "b-1"}});
    cluster.vmis[{"ns1", "vm1"}] =
        Json::parse(R"({"metadata": {"name": "vm1", "labels": {"app": "web"}}})");
    cluster.vmi_nodes[{"ns1", "vm1"}] = "a-1";
    cluster.namespaces["ns1"] =
        Json::parse(R"({"metadata": {"name": "ns1", "labels": {"team": "x"}}})");
    cluster.policies.push_back(
        Policy("rack-a-to-b", R"({"match": {"sourceNodeSelector": {"matchLabels": {"rack": "a"}}},
        "addedNodeSelectorTerm": {"matchExpressions": [{"key": "rack", "operator": "In", "values": ["b"]}]}})"));
  }
};

AdmissionRequest Create(const std::string& user, Json annotations) {
  AdmissionRequest r;
  r.uid = "u1";
  r.operation = "CREATE";
  r.resource = {"kubevirt.io", "v1", "virtualmachineinstancemigrations"};
  r.kind = {"kubevirt.io", "v1", "VirtualMachineInstanceMigration"};
  r.ns = "ns1";
  r.user_info.username = user;
  r.object = {{"apiVersion", "kubevirt.io/v1"},
              {"kind", "VirtualMachineInstanceMigration"},
              {"metadata", {{"generateName", "kubevirt-evacuation-"}, {"namespace", "ns1"}}},
              {"spec", {{"vmiName", "vm1"}}}};
  if (!annotations.is_null()) r.object["metadata"]["annotations"] = std::move(annotations);
  return r;
}

Json Evacuation(const std::string& node) {
  return {{std::string(api::kAnnotationEvacuationMigration), node}};
}

// Applies a JSON Patch of "add" operations on /metadata/annotations[/key].
Json Apply(Json obj, const Json& patch) {
  for (const Json& op : patch) {
    REQUIRE(op["op"] == "add");
    const std::string path = op["path"];
    if (path == "/metadata/annotations") {
      obj["metadata"]["annotations"] = op["value"];
      continue;
    }
    std::string key = path.substr(std::string("/metadata/annotations/").size());
    for (size_t i; (i = key.find("~1")) != std::string::npos;) key.replace(i, 2, "/");
    obj["metadata"]["annotations"][key] = op["value"];
  }
  return obj;
}

TEST_CASE("An evacuation by virt-controller gets the winning policy's term and name") {
  World w;
  AdmissionRequest req = Create(kController, Evacuation("a-1"));
  AdmissionResponse r = AttachPolicy(req, w.cluster, {});
  REQUIRE(r.allowed);
  REQUIRE(r.patch);
  const Json after = Apply(req.object, *r.patch);
  CHECK(after["metadata"]["annotations"][std::string(api::kAddedTermAnnotation)] == kTermA);
  CHECK(after["metadata"]["annotations"][std::string(api::kPolicyAnnotation)] == "rack-a-to-b");
  CHECK(after["metadata"]["annotations"][std::string(api::kAnnotationEvacuationMigration)] ==
        "a-1");

  SECTION("and the validator admits exactly that, without asking for `use`") {
    req.object = after;
    VmimValidatorDeps deps{w.access, w.cluster};
    AdmissionResponse v = ValidateVmim(req, deps);
    CHECK(v.allowed);
    CHECK(w.access.calls == 0);
  }
}

TEST_CASE("No patch: not virt-controller, not an evacuation, already a term, no match") {
  World w;
  CHECK_FALSE(AttachPolicy(Create("kmt-admin", Evacuation("a-1")), w.cluster, {}).patch);
  CHECK_FALSE(AttachPolicy(Create(kController, nullptr), w.cluster, {}).patch);
  Json both = Evacuation("a-1");
  both[std::string(api::kAddedTermAnnotation)] = kTermA;
  CHECK_FALSE(AttachPolicy(Create(kController, both), w.cluster, {}).patch);
  AdmissionResponse other_rack =
      AttachPolicy(Create(kController, Evacuation("b-1")), w.cluster, {});
  CHECK(other_rack.allowed);
  CHECK_FALSE(other_rack.patch);
  // Another user name for virt-controller (KubeVirt installed elsewhere).
  CHECK(AttachPolicy(Create("system:serviceaccount:kv:kubevirt-controller", Evacuation("a-1")),
                     w.cluster, {"system:serviceaccount:kv:kubevirt-controller"})
            .patch);
}

TEST_CASE("Descheduler origin, namespace and VMI selectors, precedence") {
  World w;
  w.cluster.policies.push_back(Policy("descheduler-web", R"({"priority": 10,
      "match": {"origin": "Descheduler", "vmiSelector": {"matchLabels": {"app": "web"}},
                "namespaceSelector": {"matchLabels": {"team": "x"}}},
      "addedNodeSelectorTerm": {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["b-1"]}]}})"));
  AdmissionRequest req = Create(kController, Evacuation("a-1"));
  CHECK(Apply(req.object,
              *AttachPolicy(req, w.cluster, {})
                   .patch)["metadata"]["annotations"][std::string(api::kPolicyAnnotation)] ==
        "rack-a-to-b");
  w.cluster.vmis[{"ns1", "vm1"}]["metadata"]["annotations"] = {
      {std::string(api::kAnnotationEvictionSource), "descheduler"}};
  CHECK(Apply(req.object,
              *AttachPolicy(req, w.cluster, {})
                   .patch)["metadata"]["annotations"][std::string(api::kPolicyAnnotation)] ==
        "descheduler-web");
  w.cluster.namespaces["ns1"]["metadata"]["labels"] = {{"team", "y"}};
  CHECK(Apply(req.object,
              *AttachPolicy(req, w.cluster, {})
                   .patch)["metadata"]["annotations"][std::string(api::kPolicyAnnotation)] ==
        "rack-a-to-b");
}

TEST_CASE(
    "A read that fails denies (500, fail closed); an invalid policy is skipped with a warning") {
  World w;
  w.cluster.policies_error = "the server is unavailable";
  AdmissionResponse r = AttachPolicy(Create(kController, Evacuation("a-1")), w.cluster, {});
  CHECK_FALSE(r.allowed);
  REQUIRE(r.status);
  CHECK(r.status->code == 500);
  CHECK(r.status->message ==
        "could not choose a MigrationTargetPolicy for the evacuation of VMI \"vm1\" from node "
        "\"a-1\": the server is unavailable");

  World v;
  v.cluster.policies.insert(v.cluster.policies.begin(),
                            Policy("broken", R"({"addedNodeSelectorTerm": {}})"));
  AdmissionResponse s = AttachPolicy(Create(kController, Evacuation("a-1")), v.cluster, {});
  CHECK(s.allowed);
  CHECK(s.patch);
  REQUIRE(s.warnings.size() == 1);
  CHECK(s.warnings[0].rfind(
            "MigrationTargetPolicy \"broken\" is skipped: spec.addedNodeSelectorTerm", 0) == 0);
}

TEST_CASE("Forgery of the policy annotation is denied, naming what failed") {
  World w;
  Json forged = Evacuation("a-1");
  forged[std::string(api::kAddedTermAnnotation)] = kTermA;
  forged[std::string(api::kPolicyAnnotation)] = "rack-a-to-b";
  VmimValidatorDeps deps{w.access, w.cluster};
  const std::string field = "metadata.annotations[migration-target.kubevirt.io/policy]";

  auto denial = [&](const AdmissionRequest& req) {
    AdmissionResponse r = ValidateVmim(req, deps);
    CHECK_FALSE(r.allowed);
    REQUIRE(r.status);
    CHECK(r.status->code == 403);
    REQUIRE(r.status->causes.size() == 1);
    CHECK(r.status->causes[0].field == field);
    return r.status->message;
  };
  // A VM owner copying what the operator writes.
  CHECK(denial(Create("vm-owner", forged)) ==
        field +
            " is set only by the operator's webhook: only KubeVirt's virt-controller "
            "(\"system:serviceaccount:kubevirt:kubevirt-controller\") creates VMIMs the "
            "operator attaches a policy to; user \"vm-owner\" may not");
  // Even an admin: a term of one's own goes in the term annotation alone.
  CHECK(denial(Create("kmt-admin", forged)).find("user \"kmt-admin\" may not") !=
        std::string::npos);
  // virt-controller with another term than the policy's.
  Json other = forged;
  other[std::string(api::kAddedTermAnnotation)] =
      R"({"matchFields":[{"key":"metadata.name","operator":"In","values":["a-1"]}]})";
  CHECK(denial(Create(kController, other))
            .find("the term is not MigrationTargetPolicy \"rack-a-to-b\"'s") != std::string::npos);
  // A policy that does not exist; one without the evacuation annotation; one without a term.
  Json ghost = forged;
  ghost[std::string(api::kPolicyAnnotation)] = "ghost";
  CHECK(denial(Create(kController, ghost)).find("MigrationTargetPolicy \"ghost\" does not exist") !=
        std::string::npos);
  Json plain = forged;
  plain.erase(std::string(api::kAnnotationEvacuationMigration));
  CHECK(denial(Create(kController, plain)).find("only to evacuation migrations") !=
        std::string::npos);
  Json no_term = forged;
  no_term.erase(std::string(api::kAddedTermAnnotation));
  CHECK(denial(Create(kController, no_term)).find("comes with the policy's term") !=
        std::string::npos);
  CHECK(w.access.calls == 0);

  // The policy unreadable: fail closed.
  w.cluster.policies_error = "the server is unavailable";
  AdmissionResponse r = ValidateVmim(Create(kController, forged), deps);
  CHECK_FALSE(r.allowed);
  CHECK(r.status->code == 500);
}

TEST_CASE("The policy annotation cannot change after creation") {
  World w;
  VmimValidatorDeps deps{w.access, w.cluster};
  AdmissionRequest up = Create(kController, Evacuation("a-1"));
  up.operation = "UPDATE";
  up.old_object = up.object;
  up.object["metadata"]["annotations"][std::string(api::kPolicyAnnotation)] = "rack-a-to-b";
  AdmissionResponse r = ValidateVmim(up, deps);
  CHECK_FALSE(r.allowed);
  CHECK(r.status->code == 422);
  CHECK(r.status->message ==
        "metadata.annotations[migration-target.kubevirt.io/policy]: Forbidden: may not be added "
        "after the VirtualMachineInstanceMigration is created");
}

TEST_CASE("A policy's maxInboundPerNode goes with its term, and only the policy's value passes") {
  World w;
  w.cluster.policies[0]["spec"]["maxInboundPerNode"] = 2;
  const std::string cap_key(api::kMaxInboundAnnotation);
  AdmissionRequest req = Create(kController, Evacuation("a-1"));
  AdmissionResponse r = AttachPolicy(req, w.cluster, {});
  REQUIRE(r.patch);
  const Json after = Apply(req.object, *r.patch);
  CHECK(after["metadata"]["annotations"][cap_key] == "2");
  VmimValidatorDeps deps{w.access, w.cluster};
  req.object = after;
  CHECK(ValidateVmim(req, deps).allowed);

  auto denied = [&](const Json& annotations) {
    AdmissionResponse v = ValidateVmim(Create(kController, annotations), deps);
    CHECK_FALSE(v.allowed);
    REQUIRE(v.status);
    CHECK(v.status->code == 403);
    return v.status->message;
  };
  Json looser = after["metadata"]["annotations"];
  looser[cap_key] = "50";
  CHECK(denied(looser).find("migration-target.kubevirt.io/max-inbound-per-node is not "
                            "MigrationTargetPolicy \"rack-a-to-b\"'s maxInboundPerNode (2)") !=
        std::string::npos);
  Json dropped = after["metadata"]["annotations"];
  dropped.erase(cap_key);
  CHECK(denied(dropped).find("is not MigrationTargetPolicy") != std::string::npos);
  // The policy without a limit: a limit on the VMIM is not its.
  w.cluster.policies[0]["spec"].erase("maxInboundPerNode");
  CHECK(denied(after["metadata"]["annotations"]).find("sets no maxInboundPerNode") !=
        std::string::npos);
  // Without a policy, anyone's limit is refused (it is the operator's to attach).
  Json alone;
  alone[cap_key] = "1";
  AdmissionResponse v = ValidateVmim(Create("kmt-admin", alone), deps);
  CHECK_FALSE(v.allowed);
  REQUIRE(v.status);
  REQUIRE(v.status->causes.size() == 1);
  CHECK(v.status->causes[0].field ==
        "metadata.annotations[migration-target.kubevirt.io/max-inbound-per-node]");
  CHECK(w.access.calls == 0);

  SECTION("and it cannot change after creation") {
    AdmissionRequest up = Create(kController, after["metadata"]["annotations"]);
    up.operation = "UPDATE";
    up.old_object = up.object;
    up.object["metadata"]["annotations"][cap_key] = "9";
    AdmissionResponse u = ValidateVmim(up, deps);
    CHECK_FALSE(u.allowed);
    CHECK(u.status->message ==
          "metadata.annotations[migration-target.kubevirt.io/max-inbound-per-node]: Forbidden: "
          "may not be changed after the VirtualMachineInstanceMigration is created");
  }
}

TEST_CASE("Policies are validated on CREATE and UPDATE with every cause") {
  AdmissionRequest r;
  r.uid = "p";
  r.operation = "CREATE";
  r.resource = {"migration-target.kubevirt.io", "v1alpha1", "migrationtargetpolicies"};
  r.object = Policy(
      "p",
      R"({"match": {"origin": "Drain"}, "addedNodeSelectorTerm": {"matchExpressions": [{"key": "a", "operator": "In"}]}})");
  AdmissionResponse bad = ValidatePolicy(r);
  CHECK_FALSE(bad.allowed);
  REQUIRE(bad.status);
  CHECK(bad.status->code == 422);
  REQUIRE(bad.status->causes.size() == 2);
  CHECK(bad.status->causes[0].field == "spec.match.origin");
  CHECK(bad.status->causes[1].field == "spec.addedNodeSelectorTerm.matchExpressions[0].values");
  r.object = Policy(
      "p",
      R"({"addedNodeSelectorTerm": {"matchExpressions": [{"key": "a", "operator": "Exists"}]}})");
  CHECK(ValidatePolicy(r).allowed);
  r.operation = "DELETE";
  r.object = nullptr;
  CHECK(ValidatePolicy(r).allowed);
}

}  // namespace
}  // namespace kmt::webhook
