// controller/reconcile_test.cc — one table row per branch of Reconcile.
#include "controller/reconcile.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <utility>

#include "api/added_term.h"
#include "controller/testing/objects.h"

namespace kmt::controller {
namespace {

using namespace kmt::controller::testing;  // NOLINT: test fixtures
using std::chrono::seconds;

const base::WallTime kNow = base::WallTime(std::chrono::seconds(1767225600 + 600));  // 00:10:00Z
const std::string kNowText = "2026-01-01T00:10:00Z";
const std::string kThen = "2026-01-01T00:05:00Z";
const std::string kPodRef = "vms/virt-launcher-vm-1-target";
const std::string kTerm3 = "metadata.name In [node-3]";

// The pod's affinity once the AND of node-3's term is in.
json MergedAffinity() {
  return json::parse(R"({"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution":
      {"nodeSelectorTerms": [
        {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["node-3"]}]}]}}})");
}

json Cond(const std::string& type, const std::string& status, const std::string& reason,
          const std::string& message, const std::string& time = kThen) {
  return {{"type", type},       {"status", status},      {"reason", reason},
          {"message", message}, {"lastProbeTime", time}, {"lastTransitionTime", time}};
}

const std::string kAppliedMsg = "Target pod " + kPodRef + " requires the added term " + kTerm3;
const std::string kScheduledMsg = "Target pod " + kPodRef + " was scheduled to node node-3";
const std::string kSchedMsg =
    "0/3 nodes are available: 1 node(s) were unschedulable, 2 node(s) didn't match Pod's node "
    "affinity/selector.";
const std::string kUnschedMsg = "Target pod " + kPodRef + " is unschedulable: " + kSchedMsg +
                                " Per node the added term allows: node-3: cordoned";
const std::string kEscapedPrefix = "Target pod " + kPodRef +
                                   " was created without the scheduling gate and does not carry "
                                   "the added term " +
                                   kTerm3 + "; ";

std::vector<NodeSpec> ThreeNodes() {
  return {{"node-1", {{"zone", "a"}}},
          {"node-2", {{"zone", "b"}}},
          {"node-3", {{"zone", "a"}}, /*cordoned=*/true}};
}

api::MigrationCondition MC(const std::string& type, const std::string& status,
                           const std::string& reason, const std::string& message,
                           const std::string& probe, const std::string& transition) {
  return {type, status, reason, message, probe, transition};
}

struct Row {
  std::string name;
  VmimSpec vmim;
  std::vector<PodSpec> pods;
  std::vector<NodeSpec> nodes;
  // Expected plan.
  std::vector<std::string> patched;
  std::vector<std::string> deleted;
  std::vector<api::MigrationCondition> conditions;
  bool changed = false;
  std::vector<EventSpec> events;
  std::optional<base::Duration> requeue;
  // status.migrationState.targetNode / targetPod (KubeVirt's, once the migration ended).
  std::string target_node, target_pod;
  bool fail_fast = false;  // Observed::fail_fast_unschedulable
};

struct Built {
  Observed observed;
  std::vector<api::NodeInfo> nodes;
};

Observed Build(const Row& row, std::vector<api::NodeInfo>& nodes) {
  Observed o;
  json vmim = Vmim(row.vmim);
  if (!row.target_node.empty()) vmim["status"]["migrationState"]["targetNode"] = row.target_node;
  if (!row.target_pod.empty()) vmim["status"]["migrationState"]["targetPod"] = row.target_pod;
  o.vmim = api::MigrationInfo::FromJson(vmim);
  for (const auto& p : row.pods) o.target_pods.push_back(api::TargetPod::FromJson(Pod(p)));
  for (const auto& n : row.nodes) nodes.push_back(api::NodeInfo::FromJson(Node(n)));
  o.nodes = nodes;
  o.source_node = kSourceNode;
  o.fail_fast_unschedulable = row.fail_fast;
  return o;
}

