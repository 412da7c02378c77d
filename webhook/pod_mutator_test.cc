// Golden AdmissionReview tables of the target pod mutator: each case is
// testdata/pod/<case>.request.json answered through the shell (ServeAdmission) and compared
// with testdata/pod/<case>.response.json; a returned patch is applied to the pod with an
// independent JSON Patch implementation (nlohmann's) and the result compared with
// testdata/pod/<case>.patched.json.
#include "webhook/pod_mutator.h"

#include <catch2/catch.hpp>
#include <functional>
#include <map>
#include <string>

#include "webhook/shell.h"
#include "webhook/testing/fake_cluster_view.h"
#include "webhook/testing/golden.h"

namespace kmt::webhook {
namespace {

using testing::FakeClusterView;

constexpr const char* kTerm =
    R"({"matchFields":[{"key":"metadata.name","operator":"In","values":["node-2"]}]})";

Json Vmim(const std::string& name, const std::string& uid, const char* term) {
  Json vmim = {{"apiVersion", "kubevirt.io/v1"},
               {"kind", "VirtualMachineInstanceMigration"},
               {"metadata", {{"name", name}, {"namespace", "ns1"}, {"uid", uid}}},
               {"spec", {{"vmiName", "vm1"}}}};
  if (term != nullptr) {
    vmim["metadata"]["annotations"] = {
        {"migration-target.kubevirt.io/added-node-selector-term", term}};
  }
  return vmim;
}

// mig-1 carries a term, mig-plain none, mig-invalid a term that does not validate.
struct World {
  FakeClusterView cluster;
  World() {
    cluster.migrations[{"ns1", "mig-1"}] = Vmim("mig-1", "9b4c3e0a-vmim-0001", kTerm);
    cluster.migrations[{"ns1", "mig-plain"}] = Vmim("mig-plain", "9b4c3e0a-vmim-0002", nullptr);
    cluster.migrations[{"ns1", "mig-invalid"}] = Vmim("mig-invalid", "9b4c3e0a-vmim-0003", "{}");
    // The same name in another namespace must not be found.
    cluster.migrations[{"ns2", "mig-gone"}] = Vmim("mig-gone", "9b4c3e0a-vmim-0001", kTerm);
  }
};

const std::map<std::string, std::function<void(World&)>>& Tweaks() {
  static const auto* tweaks = new std::map<std::string, std::function<void(World&)>>{
      {"target_vmim_unreadable",
       [](World& w) {
         w.cluster.migration_error =
             "Get \"https://10.96.0.1:443/apis/kubevirt.io/v1/namespaces/ns1/"
             "virtualmachineinstancemigrations/mig-1\": context deadline exceeded";
       }},
  };
  return *tweaks;
}

std::string Base64Decode(const std::string& in) {
  static const std::string kAlphabet =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  uint32_t buf = 0;
  int bits = 0;
  for (char c : in) {
    if (c == '=') break;
    auto pos = kAlphabet.find(c);
    REQUIRE(pos != std::string::npos);
    buf = (buf << 6) | static_cast<uint32_t>(pos);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out += static_cast<char>((buf >> bits) & 0xff);
    }
  }
  return out;
}

TEST_CASE("Pod mutator answers every golden AdmissionReview") {
  const auto cases = testing::TestdataCases("pod", ".request.json");
  REQUIRE(cases.size() >= 16);
  const std::string name = GENERATE_COPY(from_range(cases));
  CAPTURE(name);
  World world;
  if (auto it = Tweaks().find(name); it != Tweaks().end()) it->second(world);

  const Json request = testing::ReadTestdataJson("pod/" + name + ".request.json");
  // As the server decodes it: only the members the mutator reads (TargetPodReads).
  ShellAnswer answer = ServeAdmission(
      "application/json", request.dump(),
      [&world](const AdmissionRequest& r) { return MutateTargetPod(r, world.cluster); },
      &TargetPodReads());
  REQUIRE(answer.http_status == 200);
  // The same answer from the whole pod: the list names everything the mutator reads.
  ShellAnswer whole = ServeAdmission(
      "application/json", request.dump(),
      [&world](const AdmissionRequest& r) { return MutateTargetPod(r, world.cluster); });
  CHECK(whole.http_status == answer.http_status);
  CHECK(whole.body == answer.body);
  const Json actual = Json::parse(answer.body);
  CAPTURE(actual.dump(2));
  CHECK(actual == testing::Golden("pod/" + name + ".response.json", actual));
  CHECK(actual["response"]["uid"] == request["request"]["uid"]);

  if (actual["response"].contains("patch")) {
    CHECK(actual["response"]["patchType"] == "JSONPatch");
    const Json patch = Json::parse(Base64Decode(actual["response"]["patch"]));
    const Json patched = request["request"]["object"].patch(patch);
    CAPTURE(patched.dump(2));
    CHECK(patched == testing::Golden("pod/" + name + ".patched.json", patched));
    // Applying the answer to its own result changes nothing more: the gate is there once.
    Json again = Json::parse(request.dump());
    again["request"]["object"] = patched;
    ShellAnswer second = ServeAdmission(
        "application/json", again.dump(),
        [&world](const AdmissionRequest& r) { return MutateTargetPod(r, world.cluster); });
    CHECK_FALSE(Json::parse(second.body)["response"].contains("patch"));
  }
}

}  // namespace
}  // namespace kmt::webhook

