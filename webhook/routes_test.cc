// The whole webhook as the operator embeds it: AdmissionServer over real TLS on 127.0.0.1,
// the real SubjectAccessReviewer and KubeClusterView over kube::FakeClient (which plays the
// API server: stored VMIMs, and an RBAC-like answer to SubjectAccessReviews).
#include "webhook/routes.h"

#include <httplib.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <memory>
#include <set>
#include <string>
#include <utility>

#include "http/testing/test_tls.h"
#include "kube/base64.h"
#include "kube/fake_client.h"
#include "kube/resources.h"
#include "webhook/access_review.h"
#include "webhook/kube_cluster_view.h"
#include "webhook/vmi_node_cache.h"

namespace kmt::webhook {
namespace {

constexpr const char* kAnnotation = "migration-target.kubevirt.io/added-node-selector-term";
constexpr const char* kTerm =
    R"({"matchFields":[{"key":"metadata.name","operator":"In","values":["node-2"]}]})";

struct Cluster {
  kube::FakeClient api;
  std::set<std::pair<std::string, std::string>> use_granted;  // (user, namespace)

  Cluster() {
    api.SetCreateHandler(kube::kSubjectAccessReviews, [this](const Json& sar) {
      const Json& spec = sar["spec"];
      const Json& attrs = spec["resourceAttributes"];
      bool allowed = attrs["verb"] == "use" && attrs["group"] == "migration-target.kubevirt.io" &&
                     attrs["resource"] == "addednodeselectorterms" &&
                     use_granted.count({spec["user"].get<std::string>(),
                                        attrs["namespace"].get<std::string>()}) > 0;
      Json answer = sar;
      answer["status"] = {{"allowed", allowed}};
      return answer;
    });
    for (const char* name : {"node-1", "node-2"}) {
      api.Create(kube::kNodes, "",
                 {{"apiVersion", "v1"}, {"kind", "Node"}, {"metadata", {{"name", name}}}});
    }
  }

  Json CreateVmim(const std::string& name, bool with_term) {
    Json vmim = {{"apiVersion", "kubevirt.io/v1"},
                 {"kind", "VirtualMachineInstanceMigration"},
                 {"metadata", {{"name", name}, {"namespace", "ns1"}}},
                 {"spec", {{"vmiName", "vm1"}}}};
    if (with_term) vmim["metadata"]["annotations"] = {{kAnnotation, kTerm}};
    return api.Create(kube::kVirtualMachineInstanceMigrations, "ns1", vmim);
  }
};

std::string VmimReview(const std::string& uid, const std::string& user) {
  Json vmim = {{"apiVersion", "kubevirt.io/v1"},
               {"kind", "VirtualMachineInstanceMigration"},
               {"metadata",
                {{"name", "mig-1"}, {"namespace", "ns1"}, {"annotations", {{kAnnotation, kTerm}}}}},
               {"spec", {{"vmiName", "vm1"}}}};
  return Json{{"apiVersion", "admission.k8s.io/v1"},
              {"kind", "AdmissionReview"},
              {"request",
               {{"uid", uid},
                {"resource",
                 {{"group", "kubevirt.io"},
                  {"version", "v1"},
                  {"resource", "virtualmachineinstancemigrations"}}},
                {"namespace", "ns1"},
                {"operation", "CREATE"},
                {"userInfo", {{"username", user}, {"groups", {"system:authenticated"}}}},
                {"object", vmim}}}}
      .dump();
}

std::string PodReview(const std::string& uid, const Json& vmim) {
  Json pod = {{"apiVersion", "v1"},
              {"kind", "Pod"},
              {"metadata",
               {{"generateName", "virt-launcher-vm1-"},
                {"namespace", "ns1"},
                {"labels",
                 {{"kubevirt.io", "virt-launcher"},
                  {"kubevirt.io/migrationJobUID", vmim["metadata"]["uid"]}}},
                {"annotations", {{"kubevirt.io/migrationJobName", vmim["metadata"]["name"]}}}}},
              {"spec", {{"containers", Json::array({{{"name", "compute"}}})}}}};
  return Json{{"apiVersion", "admission.k8s.io/v1"},
              {"kind", "AdmissionReview"},
              {"request",
               {{"uid", uid},
                {"resource", {{"group", ""}, {"version", "v1"}, {"resource", "pods"}}},
                {"namespace", "ns1"},
                {"operation", "CREATE"},
                {"userInfo", {{"username", "system:serviceaccount:kubevirt:kubevirt-controller"}}},
                {"object", pod}}}}
      .dump();
}

// A started server over `routes`, its certificate and a client that trusts it.
struct Served {
  http::testing::TestAuthority ca;
  std::string dir = http::testing::MakeTempDir();
  std::unique_ptr<AdmissionServer> server;
  std::unique_ptr<httplib::SSLClient> cli;