std::vector<Row> Rows() {
  const std::string term3 = NodeTerm("node-3");
  std::vector<Row> rows;
  rows.push_back({"final phase Succeeded: nothing", {term3, nullptr, "Succeeded"}, {{}}, {}});
  rows.push_back({"final phase Failed: nothing", {term3, nullptr, "Failed"}, {{}}, {}});
  {
    // KubeVirt finished the migration before our status write landed: the report is
    // written once, the pod is not touched.
    Row r{"final phase, our report lost: Applied and Scheduled written, pod untouched",
          {term3, nullptr, "Succeeded"},
          {{.gated = false, .affinity = MergedAffinity(), .node = "node-3"}},
          ThreeNodes()};
    std::string sched = "Target pod " + kPodRef + " was scheduled to node node-3";
    r.conditions = {
        MC("addedNodeSelectorTermApplied", "True", "TermApplied", kAppliedMsg, kNowText, kNowText),
        MC("targetPodUnschedulable", "False", "Scheduled", sched, kNowText, kNowText)};
    r.changed = true;
    r.events = {
        {"Normal", "TermApplied", "Target pod " + kPodRef + " carries the added term " + kTerm3},
        {"Normal", "TargetPodScheduled", sched}};
    rows.push_back(r);
  }
  {
    // The pod was bound and the migration done before we saw the binding.
    Row r{"final phase, Applied but not Scheduled: Scheduled from the bound pod",
          {term3, nullptr, "Succeeded",
           json::array({Cond("addedNodeSelectorTermApplied", "True", "TermApplied", kAppliedMsg)})},
          {{.gated = false, .affinity = MergedAffinity(), .node = "node-3"}},
          ThreeNodes()};
    r.conditions = {
        MC("addedNodeSelectorTermApplied", "True", "TermApplied", kAppliedMsg, kThen, kThen),
        MC("targetPodUnschedulable", "False", "Scheduled", kScheduledMsg, kNowText, kNowText)};
    r.changed = true;
    r.events = {{"Normal", "TargetPodScheduled", kScheduledMsg}};
    rows.push_back(r);
  }
  {
    Row r{"final phase with the whole report: nothing",
          {term3, nullptr, "Succeeded",
           json::array({Cond("addedNodeSelectorTermApplied", "True", "TermApplied", kAppliedMsg),
                        Cond("targetPodUnschedulable", "False", "Scheduled", kScheduledMsg)})},
          {{.gated = false, .affinity = MergedAffinity(), .node = "node-3"}},
          ThreeNodes()};
    r.conditions = {
        MC("addedNodeSelectorTermApplied", "True", "TermApplied", kAppliedMsg, kThen, kThen),
        MC("targetPodUnschedulable", "False", "Scheduled", kScheduledMsg, kThen, kThen)};
    rows.push_back(r);
  }
  {
    // The target pod is gone from the cache: KubeVirt's migrationState names it.
    Row r{"final phase, Applied, pod gone: Scheduled from the VMIM's migrationState",
          {term3, nullptr, "Succeeded",
           json::array({Cond("addedNodeSelectorTermApplied", "True", "TermApplied", kAppliedMsg)})},
          {},
          ThreeNodes()};
    r.target_node = "node-3";
    r.target_pod = "virt-launcher-vm-1-gone";
    const std::string sched = "Target pod vms/virt-launcher-vm-1-gone was scheduled to node node-3";
    r.conditions = {
        MC("addedNodeSelectorTermApplied", "True", "TermApplied", kAppliedMsg, kThen, kThen),
        MC("targetPodUnschedulable", "False", "Scheduled", sched, kNowText, kNowText)};
    r.changed = true;
    r.events = {{"Normal", "TargetPodScheduled", sched}};
    rows.push_back(r);
  }
  {
    // Unschedulable, then bound and migrated before we saw the binding: flips once.
    Row r{"final phase, still Unschedulable=True, pod bound: flips to Scheduled",
          {term3, nullptr, "Succeeded",
           json::array({Cond("addedNodeSelectorTermApplied", "True", "TermApplied", kAppliedMsg),
                        Cond("targetPodUnschedulable", "True", "Unschedulable", kUnschedMsg)})},
          {{.gated = false, .affinity = MergedAffinity(), .node = "node-3"}},
          ThreeNodes()};
    r.conditions = {
        MC("addedNodeSelectorTermApplied", "True", "TermApplied", kAppliedMsg, kThen, kThen),
        MC("targetPodUnschedulable", "False", "Scheduled", kScheduledMsg, kNowText, kNowText)};
    r.changed = true;
    r.events = {{"Normal", "TargetPodScheduled", kScheduledMsg}};
    rows.push_back(r);
  }
  {
    // KubeVirt gave up on an unschedulable pod (deleted it): True is the final word.
    Row r{"final phase Failed, Unschedulable=True, pod gone, no target node: nothing",
          {term3, nullptr, "Failed",
           json::array({Cond("addedNodeSelectorTermApplied", "True", "TermApplied", kAppliedMsg),
                        Cond("targetPodUnschedulable", "True", "Unschedulable", kUnschedMsg)})},
          {},
          ThreeNodes()};
    r.conditions = {
        MC("addedNodeSelectorTermApplied", "True", "TermApplied", kAppliedMsg, kThen, kThen),
        MC("targetPodUnschedulable", "True", "Unschedulable", kUnschedMsg, kThen, kThen)};
    rows.push_back(r);
  }
  {
    // Both writes lost (crash after the release), the pod still unbound: Applied only.
    Row r{"final phase Failed, report lost, pod carries the term unbound: Applied only",
          {term3, nullptr, "Failed"},
          {{.gated = false, .affinity = MergedAffinity()}},
          ThreeNodes()};
    r.conditions = {
        MC("addedNodeSelectorTermApplied", "True", "TermApplied", kAppliedMsg, kNowText, kNowText)};
    r.changed = true;
    r.events = {
        {"Normal", "TermApplied", "Target pod " + kPodRef + " carries the added term " + kTerm3}};
    rows.push_back(r);
  }
  {
    // The cache may not show our release yet: nothing is guessed, not even from
    // migrationState (the pod's update will come).
    Row r{"final phase, pod still gated in the cache: nothing, even with a target node",
          {term3, nullptr, "Succeeded"},
          {{}},
          ThreeNodes()};
    r.target_node = "node-3";
    r.target_pod = kPodName;
    rows.push_back(r);
  }
  {
    const std::string bad = R"({"matchFields":[{"key":"metadata.name","operator":"Exists"}]})";
    std::string causes;
    for (const auto& c : api::ParseAddedTerm(bad).causes) {
      causes += (causes.empty() ? "" : "; ") + api::ToString(c);
    }
    Row r{"final phase, invalid term, report lost: InvalidAddedTerm, pods untouched",
          {bad, nullptr, "Failed"},
          {{.gated = false}},
          ThreeNodes()};
    const std::string msg = "The added term is invalid: " + causes;
    r.conditions = {
        MC("addedNodeSelectorTermApplied", "False", "InvalidAddedTerm", msg, kNowText, kNowText)};
    r.changed = true;
    r.events = {{"Warning", "InvalidAddedTerm", msg}};
    rows.push_back(r);
  }
  {
    // Issue 45: not silent any more. Said after the fact; a final migration's pod is never
    // deleted.
    Row r{"final phase, pod without the term: reported, never deleted",
          {term3, nullptr, "Failed"},
          {{.gated = false, .node = "node-1"}},
          ThreeNodes()};
    const std::string msg = "Target pod " + kPodRef + " never carried the added term " + kTerm3 +
                            ": its scheduling gate was removed, or it was created without it, "
                            "while no operator replica reconciled; the migration ended Failed "
                            "without moving the VMI to it";
    r.conditions = {MC("addedNodeSelectorTermApplied", "False", "TargetPodEscapedGate", msg,
                       kNowText, kNowText)};
    r.changed = true;
    r.events = {{"Warning", "TargetPodEscapedGate", msg}};
    rows.push_back(r);
  }
  {
    // An escaped pod bound outside the term, being deleted: its binding is not reported.
    Row r{
        "final phase Failed, escaped pod bound, Escaped reported: nothing",
        {term3, nullptr, "Failed",
         json::array({Cond("addedNodeSelectorTermApplied", "False", "TargetPodEscapedGate", "x")})},
        {{.gated = false, .node = "node-1"}},
        ThreeNodes()};
    r.target_node = "node-1";
    r.target_pod = kPodName;
    r.conditions = {
        MC("addedNodeSelectorTermApplied", "False", "TargetPodEscapedGate", "x", kThen, kThen)};
    rows.push_back(r);
  }
  rows.push_back(
      {"no constraint: never touched",
       {},
       {{.gated = false, .scheduled_reason = "Unschedulable", .scheduled_message = kSchedMsg}},
       ThreeNodes()});
  rows.push_back(
      {"another migration's pod is ignored", {term3}, {{.job_uid = "other-uid"}}, ThreeNodes()});
  rows.push_back({"no target pod yet: nothing", {term3}, {}, ThreeNodes()});
  {
    Row r{"gated pod: AND + release, Applied=True, Normal event",
          {term3, nullptr, "Scheduling",
           json::array({Cond("migrationRejectedByResourceQuota", "False", "", "")})},
          {{}},
          ThreeNodes()};
    r.patched = {kPodName};
    r.conditions = {
        MC("migrationRejectedByResourceQuota", "False", "", "", kThen, kThen),
        MC("addedNodeSelectorTermApplied", "True", "TermApplied", kAppliedMsg, kNowText, kNowText)};
    r.changed = true;
    r.events = {{"Normal", "TermApplied",
                 "Released scheduling gate of target pod " + kPodRef + " with the added term " +
                     kTerm3 + " ANDed into its required node affinity"}};
    rows.push_back(r);
  }
  {
    Row r{"pod carries the term and the condition is set: nothing changes",
          {term3, nullptr, "Scheduling",
           json::array({Cond("addedNodeSelectorTermApplied", "True", "TermApplied", kAppliedMsg)})},
          {{.gated = false, .affinity = MergedAffinity()}},
          ThreeNodes()};
    r.conditions = {
        MC("addedNodeSelectorTermApplied", "True", "TermApplied", kAppliedMsg, kThen, kThen)};
    rows.push_back(r);
  }
  {
    Row r{"pod carries the term, condition missing (restart after the patch): Applied=True",
          {term3},
          {{.gated = false, .affinity = MergedAffinity()}},
          ThreeNodes()};
    r.conditions = {
        MC("addedNodeSelectorTermApplied", "True", "TermApplied", kAppliedMsg, kNowText, kNowText)};
    r.changed = true;
    r.events = {
        {"Normal", "TermApplied", "Target pod " + kPodRef + " carries the added term " + kTerm3}};
    rows.push_back(r);
  }
  {
    Row r{"escaped, unscheduled: deleted, Applied=False, Warning event",
          {term3},
          {{.gated = false}},
          ThreeNodes()};
    r.deleted = {kPodName};
    std::string msg = kEscapedPrefix + "deleted it while unscheduled";
    r.conditions = {MC("addedNodeSelectorTermApplied", "False", "TargetPodEscapedGate", msg,
                       kNowText, kNowText)};
    r.changed = true;
    r.events = {{"Warning", "TargetPodEscapedGate", msg}};
    rows.push_back(r);
  }
  {
    Row r{"escaped, bound outside the term: deleted",
          {term3},
          {{.gated = false, .node = "node-1"}},
          ThreeNodes()};
    r.deleted = {kPodName};
    std::string msg = kEscapedPrefix + "deleted it: node node-1 is outside the term";
    r.conditions = {MC("addedNodeSelectorTermApplied", "False", "TargetPodEscapedGate", msg,
                       kNowText, kNowText)};
    r.changed = true;
    r.events = {{"Warning", "TargetPodEscapedGate", msg}};
    rows.push_back(r);
  }
  {
    Row r{"escaped, bound to a node we do not know: deleted",
          {term3},
          {{.gated = false, .node = "node-9"}},
          ThreeNodes()};
    r.deleted = {kPodName};
    std::string msg = kEscapedPrefix + "deleted it: node node-9 is unknown";
    r.conditions = {MC("addedNodeSelectorTermApplied", "False", "TargetPodEscapedGate", msg,
                       kNowText, kNowText)};
    r.changed = true;
    r.events = {{"Warning", "TargetPodEscapedGate", msg}};
    rows.push_back(r);
  }
  {
    Row r{"escaped, bound inside the term: left alone and reported",
          {term3},
          {{.gated = false, .node = "node-3"}},
          ThreeNodes()};
    std::string msg = kEscapedPrefix + "left it alone: node node-3 is inside the term";
    std::string sched = "Target pod " + kPodRef + " was scheduled to node node-3";
    r.conditions = {MC("addedNodeSelectorTermApplied", "False", "TargetPodEscapedGate", msg,
                       kNowText, kNowText),
                    MC("targetPodUnschedulable", "False", "Scheduled", sched, kNowText, kNowText)};
    r.changed = true;
    r.events = {{"Warning", "TargetPodEscapedGate", msg}, {"Normal", "TargetPodScheduled", sched}};
    rows.push_back(r);
  }
  {
    Row r{"escaped pod dominates an applied one",
          {term3},
          {{.name = "a-applied", .uid = "uid-a", .gated = false, .affinity = MergedAffinity()},
           {.name = "b-escaped", .uid = "uid-b", .gated = false}},
          ThreeNodes()};
    r.deleted = {"b-escaped"};
    std::string msg =
        "Target pod vms/b-escaped was created without the scheduling gate and does "
        "not carry the added term " +
        kTerm3 + "; deleted it while unscheduled";
    r.conditions = {MC("addedNodeSelectorTermApplied", "False", "TargetPodEscapedGate", msg,
                       kNowText, kNowText)};
    r.changed = true;
    r.events = {{"Warning", "TargetPodEscapedGate", msg}};
    rows.push_back(r);
  }
  {
    const std::string bad = R"({"matchFields":[{"key":"metadata.name","operator":"Exists"}]})";
    std::string causes;
    for (const auto& c : api::ParseAddedTerm(bad).causes) {
      causes += (causes.empty() ? "" : "; ") + api::ToString(c);
    }
    Row r{"invalid term: gate kept, escaped unscheduled pod deleted, Applied=False",
          {bad},
          {{.name = "a-gated", .uid = "uid-a"},
           {.name = "b-escaped", .uid = "uid-b", .gated = false}},
          ThreeNodes()};
    r.deleted = {"b-escaped"};
    std::string msg = "The added term is invalid: " + causes;
    r.conditions = {
        MC("addedNodeSelectorTermApplied", "False", "InvalidAddedTerm", msg, kNowText, kNowText)};
    r.changed = true;
    r.events = {{"Warning", "InvalidAddedTerm", msg}};
    rows.push_back(r);
  }
  {
    Row r{"unschedulable after release: targetPodUnschedulable=True with the per-node reasons",
          {term3, nullptr, "Scheduling",
           json::array({Cond("addedNodeSelectorTermApplied", "True", "TermApplied", kAppliedMsg)})},
          {{.gated = false,
            .affinity = MergedAffinity(),
            .scheduled_reason = "Unschedulable",
            .scheduled_message = kSchedMsg}},
          ThreeNodes()};
    r.conditions = {
        MC("addedNodeSelectorTermApplied", "True", "TermApplied", kAppliedMsg, kThen, kThen),
        MC("targetPodUnschedulable", "True", "Unschedulable", kUnschedMsg, kNowText, kNowText)};
    r.changed = true;
    r.events = {{"Warning", "TargetPodUnschedulable", kUnschedMsg}};
    r.requeue = seconds(30);
    rows.push_back(r);
  }
  {
    Row r{"still unschedulable for the same reasons: no write, no event, refresh later",
          {term3, nullptr, "Scheduling",
           json::array({Cond("addedNodeSelectorTermApplied", "True", "TermApplied", kAppliedMsg),
                        Cond("targetPodUnschedulable", "True", "Unschedulable", kUnschedMsg)})},
          {{.gated = false,
            .affinity = MergedAffinity(),
            .scheduled_reason = "Unschedulable",
            .scheduled_message = kSchedMsg}},
          ThreeNodes()};
    r.conditions = {
        MC("addedNodeSelectorTermApplied", "True", "TermApplied", kAppliedMsg, kThen, kThen),
        MC("targetPodUnschedulable", "True", "Unschedulable", kUnschedMsg, kThen, kThen)};
    r.requeue = seconds(30);
    rows.push_back(r);
  }
  {
    Row r{"new reasons: message updated, lastTransitionTime kept, no event",
          {term3, nullptr, "Scheduling",
           json::array({Cond("addedNodeSelectorTermApplied", "True", "TermApplied", kAppliedMsg),
                        Cond("targetPodUnschedulable", "True", "Unschedulable", "old reasons")})},
          {{.gated = false,
            .affinity = MergedAffinity(),
            .scheduled_reason = "Unschedulable",
            .scheduled_message = kSchedMsg}},
          ThreeNodes()};
    r.conditions = {
        MC("addedNodeSelectorTermApplied", "True", "TermApplied", kAppliedMsg, kThen, kThen),
        MC("targetPodUnschedulable", "True", "Unschedulable", kUnschedMsg, kNowText, kThen)};
    r.changed = true;
    r.requeue = seconds(30);
    rows.push_back(r);
  }
  for (const bool fail_fast : {false, true}) {
    // The term allows only the node the VM runs on: it can never fit.
    const std::string src = NodeTerm(kSourceNode);
    const std::string applied = "Target pod " + kPodRef + " requires the added term " +
                                "metadata.name In [" + kSourceNode + "]";
    std::string msg = "Target pod " + kPodRef +
                      " can never be scheduled while this migration lasts: every node the added "
                      "term allows is out for good: node-src: the VM already runs there; ";
    msg += fail_fast ? "deleted it so that KubeVirt fails the migration now "
                       "(--fail-fast-unschedulable)"
                     : "KubeVirt fails the migration when its unschedulable timeout passes (the "
                       "operator's --fail-fast-unschedulable ends it at once)";
    json merged = json::parse(R"({"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution":
        {"nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In",
        "values": ["node-src"]}]}]}}})");
    Row r{fail_fast ? "can never fit, --fail-fast-unschedulable: permanent, target pod deleted"
                    : "can never fit: the condition says it is permanent, the pod stays",
          {src, nullptr, "Scheduling",
           json::array({Cond("addedNodeSelectorTermApplied", "True", "TermApplied", applied)})},
          {{.gated = false,
            .affinity = merged,
            .scheduled_reason = "Unschedulable",
            .scheduled_message = kSchedMsg}},
          {{kSourceNode, {{"zone", "a"}}}, {"node-1", {{"zone", "a"}}}}};
    r.conditions = {
        MC("addedNodeSelectorTermApplied", "True", "TermApplied", applied, kThen, kThen),
        MC("targetPodUnschedulable", "True", "PermanentlyUnschedulable", msg, kNowText, kNowText)};
    r.changed = true;
    r.events = {{"Warning", "PermanentlyUnschedulable", msg}};
    if (fail_fast) {
      r.deleted = {kPodName};
    } else {
      r.requeue = seconds(30);
    }
    r.fail_fast = fail_fast;
    rows.push_back(r);
  }
  {
    std::string sched = "Target pod " + kPodRef + " was scheduled to node node-3";
    Row r{"bound after being unschedulable: targetPodUnschedulable=False Scheduled",
          {term3, nullptr, "Scheduling",
           json::array({Cond("addedNodeSelectorTermApplied", "True", "TermApplied", kAppliedMsg),
                        Cond("targetPodUnschedulable", "True", "Unschedulable", kUnschedMsg)})},
          {{.gated = false, .affinity = MergedAffinity(), .node = "node-3"}},
          ThreeNodes()};
    r.conditions = {
        MC("addedNodeSelectorTermApplied", "True", "TermApplied", kAppliedMsg, kThen, kThen),
        MC("targetPodUnschedulable", "False", "Scheduled", sched, kNowText, kNowText)};
    r.changed = true;
    r.events = {{"Normal", "TargetPodScheduled", sched}};
    rows.push_back(r);
  }
  {
    std::string msg =
        "Target pod " + kPodRef + " is unschedulable: " + kSchedMsg + " Per node: node-1: cordoned";
    Row r{"spec.addedNodeSelector only: scheduling reported, pod never patched",
          {std::nullopt, {{"zone", "c"}}},
          {{.gated = false,
            .node_selector = {{"zone", "c"}},
            .scheduled_reason = "Unschedulable",
            .scheduled_message = kSchedMsg}},
          {{"node-1", {{"zone", "c"}}, /*cordoned=*/true}}};
    r.conditions = {MC("targetPodUnschedulable", "True", "Unschedulable", msg, kNowText, kNowText)};
    r.changed = true;
    r.events = {{"Warning", "TargetPodUnschedulable", msg}};
    r.requeue = seconds(30);
    rows.push_back(r);
  }
  {
    std::string sched = "Target pod " + kPodRef + " was scheduled to node node-1";
    Row r{"spec.addedNodeSelector only, bound: Scheduled",
          {std::nullopt, {{"zone", "c"}}},
          {{.gated = false, .node_selector = {{"zone", "c"}}, .node = "node-1"}},
          {{"node-1", {{"zone", "c"}}}}};
    r.conditions = {MC("targetPodUnschedulable", "False", "Scheduled", sched, kNowText, kNowText)};
    r.changed = true;
    r.events = {{"Normal", "TargetPodScheduled", sched}};
    rows.push_back(r);
  }
  // A migration that ended while no replica reconciled, its target pod never gated or its
  // gate removed around the operator: said after the fact, the pod left alone.
  const std::string never = "Target pod " + kPodRef + " never carried the added term " + kTerm3 +
                            ": its scheduling gate was removed, or it was created without it, "
                            "while no operator replica reconciled; ";
  for (const auto& [name, node, where] :
       std::vector<std::tuple<std::string, std::string, std::string>>{
           {"outside", "node-1", "which is outside the term"},
           {"inside", "node-3", "which is inside the term"},
           {"on a node the cache lacks", "node-9", "which the operator does not know"}}) {
    Row r{"final Succeeded, no report, the pod escaped and ran " + name,
          {term3, nullptr, "Succeeded"},
          {{.gated = false, .node = node}},
          ThreeNodes()};
    r.target_node = node;
    r.target_pod = kPodName;
    std::string msg = never;
    msg.append("the migration ended on node ").append(node).append(", ").append(where);
    msg.append(" (Succeeded)");
    r.conditions = {MC("addedNodeSelectorTermApplied", "False", "TargetPodEscapedGate", msg,
                       kNowText, kNowText)};
    r.changed = true;
    r.events = {{"Warning", "TargetPodEscapedGate", msg}};
    rows.push_back(r);
  }
  {
    // KubeVirt has not recorded the node: the Succeeded migration ran on its escaped pod.
    Row r{"final Succeeded, no report, nothing recorded: the escaped pod's node",
          {term3, nullptr, "Succeeded"},
          {{.gated = false, .node = "node-1"}},
          ThreeNodes()};
    const std::string msg =
        never + "the migration ended on node node-1, which is outside the term (Succeeded)";
    r.conditions = {MC("addedNodeSelectorTermApplied", "False", "TargetPodEscapedGate", msg,
                       kNowText, kNowText)};
    r.changed = true;
    r.events = {{"Warning", "TargetPodEscapedGate", msg}};
    rows.push_back(r);
  }
  {
    Row r{"final Failed before handing over, the pod escaped: said, no node",
          {term3, nullptr, "Failed"},
          {{.gated = false}},
          ThreeNodes()};
    const std::string msg = never + "the migration ended Failed without moving the VMI to it";
    r.conditions = {MC("addedNodeSelectorTermApplied", "False", "TargetPodEscapedGate", msg,
                       kNowText, kNowText)};
    r.changed = true;
    r.events = {{"Warning", "TargetPodEscapedGate", msg}};
    rows.push_back(r);
  }
  {
    // KubeVirt's recorded target pod carries the term: another, escaped, pod with the label
    // (anyone may create one) is not the migration's.
    Row r{"final, recorded pod carries the term, another labelled pod escaped: Applied",
          {term3, nullptr, "Succeeded"},
          {{.gated = false, .affinity = MergedAffinity(), .node = "node-3"},
           {.name = "a-fake", .uid = "uid-a", .gated = false, .node = "node-1"}},
          ThreeNodes()};
    r.target_node = "node-3";
    r.target_pod = kPodName;
    r.conditions = {
        MC("addedNodeSelectorTermApplied", "True", "TermApplied", kAppliedMsg, kNowText, kNowText),
        MC("targetPodUnschedulable", "False", "Scheduled", kScheduledMsg, kNowText, kNowText)};
    r.changed = true;
    r.events = {
        {"Normal", "TermApplied", "Target pod " + kPodRef + " carries the added term " + kTerm3},
        {"Normal", "TargetPodScheduled", kScheduledMsg}};
    rows.push_back(r);
  }
  {
    Row r{"final, the recorded pod still gated, another labelled pod escaped: nothing",
          {term3, nullptr, "Failed"},
          {{}, {.name = "a-fake", .uid = "uid-a", .gated = false, .node = "node-1"}},
          ThreeNodes()};
    r.target_pod = kPodName;
    rows.push_back(r);
  }
  return rows;
}

