// api/drain_plan.h — what a drain of one node would do to every VM on it: a pure, sequential
// placement model for `kubectl migrate policy explain NODE` (cli/policy_explain_cmd.h).
//
// Fate of a VM (KubeVirt v1.9: pod-eviction-admitter.go admitLauncherPod, migrations.go
// VMIEvictionStrategy / VMIMigratableOnEviction, evacuation.go):
//   strategy = the VMI's spec.evictionStrategy, else the KubeVirt CR's
//              spec.configuration.evictionStrategy, else None (virt-config's default).
//   LiveMigrate            live-migratable (condition LiveMigratable=True) → migrates;
//                          otherwise virt-api denies the eviction → stays, blocks the drain.
//   LiveMigrateIfPossible  live-migratable → migrates; otherwise the eviction goes through.
//   External               virt-api marks the VMI and denies the eviction: it stays until an
//                          external controller moves it → blocks the drain (as far as we know).
//   None                   the eviction goes through.
//   An eviction that goes through is still refused by a PodDisruptionBudget that selects the
//   virt-launcher pod and allows no disruption (status.disruptionsAllowed < 1): the VM then
//   stays and blocks the drain; otherwise it is shut down. (KubeVirt v1.9's
//   disruption-budget controller only deletes the PDBs older releases made for VMIs: only
//   user PDBs count.)
//   A VM that migrates leaves when some node other than the drained one takes its target pod
//   (api/explain.h, with its policy's term ANDed in), else it stays and blocks the drain (its
//   migration stays Pending / the target pod unschedulable) with every node's reasons.
//
// Sequence: virt-controller's evacuation controller creates the evacuation migrations of a
// node concurrently (one goroutine per VMI) and the migration controller starts the pending
// ones from a priority queue (equal priorities for evacuations), so KubeVirt's order is not
// deterministic. The model places the VMs in the order given (the caller sorts them by
// namespace/name) ONE AFTER ANOTHER: each placed target pod is added to the pods bound to its
// node, so its cpu, memory, pod count (and its labels, for anti-affinity and topology
// spread) are gone for the next VM.
//
// Which node: the scheduler's choice among fitting nodes is its scoring, which is not
// modelled; the plan takes the node with the most free cpu and memory left after the
// placement (the mean of both fractions, as kube-scheduler's default LeastAllocated score
// prefers), ties by name. The verdict is feasibility under that choice, not a promise of the
// node.
//
// maxInboundPerNode limits a policy's migrations IN FLIGHT to one node (controller/
// reconcile.h: only non-final migrations count), not the VMs a node takes over a drain: a
// pod whose every allowed node is at the limit keeps its gate until one completes, then
// goes. KubeVirt runs at most `parallel_outbound` migrations out of one node at a time
// (parallelOutboundMigrationsPerNode, default 2, bounded by parallelMigrationsPerCluster,
// default 5), so the plan counts as in flight with a VM the `parallel_outbound - 1` leaving
// VMs placed just before it: nodes where the VM's policy already has its limit of those are
// avoided when another node fits; when none does, the VM waits (VmPlan::waits_for_inbound)
// and still leaves.
//
// Not modelled: scoring, preemption, pods created or deleted meanwhile, migrations already
// running, pods leaving other nodes, the drained node's own pods (KubeVirt never migrates to
// the node being left).
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "api/explain.h"
#include "api/policy.h"
#include "api/projections.h"

