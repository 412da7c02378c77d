// controller/testing/objects.h — JSON of the objects controller tests use:
// a VMIM, its target virt-launcher pod, nodes. Shaped as KubeVirt and the API
// server write them, with only the fields that matter set.
#pragma once

#include <chrono>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "base/poll.h"

namespace kmt::controller::testing {

using nlohmann::json;

inline constexpr const char* kNs = "vms";
inline constexpr const char* kVmimName = "mig-1";
inline constexpr const char* kVmimUid = "11111111-aaaa-bbbb-cccc-000000000001";
inline constexpr const char* kVmiUid = "22222222-aaaa-bbbb-cccc-000000000002";
inline constexpr const char* kPodName = "virt-launcher-vm-1-target";
inline constexpr const char* kPodUid = "33333333-aaaa-bbbb-cccc-000000000003";
inline constexpr const char* kSourceNode = "node-src";

struct VmimSpec {
  std::optional<std::string> term;     // annotation text
  json added_node_selector = nullptr;  // spec.addedNodeSelector
  std::string phase = "Scheduling";
  json conditions = nullptr;  // status.conditions
};

inline json Vmim(const VmimSpec& s) {
  json v = {{"apiVersion", "kubevirt.io/v1"},
            {"kind", "VirtualMachineInstanceMigration"},
            {"metadata",
             {{"name", kVmimName},
              {"namespace", kNs},
              {"uid", kVmimUid},
              {"resourceVersion", "100"},
              {"annotations", json::object()}}},
            {"spec", {{"vmiName", "vm-1"}}},
            {"status", {{"phase", s.phase}, {"migrationState", {{"sourceNode", kSourceNode}}}}}};
  if (s.term)
    v["metadata"]["annotations"]["migration-target.kubevirt.io/added-node-selector-term"] = *s.term;
  if (!s.added_node_selector.is_null()) v["spec"]["addedNodeSelector"] = s.added_node_selector;
  if (!s.conditions.is_null()) v["status"]["conditions"] = s.conditions;
  return v;
}

struct PodSpec {
  std::string name = kPodName;
  std::string uid = kPodUid;
  std::string job_uid = kVmimUid;
  bool gated = true;
  json affinity = nullptr;       // spec.affinity
  json node_selector = nullptr;  // spec.nodeSelector
  std::string node;              // spec.nodeName
  // PodScheduled condition: "" → derived (SchedulingGated while gated,
  // True when bound, absent otherwise).
  std::string scheduled_reason;
  std::string scheduled_message;
  std::vector<std::string> claims;  // spec.volumes[].persistentVolumeClaim.claimName
};

inline json Pod(const PodSpec& s) {
  json p = {{"apiVersion", "v1"},
            {"kind", "Pod"},
            {"metadata",
             {{"name", s.name},
              {"namespace", kNs},
              {"uid", s.uid},
              {"resourceVersion", "200"},
              {"creationTimestamp", "2026-01-01T00:00:00Z"},
              {"labels",
               {{"kubevirt.io", "virt-launcher"},
                {"kubevirt.io/migrationJobUID", s.job_uid},
                {"kubevirt.io/created-by", kVmiUid}}},
              {"annotations", {{"kubevirt.io/migrationJobName", kVmimName}}}}},
            {"spec",
             {{"containers",
               {{{"name", "compute"},
                 {"image", "virt-launcher"},
                 {"resources", {{"requests", {{"cpu", "100m"}, {"memory", "1Gi"}}}}}}}},
              {"tolerations",
               {{{"key", "node.kubernetes.io/not-ready"},
                 {"operator", "Exists"},
                 {"effect", "NoExecute"}}}}}},
            {"status", {{"phase", "Pending"}}}};
  if (s.gated) {
    p["spec"]["schedulingGates"] = {
        {{"name", "migration-target.kubevirt.io/added-node-selector-term"}}};
  }
  if (!s.affinity.is_null()) p["spec"]["affinity"] = s.affinity;
  if (!s.node_selector.is_null()) p["spec"]["nodeSelector"] = s.node_selector;
  if (!s.node.empty()) p["spec"]["nodeName"] = s.node;
  for (const auto& c : s.claims) {
    p["spec"]["volumes"].push_back({{"name", c}, {"persistentVolumeClaim", {{"claimName", c}}}});
  }
  json cond;
  if (!s.scheduled_reason.empty()) {
    cond = {{"type", "PodScheduled"},
            {"status", "False"},
            {"reason", s.scheduled_reason},
            {"message", s.scheduled_message}};
  } else if (!s.node.empty()) {
    cond = {{"type", "PodScheduled"}, {"status", "True"}};
  } else if (s.gated) {
    cond = {{"type", "PodScheduled"},
            {"status", "False"},
            {"reason", "SchedulingGated"},
            {"message", "Scheduling is blocked due to non-empty scheduling gates"}};
  }
  if (!cond.is_null()) p["status"]["conditions"] = json::array({cond});
  return p;
}

struct NodeSpec {
  std::string name;
  json labels = json::object();
  bool cordoned = false;
  json taints = nullptr;
  std::string cpu = "8";
  std::string memory = "32Gi";
};

inline json Node(const NodeSpec& s) {
  json labels = s.labels;
  labels["kubernetes.io/hostname"] = s.name;
  json n = {{"apiVersion", "v1"},
            {"kind", "Node"},
            {"metadata", {{"name", s.name}, {"labels", labels}, {"uid", "node-uid-" + s.name}}},
            {"spec", json::object()},
            {"status",
             {{"conditions", {{{"type", "Ready"}, {"status", "True"}}}},
              {"allocatable", {{"cpu", s.cpu}, {"memory", s.memory}, {"pods", "110"}}}}}};
  if (s.cordoned) n["spec"]["unschedulable"] = true;
  if (!s.taints.is_null()) n["spec"]["taints"] = s.taints;
  return n;
}

// The admin's term naming one node.
inline std::string NodeTerm(const std::string& node) {
  return R"({"matchFields":[{"key":"metadata.name","operator":"In","values":[")" + node +
         R"("]}]})";
}

// The object without what the server assigns (uid, resourceVersion,
// creationTimestamp), for comparing stored objects with expected ones.
inline json Stripped(json obj) {
  obj["metadata"].erase("uid");
  obj["metadata"].erase("resourceVersion");
  obj["metadata"].erase("creationTimestamp");
  return obj;
}

// Polls `f` until it is true or `timeout` passes (for tests with real threads).
template <typename F>
bool Eventually(F&& f, std::chrono::seconds timeout) {
  return base::PollUntil(base::SystemClock(), timeout, base::Duration::zero(), f);
}

}  // namespace kmt::controller::testing