TEST_CASE("Reconcile plans exactly what each situation needs") {
  auto row = GENERATE(from_range(Rows()));
  CAPTURE(row.name);
  std::vector<api::NodeInfo> nodes;
  Observed o = Build(row, nodes);
  Plan plan = Reconcile(o, kNow);

  std::vector<std::string> patched, deleted;
  for (const auto& p : plan.pod_patches) patched.push_back(p.name);
  for (const auto& d : plan.pod_deletions) deleted.push_back(d.name);
  CHECK(patched == row.patched);
  CHECK(deleted == row.deleted);
  for (const auto& d : plan.pod_deletions) {
    CAPTURE(d.name);
    CHECK(d.uid == (d.name == kPodName ? std::string(kPodUid) : "uid-" + d.name.substr(0, 1)));
    CHECK(d.ns == kNs);
  }
  CHECK(plan.conditions == row.conditions);
  CHECK(plan.conditions_changed == row.changed);
  CHECK(plan.events == row.events);
  CHECK(plan.requeue_after == row.requeue);
}

TEST_CASE("LacksFinalReport: which final VMIMs may still be owed part of their report") {
  struct FRow {
    std::string name;
    std::optional<std::string> term;
    std::string phase;
    json conditions;
    std::string target_node;
    bool owed;
    // With the target pod bound and carrying the term, the plan writes conditions.
    bool writes;
  };
  const json applied = Cond("addedNodeSelectorTermApplied", "True", "TermApplied", kAppliedMsg);
  const json invalid = Cond("addedNodeSelectorTermApplied", "False", "InvalidAddedTerm", "bad");
  const json scheduled = Cond("targetPodUnschedulable", "False", "Scheduled", kScheduledMsg);
  const json unsched = Cond("targetPodUnschedulable", "True", "Unschedulable", kUnschedMsg);
  const std::string term3 = NodeTerm("node-3");
  auto row = GENERATE_COPY(values<FRow>({
      {"not final", term3, "Scheduling", nullptr, "", false, false},
      {"final without a term", std::nullopt, "Succeeded", nullptr, "node-3", false, false},
      {"Succeeded, nothing written", term3, "Succeeded", nullptr, "", true, true},
      {"Failed, nothing written", term3, "Failed", nullptr, "", true, true},
      {"Succeeded, Applied only", term3, "Succeeded", json::array({applied}), "", true, true},
      {"Succeeded, Applied, still Unschedulable", term3, "Succeeded",
       json::array({applied, unsched}), "", true, true},
      {"Succeeded, whole report", term3, "Succeeded", json::array({applied, scheduled}), "", false,
       false},
      // Not owed by the VMIM alone, but the bound pod's own event brings the node.
      {"Failed, Applied, never handed off", term3, "Failed", json::array({applied}), "", false,
       true},
      {"Failed, Applied, handed off to node-3", term3, "Failed", json::array({applied}), "node-3",
       true, true},
      {"Failed, Applied, Unschedulable, never handed off", term3, "Failed",
       json::array({applied, unsched}), "", false, true},
      {"Failed, whole report", term3, "Failed", json::array({applied, scheduled}), "node-3", false,
       false},
      {"Succeeded, escaped pod left alone reported", term3, "Succeeded",
       json::array({Cond("addedNodeSelectorTermApplied", "False", "TargetPodEscapedGate", "x")}),
       "node-3", false, false},
      {"Failed, invalid term reported",
       R"({"matchFields":[{"key":"metadata.name","operator":"Exists"}]})", "Failed",
       json::array({invalid}), "", false, false},
  }));
  CAPTURE(row.name);
  json vmim = Vmim({row.term, nullptr, row.phase, row.conditions});
  if (!row.target_node.empty()) {
    vmim["status"]["migrationState"]["targetNode"] = row.target_node;
    vmim["status"]["migrationState"]["targetPod"] = kPodName;
  }
  Observed o;
  o.vmim = api::MigrationInfo::FromJson(vmim);
  CHECK(LacksFinalReport(o.vmim) == row.owed);

  // Idempotency: with the target pod bound and carrying the term, one plan
  // writes whatever is owed; afterwards nothing is owed and nothing is planned.
  if (!row.term || !o.vmim.Final()) return;
  o.target_pods = {api::TargetPod::FromJson(
      Pod({.gated = false, .affinity = MergedAffinity(), .node = "node-3"}))};
  Plan first = Reconcile(o, kNow);
  CHECK(first.pod_patches.empty());
  CHECK(first.pod_deletions.empty());
  CHECK(first.conditions_changed == row.writes);
  o.vmim.conditions = first.conditions;
  CHECK_FALSE(LacksFinalReport(o.vmim));
  Plan second = Reconcile(o, kNow + seconds(1));
  CHECK(second.Empty());
  CHECK(second.conditions == first.conditions);
}