namespace kmt::api {

enum class EvictionStrategy : uint8_t { kNone, kLiveMigrate, kLiveMigrateIfPossible, kExternal };
std::string_view ToString(EvictionStrategy s);
// "None", "LiveMigrate", "LiveMigrateIfPossible", "External"; nullopt otherwise.
std::optional<EvictionStrategy> ParseEvictionStrategy(std::string_view s);
inline constexpr EvictionStrategy kDefaultEvictionStrategy = EvictionStrategy::kNone;
inline constexpr int kDefaultParallelOutboundMigrationsPerNode = 2;
inline constexpr int kDefaultParallelMigrationsPerCluster = 5;

// What the KubeVirt CR's spec.configuration says about drains; defaults when absent.
struct DrainConfig {
  EvictionStrategy eviction_strategy = kDefaultEvictionStrategy;
  // Migrations out of one node at a time: parallelOutboundMigrationsPerNode, at most
  // parallelMigrationsPerCluster.
  int parallel_outbound = kDefaultParallelOutboundMigrationsPerNode;
  // Reads spec.configuration.evictionStrategy and .migrations.parallelOutboundMigrationsPerNode
  // / parallelMigrationsPerCluster of a KubeVirt object (null: defaults). Never throws.
  static DrainConfig FromKubeVirt(const nlohmann::json& kubevirt);
};

// The VMI's spec.evictionStrategy when it is a known one, else the cluster's.
EvictionStrategy StrategyOf(const nlohmann::json& vmi, const DrainConfig& config);

// The VMI's LiveMigratable condition: migratable only when status True (KubeVirt's
// vmi.IsMigratable()); otherwise its reason and message ("" when the condition is absent).
struct Migratability {
  bool migratable = false;
  std::string reason, message;
  static Migratability Of(const nlohmann::json& vmi);
};

// The name of the first PodDisruptionBudget in `pdbs` (objects of the pod's namespace) whose
// spec.selector matches `pod_labels` and whose status.disruptionsAllowed is below 1, or
// nullopt. A null selector selects no pod; an empty one ({}) every pod (policy/v1).
std::optional<std::string> BlockingPdb(const nlohmann::json& pod_labels,
                                       std::span<const nlohmann::json> pdbs);

// One VM on the drained node, as the caller read it.
struct DrainVm {
  std::string ns, name;
  EvictionStrategy strategy = kDefaultEvictionStrategy;
  Migratability migratability;
  std::optional<std::string> blocking_pdb;        // BlockingPdb of its virt-launcher pod
  std::optional<TargetPod> pod;                   // nullopt: no running launcher pod
  const MigrationTargetPolicy* policy = nullptr;  // SelectPolicy's choice (may be null)
};

enum class Fate : uint8_t { kLeaves, kStays, kShutDown };
enum class StayReason : uint8_t {
  kNone,           // the VM does not stay
  kPdb,            // a PDB refuses the eviction of a VM that would be shut down
  kNotMigratable,  // LiveMigrate, but LiveMigratable is not True
  kExternal,       // evictionStrategy External
  kNoPlace,        // migrates, but no node takes its target pod at its turn
  kNotModelled,    // migrates, but it has no running virt-launcher pod to model on
};
std::string_view ToString(Fate f);        // "leaves", "stays", "shut down"
std::string_view ToString(StayReason r);  // "", "PodDisruptionBudget", "not live-migratable",
                                          // "evictionStrategy External", "no node left",
                                          // "not modelled"

struct VmPlan {
  std::string ns, name;
  EvictionStrategy strategy = kDefaultEvictionStrategy;
  const MigrationTargetPolicy* policy = nullptr;
  Fate fate = Fate::kShutDown;
  StayReason reason = StayReason::kNone;
  // Why it stays, or why a LiveMigrateIfPossible VM is shut down, in words: the PDB, or
  // LiveMigratable=False with the condition's reason and message.
  std::string detail;
  bool migrates = false;  // its eviction starts a migration (the nodes below are judged)
  // Migrating VMs with a pod: every node but the drained one, at its turn, by name.
  std::vector<NodeExplanation> nodes;
  std::vector<std::string> fitting;  // the nodes that fit at its turn
  std::string placed_on;             // the node the plan put it on ("" unless it leaves)
  bool waits_for_inbound = false;    // every fitting node was at its policy's limit
};

// A node that takes VMs in the plan, after the drain.
struct NodeAfter {
  std::string node;
  int incoming = 0;
  Resources requested;  // pods bound before plus the placed target pods
  Resources allocatable;
};

struct DrainPlan {
  std::vector<VmPlan> vms;       // in the order given
  std::vector<NodeAfter> nodes;  // the nodes that take some VM, by name
  size_t leaving = 0, staying = 0, shut_down = 0;
};

struct DrainInput {
  std::string node;                                // the node being drained
  std::span<const NodeInfo> nodes;                 // every node (the drained one too)
  std::span<const BoundPod> bound;                 // every pod bound to a node
  std::span<const NamespaceInfo> namespaces = {};  // for namespaceSelectors (WantsNamespaces)
  int parallel_outbound = kDefaultParallelOutboundMigrationsPerNode;
  Disclosure disclosure = Disclosure::kEveryNamespace;
};

// The plan of draining `in.node` with `vms` in that order. Pure: no I/O.
DrainPlan PlanDrain(const DrainInput& in, std::span<const DrainVm> vms);

}  // namespace kmt::api
