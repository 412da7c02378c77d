#include "cli/flag_table.h"

#include <algorithm>

#include "cli/duration.h"

namespace kmt::cli {
namespace {

using Check = std::function<std::string(const std::string&)>;
using Set = std::function<std::string(Invocation&, const std::string&)>;

std::string InvalidArgument(const std::string& flag, const std::string& v, const std::string& why) {
  return "invalid argument \"" + v + "\" for \"--" + flag + "\" flag: " + why;
}

Check NonEmpty(const std::string& flag) {
  return [flag](const std::string& v) {
    return v.empty() ? "flag --" + flag + " needs a non-empty value" : std::string();
  };
}

// pflag's booleans (strconv.ParseBool).
std::optional<bool> ParseBool(const std::string& v) {
  if (v == "true" || v == "1" || v == "t" || v == "T" || v == "TRUE" || v == "True") return true;
  if (v == "false" || v == "0" || v == "f" || v == "F" || v == "FALSE" || v == "False") {
    return false;
  }
  return std::nullopt;
}

Check Bool(const std::string& flag) {
  return [flag](const std::string& v) {
    return ParseBool(v) ? std::string() : InvalidArgument(flag, v, "not a boolean");
  };
}

Check OneOf(const std::string& flag, const std::vector<std::string>& allowed,
            const std::string& must) {
  return [=](const std::string& v) {
    return std::ranges::find(allowed, v) != allowed.end() ? std::string()
                                                          : InvalidArgument(flag, v, must);
  };
}

// A flag given at most once; `hint` follows the error of a second one.
Set Once(std::optional<std::string> Invocation::*slot, const std::string& flag,
         const std::string& hint = {}) {
  return [=](Invocation& inv, const std::string& v) {
    if (inv.*slot) return "flag --" + flag + " may be given only once" + hint;
    inv.*slot = v;
    return std::string();
  };
}

template <typename T>
Set Assign(T Invocation::*slot) {
  return [=](Invocation& inv, const std::string& v) {
    inv.*slot = v;
    return std::string();
  };
}

Set AssignBool(bool Invocation::*slot) {
  return [=](Invocation& inv, const std::string& v) {
    inv.*slot = *ParseBool(v);
    return std::string();
  };
}

// The flag table: every flag of every command, in the order completion offers them.
const std::vector<FlagDoc>& Table() {
  static const auto* table = new std::vector<FlagDoc>{
      {.name = "node",
       .usage = "Only this node.",
       .shown_default = "''",
       .values = ValueKind::kNodes,
       .check = NonEmpty("node"),
       .set =
           Once(&Invocation::node, "node",
                "; for a set of nodes use --selector 'kubernetes.io/hostname in (node-a,node-b)'")},
      {.name = "selector",
       .shorthand = 'l',
       .usage = "Only nodes matching this label selector (=, ==, !=, in, notin, exists, !key).",
       .shown_default = "''",
       .values = ValueKind::kSelector,
       .check = NonEmpty("selector"),
       .set = Once(&Invocation::selector, "selector")},
      {.name = "term-file",
       .usage = "A NodeSelectorTerm as JSON (\"-\" reads standard input).",
       .shown_default = "''",
       .values = ValueKind::kFiles,
       .check = NonEmpty("term-file"),
       .set = Once(&Invocation::term_file, "term-file")},
      {.name = "exclude-node",
       .usage = "Never this node (may be repeated).",
       .shown_default = "[]",
       .repeatable = true,
       .values = ValueKind::kNodes,
       .check = NonEmpty("exclude-node"),
       .set =
           [](Invocation& inv, const std::string& v) {
             inv.exclude_nodes.push_back(v);
             return std::string();
           }},
      {.name = "vmi",
       .usage = "Cancel the active migration of this VMI.",
       .shown_default = "''",
       .values = ValueKind::kVmis,
       .check = NonEmpty("vmi"),
       .set = Once(&Invocation::vmi, "vmi")},
      {.name = "all-namespaces",
       .shorthand = 'A',
       .usage = "List the migrations of every namespace.",
       .shown_default = "false",
       .bare = "true",
       .check = Bool("all-namespaces"),
       .set = AssignBool(&Invocation::all_namespaces)},
      {.name = "dry-run",
       .usage = R"(Must be "none", "server", or "client".)",
       .shown_default = "'none'",
       .bare = "client",  // kubectl's historical meaning of a bare --dry-run
       .values = ValueKind::kChoices,
       .choices = {"none", "client", "server"},
       .check = OneOf("dry-run", {"none", "client", "server"},
                      R"(must be "none", "server", or "client")"),
       .set =
           [](Invocation& inv, const std::string& v) {
             inv.dry_run = v == "client"   ? DryRun::kClient
                           : v == "server" ? DryRun::kServer
                                           : DryRun::kNone;
             return std::string();
           }},
      {.name = "wait",
       .usage = "Follow the migration until it succeeds or fails.",
       .shown_default = "false",
       .bare = "true",
       .check = Bool("wait"),
       .set = AssignBool(&Invocation::wait)},
      {.name = "timeout",
       .usage = "How long --wait waits.",
       .shown_default = "10m0s",
       .check =
           [](const std::string& v) {
             std::string err;
             auto d = ParseDuration(v, &err);
             if (!d) return InvalidArgument("timeout", v, err);
             if (d->count() == 0) return std::string("--timeout must be greater than 0");
             return std::string();
           },
       .set =
           [](Invocation& inv, const std::string& v) {
             std::string err;
             inv.timeout = *ParseDuration(v, &err);
             return err;
           }},
      {.name = "output",
       .shorthand = 'o',
       .usage =
           "Output format: name, yaml, json (list: also wide; policy explain: text, json, yaml).",
       .shown_default = "''",
       .values = ValueKind::kChoices,  // the command's output_formats, checked once it is known
       .set = Assign(&Invocation::output)},
      {.name = "origin",
       .usage = "The eviction to explain: Evacuation (kubectl drain, a node taint) or Descheduler.",
       .shown_default = "'Evacuation'",
       .values = ValueKind::kChoices,
       .choices = {"Evacuation", "Descheduler"},
       .check = OneOf("origin", {"Evacuation", "Descheduler"},
                      R"(must be "Evacuation" or "Descheduler")"),
       .set = Assign(&Invocation::origin)},
      {.name = "context",
       .usage = "The kubeconfig context to use.",
       .shown_default = "''",
       .global = true,
       .set = Assign(&Invocation::context)},
      {.name = "kubeconfig",
       .usage = "Path to the kubeconfig file.",
       .shown_default = "''",
       .global = true,
       .values = ValueKind::kFiles,
       .set = Assign(&Invocation::kubeconfig)},
      {.name = "namespace",
       .shorthand = 'n',
       .usage = "The namespace (default: the context's namespace).",
       .shown_default = "''",
       .global = true,
       .values = ValueKind::kNamespaces,
       .check = NonEmpty("namespace"),
       .set = Assign(&Invocation::ns)},
  };
  return *table;
}

// The command tables: each command's help text, usage and the flags it accepts.
const std::vector<CommandDoc>& CommandTable() {
  static const auto* commands = new std::vector<CommandDoc>{
      {.command = Command::kMigrate,
       .about = R"(Live-migrate a VirtualMachineInstance to a node you choose.

Creates a VirtualMachineInstanceMigration carrying the annotation
migration-target.kubevirt.io/added-node-selector-term. The request only narrows where the VM
may go: it is ANDed with every constraint the VM owner set. Requires "use" on
addednodeselectorterms.migration-target.kubevirt.io in the VMI's namespace.

Examples:
  # Move VMI "db-1" to node "worker-3" and wait for the migration to finish
  kubectl migrate db-1 --node worker-3 --wait

  # Move it to any node of a pool except worker-5
  kubectl migrate db-1 --selector 'pool=fast,zone in (a,b)' --exclude-node worker-5

  # Show the migration that would be created, as the API server would store it
  kubectl migrate db-1 --node worker-3 --dry-run=server -o yaml

  # Before migrating: would it fit?
  kubectl migrate explain db-1 --node worker-3

  # Before draining a node: can every VM leave, and which MigrationTargetPolicy sends it where?
  kubectl migrate policy explain worker-3
)",
       .usage = {"kubectl migrate NAME [options]", "kubectl migrate [command] [options]"},
       .flags = {"node", "selector", "term-file", "exclude-node", "dry-run", "wait", "timeout",
                 "output"},
       .output_formats = {"name", "yaml", "json"}},
      {.command = Command::kExplain,
       .path = "explain",
       .summary = "Explain, node by node, whether the VMI would fit",
       .about = R"(Explain, node by node, whether the VMI's migration target pod would fit.

Reads the VMI, its virt-launcher pod, the nodes and the pods bound to them, and prints for
every node the request allows either "fits" or every reason it does not (cordoned, not Ready,
untolerated taint, the VM's own nodeSelector or affinity, the VM already runs there,
insufficient cpu/memory/pods/devices). With no request flag, every node is explained.

Examples:
  # Would VMI "db-1" fit on node "worker-3"?
  kubectl migrate explain db-1 --node worker-3

  # Which nodes of the fast pool could take it?
  kubectl migrate explain db-1 --selector 'pool=fast'
)",
       .usage = {"kubectl migrate explain NAME [options]"},
       .flags = {"node", "selector", "term-file", "exclude-node"}},
      {.command = Command::kStatus,
       .path = "status",
       .summary = "Show a migration's phase, conditions and Events",
       .about =
           R"(Show a migration: phase, source and target node, the operator's conditions and recent Events.

Examples:
  kubectl migrate status db-1-migration-x7k2p -n production
)",
       .usage = {"kubectl migrate status MIGRATION [options]"}},
      {.command = Command::kCancel,
       .path = "cancel",
       .summary = "Cancel a migration (delete its VMIM, as virtctl does)",
       .about =
           R"(Cancel a migration: delete its VirtualMachineInstanceMigration, as 'virtctl migrate-cancel' does.

KubeVirt's virt-controller sees the deletion and aborts the migration; the VM keeps running on its
source node. With --vmi, the active (not yet Succeeded or Failed) migration of that VMI is found
by KubeVirt's label kubevirt.io/vmi-name. A migration that already ended is not deleted.

Examples:
  # Cancel the migration db-1-migration-x7k2p
  kubectl migrate cancel db-1-migration-x7k2p -n production

  # Cancel whatever migration of VMI "db-1" is in flight
  kubectl migrate cancel --vmi db-1
)",
       .usage = {"kubectl migrate cancel MIGRATION [options]",
                 "kubectl migrate cancel --vmi VMI [options]"},
       .flags = {"vmi", "dry-run", "output"},
       .output_formats = {"name", "yaml", "json"}},
      {.command = Command::kList,
       .path = "list",
       .summary = "List placed migrations with phase, term, node and conditions",
       .about =
           R"(List placed migrations: those carrying migration-target.kubevirt.io/added-node-selector-term.

Columns: the VMI, KubeVirt's phase, the requested term, the node the target pod was placed on,
this operator's two conditions (addedNodeSelectorTermApplied, targetPodUnschedulable) and the age.
-o wide adds the source node, the target pod and the conditions' reasons.

Examples:
  kubectl migrate list -n production
  kubectl migrate list -A -o wide
)",
       .usage = {"kubectl migrate list [options]"},
       .flags = {"all-namespaces", "output"},
       .output_formats = {"wide", "name", "yaml", "json"}},
      {.command = Command::kPolicyExplain,
       .path = "policy explain",
       .summary = "Plan a node's drain: can every VM leave, under which policy, to where",
       .about = R"(Plan a drain of NODE: can every VM on it leave, and which would hold the drain?

For every VMI running on NODE (in every namespace, or only -n's), says what a drain would do
to it: leave by live migration, stay and block the drain (evictionStrategy None or
LiveMigrateIfPossible held by a PodDisruptionBudget, LiveMigrate but not live-migratable with
its LiveMigratable reason, External, or no node left for it), or be shut down. The strategy
is the VMI's spec.evictionStrategy, else the KubeVirt CR's, else KubeVirt's default (None).
For each VM that migrates it names the MigrationTargetPolicy that would steer it, chosen
exactly as the operator's webhook chooses it (origin, the labels of NODE, of the VMI's
namespace and of the VMI; highest spec.priority, then name), or says "no policy: the
scheduler alone decides"; then, node by node (NODE itself excluded, as KubeVirt excludes it),
whether its target pod would fit, ANDed with that policy's term. Policies that do not parse
are listed as skipped, with their first cause, as the webhook skips them.

Before maintenance: the VMs are placed one after another (namespace/name order; KubeVirt's
own order is not deterministic), so the cpu, memory and pods each placement takes are gone
for the next; a policy's maxInboundPerNode limits migrations in flight (it delays a VM, it
never holds it). The summary counts the VMs that can leave, would stay (and why) or are shut
down, and lists the nodes that take VMs with cpu/memory requested against allocatable. The
plan predicts feasibility, not the node the scheduler picks: scoring, preemption, pods
created or deleted meanwhile and migrations already running are not modelled.