TEST_CASE("The planned pod patch is guarded, ANDs the term and releases only our gate") {
  std::vector<api::NodeInfo> nodes;
  json own_affinity =
      json::parse(R"({"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution":
      {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]},
        {"matchExpressions": [{"key": "gpu", "operator": "Exists"}]}]}}})");
  json pod = Pod({.affinity = own_affinity});
  pod["spec"]["schedulingGates"].push_back({{"name", "other.example.com/gate"}});
  Row row{"", {NodeTerm("node-3")}, {}, ThreeNodes()};
  Observed o = Build(row, nodes);
  o.target_pods.push_back(api::TargetPod::FromJson(pod));
  Plan plan = Reconcile(o, kNow);
  REQUIRE(plan.pod_patches.size() == 1);
  const PodPatch& patch = plan.pod_patches[0];
  CHECK(patch.uid == kPodUid);
  REQUIRE_FALSE(patch.ops.empty());
  CHECK(patch.ops.front()["op"] == "test");

  json patched = pod.patch(json(patch.ops));
  json field = {{"key", "metadata.name"}, {"operator", "In"}, {"values", {"node-3"}}};
  json expected_terms =
      own_affinity["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
                  ["nodeSelectorTerms"];
  for (auto& t : expected_terms) t["matchFields"] = json::array({field});
  CHECK(patched["spec"]["affinity"]["nodeAffinity"]
               ["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"] ==
        expected_terms);
  CHECK(patched["spec"]["schedulingGates"] == json::array({{{"name", "other.example.com/gate"}}}));
  // Everything else byte for byte.
  json rest = patched;
  json before = pod;
  rest["spec"].erase("affinity");
  rest["spec"].erase("schedulingGates");
  before["spec"].erase("affinity");
  before["spec"].erase("schedulingGates");
  CHECK(rest == before);

  // The same patch on a newer pod version fails its test op.
  json newer = pod;
  newer["metadata"]["resourceVersion"] = "201";
  newer["spec"]["schedulingGates"].push_back({{"name", "late.example.com/gate"}});
  CHECK_THROWS(newer.patch(json(patch.ops)));

  // Planning again on the result: nothing left to do but keep the condition.
  Observed again = o;
  again.target_pods = {api::TargetPod::FromJson(patched)};
  again.vmim.conditions = plan.conditions;
  Plan second = Reconcile(again, kNow + seconds(5));
  CHECK(second.pod_patches.empty());
  CHECK(second.pod_deletions.empty());
  CHECK_FALSE(second.conditions_changed);
  CHECK(second.events.empty());
}