namespace kmt::webhook {
namespace {

AdmissionRequest TargetPodCreate(Json spec_member) {
  AdmissionRequest req;
  req.uid = "u";
  req.operation = "CREATE";
  req.ns = "ns1";
  req.resource = {"", "v1", "pods"};
  req.object = {
      {"metadata",
       {{"labels",
         {{"kubevirt.io", "virt-launcher"}, {"kubevirt.io/migrationJobUID", "9b4c3e0a-vmim-0001"}}},
        {"annotations", {{"kubevirt.io/migrationJobName", "mig-1"}}}}}};
  if (!spec_member.is_discarded()) req.object["spec"] = std::move(spec_member);
  return req;
}

TEST_CASE("A target pod without a spec (or a null one) gets a patch that applies") {
  World world;
  for (const Json& spec : {Json(Json::value_t::discarded), Json(nullptr)}) {
    CAPTURE(spec.dump());
    const AdmissionRequest req = TargetPodCreate(spec);
    const AdmissionResponse r = MutateTargetPod(req, world.cluster);
    CHECK(r.allowed);
    REQUIRE(r.patch.has_value());
    CHECK(*r.patch == Json::parse(R"([{"op":"add","path":"/spec","value":{"schedulingGates":[
                                      {"name":"migration-target.kubevirt.io/added-node-selector-term"}]}}])"));
    const Json patched = req.object.patch(*r.patch);
    CHECK(patched["spec"] == Json::parse(R"({"schedulingGates":[
        {"name":"migration-target.kubevirt.io/added-node-selector-term"}]})"));
  }
}

TEST_CASE("A target pod whose spec is not an object is refused, not answered with a patch") {
  World world;
  for (const Json& spec : {Json(5), Json("x"), Json::array()}) {
    CAPTURE(spec.dump());
    const AdmissionResponse r = MutateTargetPod(TargetPodCreate(spec), world.cluster);
    CHECK_FALSE(r.allowed);
    CHECK_FALSE(r.patch.has_value());
    REQUIRE(r.status.has_value());
    CHECK(r.status->code == 400);
    CHECK(r.status->message ==
          "migration target pod of VirtualMachineInstanceMigration ns1/mig-1 has a spec that is "
          "not an object: cannot add the scheduling gate "
          "migration-target.kubevirt.io/added-node-selector-term");
  }
}

}  // namespace
}  // namespace kmt::webhook