Exit status: 0 every VM leaves or is shut down, 3 some VM would stay and hold the drain,
1 an API error, 2 a usage error.

Examples:
  # Before 'kubectl drain worker-3': will every VM find a place?
  kubectl migrate policy explain worker-3 && kubectl drain worker-3 --ignore-daemonsets

  # Before the descheduler evicts from worker-3, as JSON
  kubectl migrate policy explain worker-3 --origin Descheduler -o json
)",
       .usage = {"kubectl migrate policy explain NODE [options]"},
       .flags = {"output", "origin"},
       .output_formats = {"text", "json", "yaml"}},
  };
  return *commands;
}

std::string Join(const std::vector<std::string>& parts, const std::string& sep) {
  std::string out;
  for (const auto& p : parts) out += (out.empty() ? "" : sep) + p;
  return out;
}

}  // namespace

const std::vector<CommandDoc>& Commands() { return CommandTable(); }

const CommandDoc& CommandOf(Command command) {
  for (const auto& c : CommandTable()) {
    if (c.command == command) return c;
  }
  return CommandTable()[0];
}

const std::vector<FlagDoc>& FlagDocs() { return Table(); }

const FlagDoc* FindFlag(const std::string& name) {
  for (const auto& f : Table()) {
    if (f.name == name) return &f;
  }
  return nullptr;
}

const FlagDoc* FindFlag(char shorthand) {
  for (const auto& f : Table()) {
    if (f.shorthand == shorthand) return &f;
  }
  return nullptr;
}

std::string HelpLine(Command command, const FlagDoc& flag) {
  if (flag.name != "output") return flag.usage;
  return "One of: " + Join(CommandOf(command).output_formats, ", ") + ".";
}

bool Accepts(Command command, const FlagDoc& flag) {
  if (flag.global) return true;
  const auto& flags = CommandOf(command).flags;
  return command != Command::kHelp && std::ranges::find(flags, flag.name) != flags.end();
}

std::string OutputFormats(Command command) {
  if (command == Command::kHelp) return "";
  auto formats = CommandOf(command).output_formats;
  std::ranges::sort(formats);
  return Join(formats, ",");
}

const std::vector<SubcommandDoc>& SubcommandDocs() {
  static const auto* docs = [] {
    auto* d = new std::vector<SubcommandDoc>;
    for (const auto& c : CommandTable()) {
      if (c.path.empty()) continue;
      d->push_back({c.path.substr(0, c.path.find(' ')), c.command, c.summary});
    }
    return d;
  }();
  return *docs;
}

}  // namespace kmt::cli