TEST_CASE("Planning is idempotent: applying each row's plan leaves nothing to do") {
  auto row = GENERATE(from_range(Rows()));
  CAPTURE(row.name);
  std::vector<api::NodeInfo> nodes;
  Observed o = Build(row, nodes);
  Plan first = Reconcile(o, kNow);
  // Apply: patched pods take their patch, deleted pods vanish, conditions stored.
  std::vector<api::TargetPod> after;
  for (auto& i : row.pods) {
    json pod = Pod(i);
    bool gone = false;
    for (const auto& d : first.pod_deletions) gone = gone || d.name == i.name;
    if (gone) continue;
    for (const auto& p : first.pod_patches) {
      if (p.name == i.name) pod = pod.patch(json(p.ops));
    }
    after.push_back(api::TargetPod::FromJson(pod));
  }
  o.target_pods = after;
  o.vmim.conditions = first.conditions;
  Plan second = Reconcile(o, kNow + seconds(1));
  CHECK(second.pod_patches.empty());
  CHECK(second.pod_deletions.empty());
  // With one target pod the report is stable too. (With an escaped and an
  // applied pod, deleting the escaped one leaves only the applied one, and the
  // report follows what is left.)
  if (row.pods.size() <= 1) {
    CHECK(second.events.empty());
    CHECK_FALSE(second.conditions_changed);
  }
}

