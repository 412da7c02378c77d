// The informers build only what their projections read (issue 41): for every object the
// projections' tests use, the projection of the object as the informer parses it (its
// projection's reads and the informer's own, managedFields and surplus labels left out) equals,
// field for field, the projection of the whole object (Json::parse: the oracle), and the fakes
// trim the object to the same bytes.
#include <algorithm>
#include <catch2/catch.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "api/names.h"
#include "api/projections.h"
#include "base/json.h"
#include "base/json_filter.h"
#include "base/testing/files.h"
#include "controller/informer_view.h"
#include "controller/testing/objects.h"
#include "kube/informer.h"
#include "kube/managed_fields.h"

namespace kmt::controller {
namespace {

using json = nlohmann::json;
using Node = base::ObjectReads::Node;

// What an API server adds to what it lists, and what no projection reads.
json Served(json o) {
  if (!o.is_object()) return o;
  json& meta = o["metadata"];
  if (!meta.is_object()) return o;
  meta["managedFields"] = json::array(
      {{{"manager", "kubelet"}, {"fieldsV1", {{"f:status", {{"f:phase", json::object()}}}}}}});
  if (!meta.contains("annotations") || meta["annotations"].is_object()) {
    meta["annotations"]["kubectl.kubernetes.io/last-applied-configuration"] = o.dump();
  }
  meta["generation"] = 3;
  if (o.value("kind", "") == "Node") {
    o["status"]["images"] =
        json::array({{{"names", {"quay.io/kubevirt/virt-launcher"}}, {"sizeBytes", 123456789}}});
    o["status"]["nodeInfo"] = {{"kernelVersion", "6.1"}, {"machineID", "abc"}};
    o["status"]["addresses"] = json::array({{{"type", "InternalIP"}, {"address", "10.0.0.1"}}});
    o["status"]["capacity"] = {{"cpu", "16"}};
    o["status"]["conditions"].push_back(
        {{"type", "MemoryPressure"}, {"status", "False"}, {"message", "kubelet has memory"}});
  } else if (o.contains("spec") && o["spec"].is_object() && o["spec"].contains("containers") &&
             o["spec"]["containers"].is_array()) {
    for (json& c : o["spec"]["containers"]) {
      if (!c.is_object()) continue;
      c["env"] = json::array({{{"name", "X"}, {"value", "Y"}}});
      c["command"] = json::array({"/usr/bin/virt-launcher", "--qemu-timeout", "240s"});
      c["volumeMounts"] = json::array({{{"name", "private"}, {"mountPath", "/var/run"}}});
      c["resources"]["limits"] = {{"devices.kubevirt.io/kvm", "1"}};
    }
    if (!o.contains("status") || o["status"].is_object()) {
      o["status"]["containerStatuses"] = json::array({{{"name", "compute"}, {"ready", false}}});
    }
  }
  return o;
}

// Every object the projections' tests read, as it is written there and as a server lists it.
std::vector<json> Objects() {
  std::vector<json> out;
  out.push_back(base::testing::ReadTestJson("api/testdata/node.json"));
  out.push_back(base::testing::ReadTestJson("api/testdata/vmim.json"));
  const std::vector<std::string> pods =
      base::testing::TestFileStems("api/testdata/and", ".pod.json");
  REQUIRE(pods.size() >= 5);
  for (const std::string& p : pods) {
    out.push_back(base::testing::ReadTestJson("api/testdata/and/" + p + ".pod.json"));
  }
  for (const char* file :
       {"kube/testdata/watch_pods.jsonl", "kube/testdata/watch_pods_crlf.jsonl"}) {
    std::istringstream lines(base::testing::ReadTestFile(file));
    for (std::string line; std::getline(lines, line);) {
      if (!line.empty() && line.back() == '\r') line.pop_back();
      if (line.empty()) continue;
      const json event = json::parse(line);
      if (event.contains("object")) out.push_back(event["object"]);
    }
  }
  out.push_back(testing::Vmim({}));
  out.push_back(testing::Vmim({.term = testing::NodeTerm("node-1"),
                               .added_node_selector = {{"zone", "a"}},
                               .phase = "Failed",
                               .conditions = json::array({{{"type", "Ready"},
                                                           {"status", "False"},
                                                           {"reason", "R"},
                                                           {"message", "m"},
                                                           {"lastProbeTime", nullptr},
                                                           {"lastTransitionTime", "t"}}})}));
  json policy = testing::Vmim({});
  policy["metadata"]["annotations"][std::string(api::kPolicyAnnotation)] = "gold";
  policy["metadata"]["annotations"][std::string(api::kMaxInboundAnnotation)] = "3";
  policy["metadata"]["annotations"][std::string(api::kAnnotationEvacuationMigration)] = "n1";
  policy["metadata"]["creationTimestamp"] = "2026-01-01T00:00:00Z";
  policy["status"]["migrationState"]["targetNode"] = "n2";
  policy["status"]["migrationState"]["targetPod"] = "p2";
  out.push_back(policy);
  out.push_back(testing::Pod({}));
  out.push_back(testing::Pod({.gated = false, .node = "node-1"}));
  out.push_back(testing::Pod(
      {.affinity = {{"nodeAffinity",
                     {{"requiredDuringSchedulingIgnoredDuringExecution",
                       {{"nodeSelectorTerms", json::parse("[" + testing::NodeTerm("n") + "]")}}}}}},
       .node_selector = {{"zone", "a"}},
       .scheduled_reason = "Unschedulable",
       .scheduled_message = "0/3 nodes are available",
       .claims = {"disk-a", "disk-b"}}));
  json bound = testing::Pod({.gated = false, .node = "node-2"});
  bound["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:01Z";
  bound["status"]["phase"] = "Succeeded";
  bound["spec"]["initContainers"] =
      json::array({{{"name", "init"}, {"resources", {{"requests", {{"cpu", "2"}}}}}},
                   {{"name", "log"},
                    {"restartPolicy", "Always"},
                    {"image", "x"},
                    {"resources", {{"requests", {{"cpu", "50m"}, {"memory", "10Mi"}}}}}}});
  bound["spec"]["overhead"] = {{"memory", "200Mi"}};
  bound["spec"]["topologySpreadConstraints"] = json::array(
      {{{"maxSkew", 1}, {"topologyKey", "zone"}, {"whenUnsatisfiable", "DoNotSchedule"}}});
  for (int i = 0; i < 40; ++i)
    bound["metadata"]["labels"]["tenant/label-" + std::to_string(i)] = "v";
  out.push_back(bound);
  out.push_back(testing::Node({.name = "node-1"}));
  out.push_back(testing::Node({.name = "node-2",
                               .labels = {{"zone", "b"}},
                               .cordoned = true,
                               .taints = json::array({{{"key", "k"},
                                                       {"value", "v"},
                                                       {"effect", "NoSchedule"},
                                                       {"timeAdded", "2026-01-01T00:00:00Z"}}})}));
  // Odd shapes: what FromJson reads of them is its default, through the trim too.
  out.push_back(json::parse(R"({"metadata": {"name": "odd", "labels": "x", "annotations": []},
    "spec": {"taints": "x", "containers": [[{"resources": {"requests": {"cpu": "1"}}}], null, 3],
             "initContainers": {"a": 1}, "tolerations": [1, {"key": "k", "x": 2}],
             "volumes": [{"persistentVolumeClaim": "c"}, {"persistentVolumeClaim": {"claimName": "d", "readOnly": true}}]},
    "status": {"conditions": [1, "a", null, {"type": "Ready", "status": "True", "x": {}}],
               "migrationState": [], "allocatable": {"cpu": 4}}})"));
  out.push_back(json::parse(R"({"metadata": null, "spec": [], "status": "x"})"));
  out.push_back(json::object());
  const size_t written = out.size();
  for (size_t i = 0; i < written; ++i) out.push_back(Served(out[i]));
  return out;
}

// Every member of `trimmed` is one `node` reads (at the top, a metav1.Status member too; in
// metadata, the count of labels the budget left out).
void CheckOnlyReads(const Node& node, const json& trimmed, int depth = 0) {
  if (node.whole) return;
  if (trimmed.is_array()) {
    for (const json& e : trimmed) CheckOnlyReads(node, e, depth + 1);
    return;
  }
  if (!trimmed.is_object()) return;
  for (auto it = trimmed.begin(); it != trimmed.end(); ++it) {
    auto read = node.members.find(it.key());
    if (read == node.members.end()) {
      CAPTURE(it.key());
      const bool status_member = depth == 0 && std::ranges::find(kube::kStatusMembers, it.key()) !=
                                                   std::end(kube::kStatusMembers);
      CHECK((status_member || it.key() == kube::kLabelsDropped));
      continue;
    }
    CheckOnlyReads(read->second, it.value(), depth + 1);
  }
}

// The object as the informer of T parses it (LIST page, watch event, single object), each
// equal to what the fakes make of the whole object; then projected.
template <typename T>
T AsInformerReads(const json& object, const kube::ObjectTrim& trim, json* trimmed = nullptr) {
  const std::string text = object.dump();
  json parsed = kube::ParseTrimmed(text, kube::ObjectsAt::kTop, trim);
  json faked = object;
  kube::TrimObject(faked, trim);
  CHECK(parsed == faked);
  const json page = kube::ParseTrimmed(
      json{{"metadata", {{"continue", "t"}}}, {"items", json::array({object, object})}}.dump(),
      kube::ObjectsAt::kListItems, trim);
  CHECK(page["items"] == json::array({parsed, parsed}));
  CHECK(page["metadata"]["continue"] == "t");
  const json event = kube::ParseTrimmed(json{{"type", "MODIFIED"}, {"object", object}}.dump(),
                                        kube::ObjectsAt::kWatchEvent, trim);
  CHECK(event == json{{"type", "MODIFIED"}, {"object", parsed}});
  // What the informer and its watcher read besides the projection.
  CHECK(kube::ObjectKey(parsed) == kube::ObjectKey(object));
  CHECK(base::StringAt(parsed, {"metadata", "resourceVersion"}) ==
        base::StringAt(object, {"metadata", "resourceVersion"}));
  CheckOnlyReads(trim.reads->root(), parsed);
  if (trimmed != nullptr) *trimmed = parsed;
  return T::FromJson(parsed);
}

template <typename T>
void CheckProjection(const json& object, size_t max_label_bytes = 0) {
  const base::ObjectReads reads = kube::InformerReads(T::Reads());
  const kube::ObjectTrim trim{
      .managed_fields = true, .max_label_bytes = max_label_bytes, .reads = &reads};
  // The oracle: the whole object, with only the trims informers made before (managedFields
  // and the label budget) applied.
  json whole = json::parse(object.dump());
  kube::TrimObject(whole,
                   kube::ObjectTrim{.managed_fields = true, .max_label_bytes = max_label_bytes});
  CHECK(AsInformerReads<T>(object, trim) == T::FromJson(whole));
  if (max_label_bytes == 0) CHECK(T::FromJson(whole) == T::FromJson(object));
}

TEST_CASE("Each projection of the trimmed parse equals the projection of the whole object") {
  const std::vector<json> objects = Objects();
  for (size_t i = 0; i < objects.size(); ++i) {
    CAPTURE(i, objects[i].dump().substr(0, 200));
    CheckProjection<api::NodeInfo>(objects[i]);
    CheckProjection<api::TargetPod>(objects[i]);
    CheckProjection<api::MigrationInfo>(objects[i]);
    CheckProjection<api::BoundPod>(objects[i]);
    CheckProjection<api::BoundPod>(objects[i], api::kBoundPodLabelBytes);
    CheckProjection<api::BoundPod>(objects[i], 3 * (20 + kube::kMaxLabelValueBytes));
    // The target pods' index reads what the projection does.
    const base::ObjectReads reads = kube::InformerReads(api::TargetPod::Reads());
    json trimmed;
    AsInformerReads<api::TargetPod>(objects[i], {.managed_fields = true, .reads = &reads},
                                    &trimmed);
    CHECK(MigrationJobIndexValues(trimmed) == MigrationJobIndexValues(objects[i]));
  }
}

TEST_CASE("What no projection reads is left out: node images, container env, managedFields") {
  const json node = Served(testing::Node({.name = "node-1"}));
  const base::ObjectReads node_reads = kube::InformerReads(api::NodeInfo::Reads());
  json n;
  AsInformerReads<api::NodeInfo>(node, {.managed_fields = true, .reads = &node_reads}, &n);
  CHECK(n == json::parse(R"({"kind": "Node", "apiVersion": "v1",
    "metadata": {"name": "node-1", "labels": {"kubernetes.io/hostname": "node-1"}},
    "spec": {},
    "status": {"conditions": [{"type": "Ready", "status": "True"},
                              {"type": "MemoryPressure", "status": "False"}],
               "allocatable": {"cpu": "8", "memory": "32Gi", "pods": "110"}}})"));

  const json pod = Served(testing::Pod({.claims = {"disk"}}));
  const base::ObjectReads pod_reads = kube::InformerReads(api::TargetPod::Reads());
  json p;
  AsInformerReads<api::TargetPod>(pod, {.managed_fields = true, .reads = &pod_reads}, &p);
  CHECK(p["spec"]["containers"] ==
        json::parse(R"([{"resources": {"requests": {"cpu": "100m", "memory": "1Gi"}}}])"));
  CHECK(p["spec"]["volumes"] ==
        json::parse(R"([{"persistentVolumeClaim": {"claimName": "disk"}}])"));
  CHECK(p["metadata"]["annotations"] ==
        json{{std::string(api::kAnnotationMigrationJobName), testing::kVmimName}});
  CHECK_FALSE(p["metadata"].contains("managedFields"));
  CHECK_FALSE(p["metadata"].contains("generation"));
  CHECK_FALSE(p["status"].contains("containerStatuses"));
}

TEST_CASE("An ERROR event's Status is kept by every informer's reads") {
  const json status = {{"kind", "Status"},
                       {"apiVersion", "v1"},
                       {"metadata", json::object()},
                       {"status", "Failure"},
                       {"message", "too old resource version: 1 (2)"},
                       {"reason", "Expired"},
                       {"code", 410},
                       {"details", {{"retryAfterSeconds", 1}}}};
  for (const base::ObjectReads* projection :
       {&api::NodeInfo::Reads(), &api::TargetPod::Reads(), &api::BoundPod::Reads(),
        &api::MigrationInfo::Reads()}) {
    const base::ObjectReads reads = kube::InformerReads(*projection);
    const kube::ObjectTrim trim{.managed_fields = true, .reads = &reads};
    const json event = kube::ParseTrimmed(json{{"type", "ERROR"}, {"object", status}}.dump(),
                                          kube::ObjectsAt::kWatchEvent, trim);
    CHECK(event["object"] == status);
    json faked = status;
    kube::TrimObject(faked, trim);
    CHECK(faked == status);
  }
}

}  // namespace
}  // namespace kmt::controller
