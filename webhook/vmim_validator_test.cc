// Golden AdmissionReview tables of the VMIM validator: each case is
// testdata/vmim/<case>.request.json answered through the shell (ServeAdmission) and
// compared with testdata/vmim/<case>.response.json.
#include "webhook/vmim_validator.h"

#include <catch2/catch.hpp>
#include <functional>
#include <map>
#include <string>

#include "webhook/shell.h"
#include "webhook/testing/fake_access_reviewer.h"
#include "webhook/testing/fake_cluster_view.h"
#include "webhook/testing/golden.h"

namespace kmt::webhook {
namespace {

using testing::FakeAccessReviewer;
using testing::FakeClusterView;

// The cluster every case starts from: three nodes in two zones, VMI vm1 running on node-1,
// the ops-admins group granted `use` cluster-wide and granted-owner only in ns1.
struct World {
  FakeAccessReviewer access;
  FakeClusterView cluster;
  VmimPolicy policy;

  World() {
    cluster.AddNode("node-1",
                    {{"topology.kubernetes.io/zone", "a"}, {"kubernetes.io/hostname", "node-1"}});
    cluster.AddNode("node-2",
                    {{"topology.kubernetes.io/zone", "b"}, {"kubernetes.io/hostname", "node-2"}});
    cluster.AddNode("node-3",
                    {{"topology.kubernetes.io/zone", "b"}, {"kubernetes.io/hostname", "node-3"}});
    cluster.vmi_nodes[{"ns1", "vm1"}] = "node-1";
    access.Grant("group:ops-admins", "", "use", "migration-target.kubevirt.io",
                 "addednodeselectorterms");
    access.Grant("user:granted-owner", "ns1", "use", "migration-target.kubevirt.io",
                 "addednodeselectorterms");
    // A grant elsewhere or of another verb is no grant.
    access.Grant("user:vm-owner", "other-ns", "use", "migration-target.kubevirt.io",
                 "addednodeselectorterms");
    access.Grant("user:vm-owner", "ns1", "get", "migration-target.kubevirt.io",
                 "addednodeselectorterms");
  }
};

// Cases that need more than the default world.
const std::map<std::string, std::function<void(World&)>>& Tweaks() {
  static const auto* tweaks = new std::map<std::string, std::function<void(World&)>>{
      {"create_term_review_fails",
       [](World& w) {
         w.access.error =
             "Post \"https://10.96.0.1:443/apis/authorization.k8s.io/v1/subjectaccessreviews\": "
             "dial tcp 10.96.0.1:443: connect: connection refused";
       }},
      {"create_term_denied_with_reason",
       [](World& w) { w.access.deny_reason = "denied by policy webhook"; }},
      {"warn_nodes_unreadable",
       [](World& w) {
         w.cluster.nodes_error =
             "nodes is forbidden: User \"system:serviceaccount:kmt:kmt\" cannot list resource "
             "\"nodes\"";
       }},
      {"warn_vmi_unreadable", [](World& w) { w.cluster.vmi_error = "the server is unavailable"; }},
      {"kubevirt_selector_check_off_by_owner",
       [](World& w) { w.policy.check_kubevirt_added_node_selector = false; }},
      {"kubevirt_selector_by_virt_api_trusted",
       [](World& w) { w.policy.trust_virt_api_added_node_selector = true; }},
      {"term_by_virt_api_trusted_denied",
       [](World& w) { w.policy.trust_virt_api_added_node_selector = true; }},
      {"kubevirt_selector_by_other_service_account_trust_on_denied",
       [](World& w) { w.policy.trust_virt_api_added_node_selector = true; }},
  };
  return *tweaks;
}

TEST_CASE("VMIM validator answers every golden AdmissionReview") {
  const auto cases = testing::TestdataCases("vmim", ".request.json");
  REQUIRE(cases.size() >= 50);
  const std::string name = GENERATE_COPY(from_range(cases));
  CAPTURE(name);
  World world;
  if (auto it = Tweaks().find(name); it != Tweaks().end()) it->second(world);
  VmimValidatorDeps deps{world.access, world.cluster, world.policy};

  const Json request = testing::ReadTestdataJson("vmim/" + name + ".request.json");
  ShellAnswer answer =
      ServeAdmission("application/json", request.dump(),
                     [&deps](const AdmissionRequest& r) { return ValidateVmim(r, deps); });
  REQUIRE(answer.http_status == 200);
  const Json actual = Json::parse(answer.body);
  const Json golden = testing::Golden("vmim/" + name + ".response.json", actual);
  CAPTURE(actual.dump(2));
  CHECK(actual == golden);
  // Every answer echoes the request's uid.
  CHECK(actual["response"]["uid"] == request["request"]["uid"]);
}

TEST_CASE("Every tweak names an existing case") {
  const auto cases = testing::TestdataCases("vmim", ".request.json");
  for (const auto& [name, tweak] : Tweaks()) {
    CAPTURE(name);
    CHECK(std::ranges::find(cases, name) != cases.end());
  }
}

TEST_CASE("Denials name the user, the field and the missing permission exactly") {
  CHECK(PermissionMessage("vm-owner",
                          "metadata.annotations[migration-target.kubevirt.io/"
                          "added-node-selector-term]",
                          "ns") ==
        "user \"vm-owner\" may not set "
        "metadata.annotations[migration-target.kubevirt.io/added-node-selector-term]: requires "
        "\"use\" on addednodeselectorterms.migration-target.kubevirt.io in namespace \"ns\"");

  World world;
  VmimValidatorDeps deps{world.access, world.cluster};
  AdmissionRequest req;
  req.uid = "u";
  req.operation = "CREATE";
  req.ns = "ns1";
  req.resource = {"kubevirt.io", "v1", "virtualmachineinstancemigrations"};
  req.user_info.username = "vm-owner";
  req.object = Json::parse(R"({"metadata": {"annotations": {
      "migration-target.kubevirt.io/added-node-selector-term":
      "{\"matchFields\":[{\"key\":\"metadata.name\",\"operator\":\"In\",\"values\":[\"node-2\"]}]}"
  }}})");
  AdmissionResponse r = ValidateVmim(req, deps);
  CHECK_FALSE(r.allowed);
  REQUIRE(r.status.has_value());
  CHECK(r.status->code == 403);
  CHECK(r.status->message ==
        "user \"vm-owner\" may not set "
        "metadata.annotations[migration-target.kubevirt.io/added-node-selector-term]: requires "
        "\"use\" on addednodeselectorterms.migration-target.kubevirt.io in namespace \"ns1\"");

  // The same user, once granted in the namespace, is admitted.
  world.access.Grant("user:vm-owner", "ns1", "use", "migration-target.kubevirt.io",
                     "addednodeselectorterms");
  CHECK(ValidateVmim(req, deps).allowed);
}

}  // namespace
}  // namespace kmt::webhook