TEST_CASE("Without the nodes, an escape seen after the fact asks for them first") {
  json vmim = Vmim({NodeTerm("node-3"), nullptr, "Succeeded"});
  vmim["status"]["migrationState"]["targetNode"] = "node-1";
  Observed o;
  o.vmim = api::MigrationInfo::FromJson(vmim);
  o.target_pods = {api::TargetPod::FromJson(Pod({.gated = false, .node = "node-1"}))};
  o.nodes_loaded = false;
  Plan plan = Reconcile(o, kNow);
  CHECK(plan.needs_nodes);
  CHECK(plan.Empty());
  CHECK(plan.conditions.empty());
  CHECK(NeedsNodes(o));
  // Moved nowhere: said without the nodes.
  o.vmim.target_node.clear();
  o.vmim.phase = "Failed";
  CHECK_FALSE(NeedsNodes(o));
  CHECK_FALSE(Reconcile(o, kNow).needs_nodes);
}

TEST_CASE("Without the nodes, a VMIM that needs them asks for them and plans nothing else") {
  struct NRow {
    std::string name;
    PodSpec pod;
    bool needs;
  };
  auto row = GENERATE(values<NRow>({
      {"gated", {}, false},
      {"escaped, unscheduled", {.gated = false}, false},
      {"carries the term, bound",
       {.gated = false, .affinity = MergedAffinity(), .node = "node-3"},
       false},
      {"escaped, bound", {.gated = false, .node = "node-1"}, true},
      {"unschedulable",
       {.gated = false,
        .affinity = MergedAffinity(),
        .scheduled_reason = "Unschedulable",
        .scheduled_message = kSchedMsg},
       true},
  }));
  CAPTURE(row.name);
  std::vector<api::NodeInfo> nodes;
  Row r{row.name, {NodeTerm("node-3")}, {row.pod}, ThreeNodes()};
  Observed o = Build(r, nodes);
  o.nodes = {};
  o.nodes_loaded = false;
  Plan plan = Reconcile(o, kNow);
  CHECK(plan.needs_nodes == row.needs);
  CHECK(NeedsNodes(o) == row.needs);
  if (row.needs) {
    CHECK(plan.Empty());
    CHECK(plan.conditions.empty());
  } else {
    CHECK_FALSE(plan.Empty());
  }
}

}  // namespace
}  // namespace kmt::controller