  explicit Served(std::vector<Route> routes) {
    auto pair = ca.Issue(7);
    http::testing::WriteFileAtomically(dir + "/tls.key", pair.key);
    http::testing::WriteFileAtomically(dir + "/tls.crt", pair.cert);
    http::testing::WriteFileAtomically(dir + "/ca.crt", ca.ca_pem());
    ServerOptions opts;
    opts.address = "127.0.0.1";
    opts.port = 0;
    opts.cert_file = dir + "/tls.crt";
    opts.key_file = dir + "/tls.key";
    opts.log = [](const ServerLogEntry&) {};
    server = std::make_unique<AdmissionServer>(opts, std::move(routes));
    server->Start();
    cli = std::make_unique<httplib::SSLClient>("127.0.0.1", server->port());
    cli->set_ca_cert_path((dir + "/ca.crt").c_str());
    cli->enable_server_certificate_verification(true);
  }
  ~Served() { server->Stop(); }

  Json Post(const char* path, const std::string& body) {
    auto res = cli->Post(path, body, "application/json");
    REQUIRE(res);
    REQUIRE(res->status == 200);
    return Json::parse(res->body)["response"];
  }
};

TEST_CASE("With the operator's caches, a term matching one node is decided on the I/O thread") {
  Cluster cluster;
  cluster.use_granted.insert({"admin", "ns1"});
  Json vmi = cluster.api.Create(kube::kVirtualMachineInstances, "ns1",
                                {{"apiVersion", "kubevirt.io/v1"},
                                 {"kind", "VirtualMachineInstance"},
                                 {"metadata", {{"name", "vm1"}, {"namespace", "ns1"}}}});
  vmi["status"] = {{"nodeName", "node-2"}, {"phase", "Running"}};
  cluster.api.Update(kube::kVirtualMachineInstances, "ns1", vmi, "status");
  // As the operator wires them: remembered SubjectAccessReview answers, the controller's node
  // cache (here the two nodes as it would hold them), the webhook's VMI cache.
  SubjectAccessReviewer reviewer(cluster.api);
  CachingAccessReviewer access(reviewer);
  KubeClusterView view(cluster.api);
  std::vector<std::shared_ptr<const api::NodeInfo>> nodes;
  for (const char* name : {"node-1", "node-2"}) {
    api::NodeInfo n;
    n.name = name;
    nodes.push_back(std::make_shared<const api::NodeInfo>(std::move(n)));
  }
  NodeList node_list =
      std::make_shared<const std::vector<std::shared_ptr<const api::NodeInfo>>>(nodes);
  view.SetCachedNodes([node_list] { return node_list; });
  VmiNodeCache vmis(cluster.api);
  std::atomic<bool> vmis_wired{false};  // the source answers nothing until then
  view.SetCachedVmiNodes([&](std::string_view ns, std::string_view name) {
    return vmis_wired ? vmis.NodeName(ns, name) : std::nullopt;
  });
  Served served(AdmissionRoutes(access, view));
  const std::string same_node =
      "the added node selector term matches only node \"node-2\", where VMI \"vm1\" runs now; "
      "the migration cannot be scheduled";

  // The first review asks for the SubjectAccessReview: on a worker.
  Json first = served.Post("/validate-vmim", VmimReview("r1", "admin"));
  CHECK(first["allowed"] == true);
  CHECK(first["warnings"] == Json::array({same_node}));
  CHECK(served.server->deferred_to_workers() == 1);
  CHECK(served.server->answered_inline() == 0);
  // Its answer remembered, but the VMI read with a GET: still on a worker.
  CHECK(served.Post("/validate-vmim", VmimReview("r2", "admin"))["warnings"] ==
        Json::array({same_node}));
  CHECK(served.server->deferred_to_workers() == 2);
  CHECK(served.server->answered_inline() == 0);

  vmis.Start();
  REQUIRE(vmis.WaitForSync(std::chrono::seconds(10)));
  vmis_wired = true;
  cluster.api.ClearCalls();
  Json inline_answer = served.Post("/validate-vmim", VmimReview("r3", "admin"));
  CHECK(inline_answer["allowed"] == true);
  CHECK(inline_answer["warnings"] == Json::array({same_node}));  // the same answer
  CHECK(served.server->answered_inline() == 1);
  CHECK(served.server->deferred_to_workers() == 2);
  // No request on the review's behalf (the VMI cache's own watch aside).
  int review_calls = 0;
  for (const kube::FakeCall& c : cluster.api.Calls()) review_calls += c.verb != kube::Verb::kWatch;
  CHECK(review_calls == 0);
  vmis.Stop();
}

TEST_CASE("The embedded webhook admits admins, denies VM owners and gates target pods") {
  Cluster cluster;
  SubjectAccessReviewer access(cluster.api);
  KubeClusterView view(cluster.api);

  Served served(AdmissionRoutes(access, view));
  REQUIRE(served.server->Ready());
  auto post = [&](const char* path, const std::string& body) { return served.Post(path, body); };

  cluster.use_granted.insert({"admin", "ns1"});
  Json admin = post("/validate-vmim", VmimReview("r1", "admin"));
  CHECK(admin == Json::parse(R"({"uid": "r1", "allowed": true})"));

  Json owner = post("/validate-vmim", VmimReview("r2", "vm-owner"));
  CHECK(owner["allowed"] == false);
  CHECK(owner["status"]["code"] == 403);
  CHECK(owner["status"]["message"] ==
        "user \"vm-owner\" may not set "
        "metadata.annotations[migration-target.kubevirt.io/added-node-selector-term]: requires "
        "\"use\" on addednodeselectorterms.migration-target.kubevirt.io in namespace \"ns1\"");

  cluster.use_granted.insert({"vm-owner", "ns1"});  // a RoleBinding granting `use`
  CHECK(post("/validate-vmim", VmimReview("r3", "vm-owner"))["allowed"] == true);

  Json with_term = cluster.CreateVmim("mig-1", true);
  Json gated = post("/mutate-pod", PodReview("p1", with_term));
  CHECK(gated["allowed"] == true);
  CHECK(gated["patchType"] == "JSONPatch");
  CHECK(gated["patch"] ==
        kube::EncodeBase64(R"([{"op":"add","path":"/spec/schedulingGates","value":[{"name":)"
                           R"("migration-target.kubevirt.io/added-node-selector-term"}]}])"));

  Json plain = cluster.CreateVmim("mig-plain", false);
  CHECK(post("/mutate-pod", PodReview("p2", plain)) ==
        Json::parse(R"({"uid": "p2", "allowed": true})"));

  // The migration is gone by the time its pod arrives: denied, not let through.
  cluster.api.Delete(kube::kVirtualMachineInstanceMigrations, "ns1", "mig-1");
  Json gone = post("/mutate-pod", PodReview("p3", with_term));
  CHECK(gone["allowed"] == false);
  CHECK(gone["status"]["code"] == 404);

  // The API server is unavailable: fail closed on both routes.
  cluster.api.FailNext(kube::Verb::kCreate, 1, kube::ErrorKind::kUnavailable);
  Json no_sar = post("/validate-vmim", VmimReview("r4", "admin"));
  CHECK(no_sar["allowed"] == false);
  CHECK(no_sar["status"]["code"] == 500);
  cluster.api.FailNext(kube::Verb::kGet, 1, kube::ErrorKind::kUnavailable);
  Json no_vmim = post("/mutate-pod", PodReview("p4", plain));
  CHECK(no_vmim["allowed"] == false);
  CHECK(no_vmim["status"]["code"] == 500);
}

}  // namespace
}  // namespace kmt::webhook