namespace kmt::controller {
namespace {

using namespace kmt::controller::testing;  // NOLINT: test fixtures

// maxInboundPerNode (reconcile.h): a VMIM of policy "spread" with limit `cap`, its term
// allowing the zone=a nodes (node-1, node-3 uncordoned here, node-2 is zone b).
struct Limited {
  std::vector<api::NodeInfo> nodes;
  Observed o;
  Limited(int cap, json own_affinity = nullptr, json node_selector = nullptr) {
    json vmim = Vmim(
        {std::string(R"({"matchExpressions":[{"key":"zone","operator":"In","values":["a"]}]})")});
    vmim["metadata"]["annotations"]["migration-target.kubevirt.io/policy"] = "spread";
    vmim["metadata"]["annotations"]["migration-target.kubevirt.io/max-inbound-per-node"] =
        std::to_string(cap);
    o.vmim = api::MigrationInfo::FromJson(vmim);
    o.target_pods.push_back(api::TargetPod::FromJson(
        Pod({.affinity = std::move(own_affinity), .node_selector = std::move(node_selector)})));
    for (const NodeSpec& n : std::vector<NodeSpec>{{"node-1", {{"zone", "a"}}},
                                                   {"node-2", {{"zone", "b"}}},
                                                   {"node-3", {{"zone", "a"}}}}) {
      nodes.push_back(api::NodeInfo::FromJson(Node(n)));
    }
    o.nodes = nodes;
    o.source_node = kSourceNode;
  }
};

std::vector<json> PatchedAffinity(const Plan& plan) {
  REQUIRE(plan.pod_patches.size() == 1);
  json pod = Pod({});
  pod = pod.patch(json(plan.pod_patches[0].ops));
  return pod["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
            ["nodeSelectorTerms"]
                .get<std::vector<json>>();
}

TEST_CASE("Under maxInboundPerNode the nodes at the limit are excluded from the release") {
  Limited l(1);
  SECTION("nothing inbound: released to every node of the term, both reserved") {
    Plan plan = Reconcile(l.o, kNow);
    std::vector<json> terms = PatchedAffinity(plan);
    REQUIRE(terms.size() == 1);
    CHECK_FALSE(terms[0].contains("matchFields"));
    REQUIRE(plan.reservation);
    CHECK(plan.reservation->pod_uid == kPodUid);
    CHECK(plan.reservation->nodes == std::vector<std::string>{"node-1", "node-3"});
    CHECK_FALSE(plan.waits_for_inbound);
    REQUIRE(plan.events.size() == 1);
    CHECK(plan.events[0].reason == "TermApplied");
  }
  SECTION("node-1 has one bound: it is excluded with a NotIn, node-3 reserved") {
    l.o.inbound = {{"vms/other-target", "node-1", std::nullopt, std::nullopt}};
    Plan plan = Reconcile(l.o, kNow);
    std::vector<json> terms = PatchedAffinity(plan);
    REQUIRE(terms.size() == 1);
    CHECK(terms[0]["matchFields"] ==
          json::parse(R"([{"key":"metadata.name","operator":"NotIn","values":["node-1"]}])"));
    REQUIRE(plan.reservation);
    CHECK(plan.reservation->nodes == std::vector<std::string>{"node-3"});
    REQUIRE(plan.events.size() == 1);
    CHECK(plan.events[0].message.find("nodes at MigrationTargetPolicy \"spread\"'s limit of 1 "
                                      "inbound per node are excluded: node-1") !=
          std::string::npos);
    // The condition is the plain Applied one: a later plan does not rewrite it.
    CHECK(plan.conditions.at(0).message == "Target pod " + std::string(kNs) + "/" + kPodName +
                                               " requires the added term zone In [a]");
  }
  SECTION("an unbound release counts against every node it may land on: the gate stays") {
    l.o.inbound = {{"vms/other-target", "", std::nullopt, std::nullopt}};
    Plan plan = Reconcile(l.o, kNow);
    CHECK(plan.pod_patches.empty());
    CHECK_FALSE(plan.reservation);
    CHECK(plan.waits_for_inbound);
    CHECK(plan.requeue_after == kInboundRefresh);
    REQUIRE(plan.conditions.size() == 1);
    CHECK(plan.conditions[0].type == "addedNodeSelectorTermApplied");
    CHECK(plan.conditions[0].status == "False");
    CHECK(plan.conditions[0].reason == "InboundLimitReached");
    CHECK(plan.conditions[0].message ==
          "MigrationTargetPolicy \"spread\" allows 1 inbound migration per node "
          "(maxInboundPerNode), and every node target pod vms/virt-launcher-vm-1-target may go "
          "to has that many: node-1 1/1 (vms/other-target), node-3 1/1 (vms/other-target); the "
          "scheduling gate stays until one frees up");
    REQUIRE(plan.events.size() == 1);
    CHECK(plan.events[0].type == "Normal");
    CHECK(plan.events[0].reason == "InboundLimitReached");
    // Planned again on the same state: nothing new to write or record.
    l.o.vmim.conditions = plan.conditions;
    Plan again = Reconcile(l.o, kNow + std::chrono::seconds(5));
    CHECK_FALSE(again.conditions_changed);
    CHECK(again.events.empty());
    CHECK(again.waits_for_inbound);
    // Target pods of other namespaces are counted in the message, not named: the VM's
    // owner reads it.
    l.o.inbound = {{"vms/other-target", "", std::nullopt, std::nullopt},
                   {"tenant-b/secret-target", "node-3", std::nullopt, std::nullopt},
                   {"tenant-c/secret-target", "node-3", std::nullopt, std::nullopt}};
    Plan counted = Reconcile(l.o, kNow + std::chrono::seconds(5));
    REQUIRE(counted.conditions.size() == 1);
    CHECK(counted.conditions[0].message ==
          "MigrationTargetPolicy \"spread\" allows 1 inbound migration per node "
          "(maxInboundPerNode), and every node target pod vms/virt-launcher-vm-1-target may go "
          "to has that many: node-1 1/1 (vms/other-target), node-3 3/1 (vms/other-target, 2 in "
          "other namespaces); the scheduling gate stays until one frees up");
    for (const auto& e : counted.events) CHECK(e.message.find("secret") == std::string::npos);
    // node-3 frees up once the other binds to node-1: released, the condition turns True.
    l.o.inbound = {{"vms/other-target", "node-1", std::nullopt, std::nullopt}};
    Plan released = Reconcile(l.o, kNow + std::chrono::seconds(6));
    CHECK(released.pod_patches.size() == 1);
    CHECK(released.conditions.at(0).status == "True");
    CHECK(released.conditions.at(0).reason == "TermApplied");
    REQUIRE(released.events.size() == 1);
    CHECK(released.events[0].reason == "TermApplied");
  }
  SECTION("an unbound pod counts only where its affinity or its reservation lets it land") {
    json only3 = json::parse(
        R"({"nodeSelectorTerms":[{"matchFields":[{"key":"metadata.name","operator":"In","values":["node-3"]}]}]})");
    l.o.inbound = {{"vms/a", "", api::NodeSelectorFromJsonLenient(only3), std::nullopt},
                   {"vms/b", "", std::nullopt, std::vector<std::string>{"node-3"}}};
    Plan plan = Reconcile(l.o, kNow);
    REQUIRE(plan.reservation);
    CHECK(plan.reservation->nodes == std::vector<std::string>{"node-1"});
  }
  SECTION("a limit of 2 counts two") {
    Limited two(2);
    two.o.inbound = {{"vms/a", "node-1", std::nullopt, std::nullopt},
                     {"vms/b", "node-3", std::nullopt, std::nullopt},
                     {"vms/c", "node-3", std::nullopt, std::nullopt}};
    Plan plan = Reconcile(two.o, kNow);
    REQUIRE(plan.reservation);
    CHECK(plan.reservation->nodes == std::vector<std::string>{"node-1"});
    two.o.inbound.push_back({"vms/d", "node-1", std::nullopt, std::nullopt});
    CHECK(Reconcile(two.o, kNow).waits_for_inbound);
  }
  SECTION("the pod's own affinity narrows the nodes that count") {
    Limited own(1,
                json::parse(R"({"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution":
        {"nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["node-1"]}]}]}}})"));
    own.o.inbound = {{"vms/a", "node-3", std::nullopt, std::nullopt}};
    // node-3 is full but the pod may not go there anyway; node-1 is free: released, nothing
    // excluded.
    Plan plan = Reconcile(own.o, kNow);
    REQUIRE(plan.reservation);
    CHECK(plan.reservation->nodes == std::vector<std::string>{"node-1"});
    CHECK(plan.events.at(0).message.find("excluded") == std::string::npos);
    own.o.inbound.push_back({"vms/b", "node-1", std::nullopt, std::nullopt});
    CHECK(Reconcile(own.o, kNow).waits_for_inbound);
  }
  SECTION(
      "a node the pod's node selector (or a taint, a cordon) rules out is neither free nor full") {
    Limited sel(1, nullptr, json{{"kubernetes.io/hostname", "node-3"}});
    sel.o.inbound = {{"vms/a", "node-1", std::nullopt, std::nullopt}};
    Plan plan = Reconcile(sel.o, kNow);
    REQUIRE(plan.reservation);
    CHECK(plan.reservation->nodes == std::vector<std::string>{"node-3"});
    CHECK(plan.events.at(0).message.find("excluded") == std::string::npos);
    // node-3 taken: the pod waits; node-1, where its selector never lets it go, is no way out.
    sel.o.inbound = {{"vms/a", "node-3", std::nullopt, std::nullopt}};
    Plan wait = Reconcile(sel.o, kNow);
    CHECK(wait.waits_for_inbound);
    CHECK(wait.pod_patches.empty());
  }
  SECTION("the node the VM leaves is never counted as free") {
    l.o.source_node = "node-1";
    l.o.inbound = {{"vms/a", "node-3", std::nullopt, std::nullopt}};
    CHECK(Reconcile(l.o, kNow).waits_for_inbound);
  }
  SECTION("no node allowed at all: released as without a limit (the report says why)") {
    Limited none(1);
    none.nodes.clear();
    none.o.nodes = none.nodes;
    Plan plan = Reconcile(none.o, kNow);
    CHECK(plan.pod_patches.size() == 1);
    CHECK_FALSE(plan.reservation);
  }
  SECTION("without the nodes the plan asks for them") {
    l.o.nodes = {};
    l.o.nodes_loaded = false;
    Plan plan = Reconcile(l.o, kNow);
    CHECK(plan.needs_nodes);
    CHECK(plan.Empty());
  }
  SECTION("a limit without a policy name is no limit") {
    l.o.vmim.policy.clear();
    l.o.inbound = {{"vms/other-target", "", std::nullopt, std::nullopt}};
    Plan plan = Reconcile(l.o, kNow);
    CHECK(plan.pod_patches.size() == 1);
    CHECK_FALSE(plan.reservation);
  }
}

TEST_CASE("InboundPodOf: one pod per migration, KubeVirt's target pod first, else the newest") {
  struct P {
    std::string name, created;
    std::string job_uid = kVmimUid;
    std::string ns = kNs;
  };
  struct IRow {
    std::string name;
    std::vector<P> pods;
    std::string target_pod;  // status.migrationState.targetPod
    std::string want;        // "" → none
  };
  const std::string t0 = "2026-01-01T00:00:00Z", t1 = "2026-01-01T00:00:01Z",
                    t2 = "2026-01-01T00:01:00Z";
  auto row = GENERATE_COPY(values<IRow>({
      {"no pod", {}, "", ""},
      {"one pod", {{"target", t0}}, "", "target"},
      {"extra pods with the label, newer: the recorded target pod counts",
       {{"target", t0}, {"fake-1", t1}, {"fake-2", t2}},
       "target",
       "target"},
      {"recorded target pod listed last", {{"fake-1", t2}, {"target", t0}}, "target", "target"},
      {"nothing recorded yet: the newest", {{"a", t0}, {"b", t2}, {"c", t1}}, "", "b"},
      {"recorded pod not among them: the newest", {{"a", t0}, {"b", t1}}, "gone", "b"},
      {"same second: the greater name", {{"a", t1}, {"c", t1}, {"b", t1}}, "", "c"},
      {"pods of another migration or namespace are ignored",
       {{"other-job", t2, "99999999-aaaa-bbbb-cccc-000000000009"},
        {"other-ns", t2, kVmimUid, "elsewhere"},
        {"mine", t0}},
       "",
       "mine"},
      {"only others: none", {{"other-job", t2, "99999999-aaaa-bbbb-cccc-000000000009"}}, "", ""},
  }));
  CAPTURE(row.name);
  json vmim = Vmim({NodeTerm("node-3")});
  if (!row.target_pod.empty()) vmim["status"]["migrationState"]["targetPod"] = row.target_pod;
  const api::MigrationInfo m = api::MigrationInfo::FromJson(vmim);
  std::vector<api::TargetPod> pods;
  for (const P& p : row.pods) {
    json j = Pod({.name = p.name, .uid = "uid-" + p.name, .job_uid = p.job_uid});
    j["metadata"]["creationTimestamp"] = p.created;
    j["metadata"]["namespace"] = p.ns;
    pods.push_back(api::TargetPod::FromJson(j));
  }
  std::vector<const api::TargetPod*> ptrs;
  ptrs.reserve(pods.size());
  for (const auto& p : pods) ptrs.push_back(&p);
  const api::TargetPod* got = InboundPodOf(m, ptrs);
  CHECK((got ? got->name.str() : std::string()) == row.want);
  // The order the cache lists them in does not matter.
  std::ranges::reverse(ptrs);
  got = InboundPodOf(m, ptrs);
  CHECK((got ? got->name.str() : std::string()) == row.want);
}

}  // namespace
}  // namespace kmt::controller
