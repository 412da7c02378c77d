#include "cli/args.h"

#include <algorithm>
#include <functional>

#include "cli/duration.h"

namespace kmt::cli {
namespace {

using Apply = std::function<std::string(Invocation&, const std::string&)>;

std::string SetOnce(std::optional<std::string>& slot, const std::string& flag,
                    const std::string& value, const std::string& hint = {}) {
  if (slot) return "flag " + flag + " may be given only once" + hint;
  if (value.empty()) return "flag " + flag + " needs a non-empty value";
  slot = value;
  return {};
}

std::optional<bool> ParseBool(const std::string& v) {
  if (v == "true" || v == "1" || v == "t" || v == "T" || v == "TRUE" || v == "True") return true;
  if (v == "false" || v == "0" || v == "f" || v == "F" || v == "FALSE" || v == "False") {
    return false;
  }
  return std::nullopt;
}

std::string SetBool(bool& slot, const std::string& flag, const std::string& v) {
  auto b = ParseBool(v);
  if (!b) return "invalid argument \"" + v + "\" for \"--" + flag + "\" flag: not a boolean";
  slot = *b;
  return {};
}

struct Flag {
  FlagDoc doc;
  Apply apply;
};

constexpr Command kMigrate = Command::kMigrate;
constexpr Command kExplain = Command::kExplain;
constexpr Command kCancel = Command::kCancel;
constexpr Command kList = Command::kList;
constexpr Command kPolicyExplain = Command::kPolicyExplain;

const std::vector<Flag>& Table() {
  static const auto* table = new std::vector<Flag>{
      {{"node", 0, true, false, "Only this node.", false, {kMigrate, kExplain}},
       [](Invocation& inv, const std::string& v) {
         return SetOnce(inv.node, "--node", v,
                        "; for a set of nodes use --selector "
                        "'kubernetes.io/hostname in (node-a,node-b)'");
       }},
      {{"selector",
        'l',
        true,
        false,
        "Only nodes matching this label selector (=, ==, !=, in, notin, exists, !key).",
        false,
        {kMigrate, kExplain}},
       [](Invocation& inv, const std::string& v) {
         return SetOnce(inv.selector, "--selector", v);
       }},
      {{"term-file",
        0,
        true,
        false,
        "A NodeSelectorTerm as JSON (\"-\" reads standard input).",
        false,
        {kMigrate, kExplain}},
       [](Invocation& inv, const std::string& v) {
         return SetOnce(inv.term_file, "--term-file", v);
       }},
      {{"exclude-node",
        0,
        true,
        true,
        "Never this node (may be repeated).",
        false,
        {kMigrate, kExplain}},
       [](Invocation& inv, const std::string& v) {
         if (v.empty()) return std::string("flag --exclude-node needs a non-empty value");
         inv.exclude_nodes.push_back(v);
         return std::string();
       }},
      {{"vmi", 0, true, false, "Cancel the active migration of this VMI.", false, {kCancel}},
       [](Invocation& inv, const std::string& v) { return SetOnce(inv.vmi, "--vmi", v); }},
      {{"all-namespaces",
        'A',
        false,
        false,
        "List the migrations of every namespace.",
        false,
        {kList}},
       [](Invocation& inv, const std::string& v) {
         return SetBool(inv.all_namespaces, "all-namespaces", v);
       }},
      {{"dry-run",
        0,
        true,
        false,
        "Must be \"none\", \"server\", or \"client\".",
        false,
        {kMigrate, kCancel}},
       [](Invocation& inv, const std::string& v) {
         if (v == "none") {
           inv.dry_run = DryRun::kNone;
         } else if (v == "client") {
           inv.dry_run = DryRun::kClient;
         } else if (v == "server") {
           inv.dry_run = DryRun::kServer;
         } else {
           return "invalid argument \"" + v +
                  "\" for \"--dry-run\" flag: must be \"none\", \"server\", or \"client\"";
         }
         return std::string();
       }},
      {{"wait",
        0,
        false,
        false,
        "Follow the migration until it succeeds or fails.",
        false,
        {kMigrate}},
       [](Invocation& inv, const std::string& v) { return SetBool(inv.wait, "wait", v); }},
      {{"timeout", 0, true, false, "How long --wait waits.", false, {kMigrate}},
       [](Invocation& inv, const std::string& v) {
         std::string err;
         auto d = ParseDuration(v, &err);
         if (!d) return "invalid argument \"" + v + "\" for \"--timeout\" flag: " + err;
         if (d->count() == 0) return std::string("--timeout must be greater than 0");
         inv.timeout = *d;
         return std::string();
       }},
      {{"output",
        'o',
        true,
        false,
        "Output format: name, yaml, json (list: also wide; policy explain: text, json, yaml).",
        false,
        {kMigrate, kCancel, kList, kPolicyExplain}},
       [](Invocation& inv, const std::string& v) {
         inv.output = v;  // checked per command once the command is known
         return std::string();
       }},
      {{"origin",
        0,
        true,
        false,
        "The eviction to explain: Evacuation (kubectl drain, a node taint) or Descheduler.",
        false,
        {kPolicyExplain}},
       [](Invocation& inv, const std::string& v) {
         if (v != "Evacuation" && v != "Descheduler") {
           return R"(invalid argument ")" + v +
                  R"(" for "--origin" flag: must be "Evacuation" or "Descheduler")";
         }
         inv.origin = v;
         return std::string();
       }},
      {{"context", 0, true, false, "The kubeconfig context to use.", true, {}},
       [](Invocation& inv, const std::string& v) {
         inv.context = v;
         return std::string();
       }},
      {{"kubeconfig", 0, true, false, "Path to the kubeconfig file.", true, {}},
       [](Invocation& inv, const std::string& v) {
         inv.kubeconfig = v;
         return std::string();
       }},
      {{"namespace",
        'n',
        true,
        false,
        "The namespace (default: the context's namespace).",
        true,
        {}},
       [](Invocation& inv, const std::string& v) {
         if (v.empty()) return std::string("flag --namespace needs a non-empty value");
         inv.ns = v;
         return std::string();
       }},
  };
  return *table;
}

const Flag* FindLong(const std::string& name) {
  for (const auto& f : Table()) {
    if (f.doc.name == name) return &f;
  }
  return nullptr;
}

const Flag* FindShort(char c) {
  for (const auto& f : Table()) {
    if (f.doc.shorthand == c) return &f;
  }
  return nullptr;
}

const char* FormatsOf(Command command) {
  switch (command) {
    case Command::kMigrate:
    case Command::kCancel:
      return "json,name,yaml";
    case Command::kList:
      return "json,name,wide,yaml";
    case Command::kPolicyExplain:
      return "json,text,yaml";
    case Command::kExplain:
    case Command::kStatus:
    case Command::kHelp:
      break;
  }
  return "";
}

// The command's form in messages: "NAME", "explain NAME", "list".
std::string UsageOf(Command command) {
  switch (command) {
    case Command::kExplain:
      return "explain NAME";
    case Command::kStatus:
      return "status MIGRATION";
    case Command::kCancel:
      return "cancel";
    case Command::kList:
      return "list";
    case Command::kPolicyExplain:
      return "policy explain NODE";
    case Command::kMigrate:
    case Command::kHelp:
      break;
  }
  return "NAME";
}

bool OutputAllowed(Command command, const std::string& format) {
  std::string allowed = std::string(",") + FormatsOf(command) + ",";
  return allowed.find("," + format + ",") != std::string::npos;
}

}  // namespace

const char* OutputFormats(Command command) { return FormatsOf(command); }

const std::vector<FlagDoc>& FlagDocs() {
  static const auto* docs = [] {
    auto* d = new std::vector<FlagDoc>;
    for (const auto& f : Table()) d->push_back(f.doc);
    return d;
  }();
  return *docs;
}

bool Accepts(Command command, const FlagDoc& flag) {
  return flag.global ||
         std::find(flag.commands.begin(), flag.commands.end(), command) != flag.commands.end();
}

const std::vector<SubcommandDoc>& SubcommandDocs() {
  static const auto* docs = new std::vector<SubcommandDoc>{
      {"explain", Command::kExplain, "Explain, node by node, whether the VMI would fit"},
      {"status", Command::kStatus, "Show a migration's phase, conditions and Events"},
      {"cancel", Command::kCancel, "Cancel a migration (delete its VMIM, as virtctl does)"},
      {"list", Command::kList, "List placed migrations with phase, term, node and conditions"},
      {"policy", Command::kPolicyExplain,
       "Plan a node's drain: can every VM leave, under which policy, to where"},
  };
  return *docs;
}

ArgsParse ParseArgs(const std::vector<std::string>& args) {
  Invocation inv;
  std::vector<std::string> positionals;
  std::vector<std::string> given;  // long names of the flags on the command line
  bool help = false;
  auto fail = [](std::string why) { return ArgsParse{std::nullopt, std::move(why)}; };

  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--") {
      positionals.insert(positionals.end(), args.begin() + static_cast<long>(i) + 1, args.end());
      break;
    }
    if (a == "-h" || a == "--help") {
      help = true;
      continue;
    }
    const Flag* flag = nullptr;
    std::optional<std::string> value;
    if (a.rfind("--", 0) == 0) {
      std::string body = a.substr(2);
      auto eq = body.find('=');
      std::string name = body.substr(0, eq);
      if (eq != std::string::npos) value = body.substr(eq + 1);
      flag = FindLong(name);
      if (flag == nullptr) return fail("unknown flag: --" + name);
    } else if (a.size() >= 2 && a[0] == '-' && a[1] != '-') {
      flag = FindShort(a[1]);
      if (flag == nullptr) {
        return fail("unknown shorthand flag: '" + std::string(1, a[1]) + "' in " + a);
      }
      if (a.size() > 2) value = a[2] == '=' ? a.substr(3) : a.substr(2);
    } else {
      positionals.push_back(a);
      continue;
    }
    if (!value) {
      if (!flag->doc.takes_value) {
        value = "true";
      } else if (flag->doc.name == "dry-run") {
        value = "client";  // kubectl's historical meaning of a bare --dry-run
      } else if (i + 1 < args.size()) {
        value = args[++i];
      } else {
        return fail("flag needs an argument: --" + flag->doc.name);
      }
    }
    std::string err = flag->apply(inv, *value);
    if (!err.empty()) return fail(err);
    given.push_back(flag->doc.name);
  }

  Command command = Command::kMigrate;
  if (!positionals.empty() && positionals[0] == "help") {
    inv.command = Command::kHelp;
    return ArgsParse{inv, {}};
  }
  if (!positionals.empty()) {
    for (const auto& sub : SubcommandDocs()) {
      if (positionals[0] == sub.name) {
        command = sub.command;
        positionals.erase(positionals.begin());
        break;
      }
    }
  }
  if (command == Command::kPolicyExplain) {
    if (!positionals.empty() && positionals[0] == "explain") {
      positionals.erase(positionals.begin());
    } else if (!help) {
      return fail(positionals.empty()
                      ? std::string("policy needs a subcommand: explain")
                      : R"(unknown command ")" + positionals[0] +
                            R"(" for "kubectl migrate policy": the only one is explain)");
    }
  }
  if (help) {
    inv.command = Command::kHelp;
    inv.help_for = command;
    return ArgsParse{inv, {}};
  }
  inv.command = command;
  if (!inv.output.empty() && *OutputFormats(command) != '\0' &&
      !OutputAllowed(command, inv.output)) {
    return fail("unable to match a printer suitable for the output format \"" + inv.output +
                "\", allowed formats are: " + OutputFormats(command));
  }

  for (const std::string& name : given) {
    const FlagDoc& doc = FindLong(name)->doc;
    if (Accepts(command, doc)) continue;
    if (command == Command::kStatus && name == "output") continue;  // status prints one form
    if (command == Command::kExplain) {
      return fail("explain accepts only --node, --selector, --term-file and --exclude-node");
    }
    if (command == Command::kStatus && name != "vmi" && name != "all-namespaces") {
      return fail("status accepts no placement, --dry-run or --wait flags");
    }
    return fail("flag --" + name + " does not apply to 'kubectl migrate " + UsageOf(command) + "'");
  }

  if (command == Command::kList) {
    if (!positionals.empty()) {
      return fail("list takes no arguments, got " + std::to_string(positionals.size()));
    }
    return ArgsParse{inv, {}};
  }
  if (command == Command::kCancel) {
    if (positionals.size() > 1) {
      return fail("exactly one MIGRATION is required, got " + std::to_string(positionals.size()));
    }
    if (positionals.empty() && !inv.vmi) return fail("cancel needs a MIGRATION or --vmi VMI");
    if (!positionals.empty() && inv.vmi) {
      return fail("cancel takes a MIGRATION or --vmi VMI, not both");
    }
    if (!positionals.empty()) inv.name = positionals[0];
    return ArgsParse{inv, {}};
  }

  const char* what = command == Command::kStatus          ? "MIGRATION"
                     : command == Command::kPolicyExplain ? "NODE"
                                                          : "NAME";
  if (positionals.empty()) {
    if (command == Command::kMigrate && args.empty()) {
      inv.command = Command::kHelp;
      return ArgsParse{inv, {}};
    }
    return fail(std::string("exactly one ") + what + " is required, got 0");
  }
  if (positionals.size() > 1) {
    return fail(std::string("exactly one ") + what + " is required, got " +
                std::to_string(positionals.size()));
  }
  inv.name = positionals[0];

  switch (command) {
    case Command::kMigrate:
      if (!inv.HasRequest()) {
        return fail(
            "one of --node, --selector, --term-file or --exclude-node is required; "
            "for a migration without placement use 'virtctl migrate'");
      }
      if (inv.wait && inv.dry_run != DryRun::kNone) {
        return fail("--wait cannot be combined with --dry-run");
      }
      break;
    case Command::kExplain:
      break;
    case Command::kStatus:
      if (inv.HasRequest() || inv.dry_run != DryRun::kNone || inv.wait) {
        return fail("status accepts no placement, --dry-run or --wait flags");
      }
      break;
    case Command::kCancel:
    case Command::kList:
    case Command::kPolicyExplain:
    case Command::kHelp:
      break;
  }
  return ArgsParse{inv, {}};
}

std::string HelpText(Command command) {
  switch (command) {
    case Command::kExplain:
      return R"(Explain, node by node, whether the VMI's migration target pod would fit.

Reads the VMI, its virt-launcher pod, the nodes and the pods bound to them, and prints for
every node the request allows either "fits" or every reason it does not (cordoned, not Ready,
untolerated taint, the VM's own nodeSelector or affinity, the VM already runs there,
insufficient cpu/memory/pods/devices). With no request flag, every node is explained.

Examples:
  # Would VMI "db-1" fit on node "worker-3"?
  kubectl migrate explain db-1 --node worker-3

  # Which nodes of the fast pool could take it?
  kubectl migrate explain db-1 --selector 'pool=fast'

Options:
      --exclude-node=[]: Never this node (may be repeated).
      --node='': Only this node.
  -l, --selector='': Only nodes matching this label selector (=, ==, !=, in, notin, exists, !key).
      --term-file='': A NodeSelectorTerm as JSON ("-" reads standard input).

Usage:
  kubectl migrate explain NAME [options]
)";
    case Command::kStatus:
      return R"(Show a migration: phase, source and target node, the operator's conditions and recent Events.

Examples:
  kubectl migrate status db-1-migration-x7k2p -n production

Usage:
  kubectl migrate status MIGRATION [options]
)";
    case Command::kCancel:
      return R"(Cancel a migration: delete its VirtualMachineInstanceMigration, as 'virtctl migrate-cancel' does.

KubeVirt's virt-controller sees the deletion and aborts the migration; the VM keeps running on its
source node. With --vmi, the active (not yet Succeeded or Failed) migration of that VMI is found
by KubeVirt's label kubevirt.io/vmi-name. A migration that already ended is not deleted.

Examples:
  # Cancel the migration db-1-migration-x7k2p
  kubectl migrate cancel db-1-migration-x7k2p -n production

  # Cancel whatever migration of VMI "db-1" is in flight
  kubectl migrate cancel --vmi db-1

Options:
      --dry-run='none': Must be "none", "server", or "client".
  -o, --output='': One of: name, yaml, json.
      --vmi='': Cancel the active migration of this VMI.

Usage:
  kubectl migrate cancel MIGRATION [options]
  kubectl migrate cancel --vmi VMI [options]
)";
    case Command::kList:
      return R"(List placed migrations: those carrying migration-target.kubevirt.io/added-node-selector-term.

Columns: the VMI, KubeVirt's phase, the requested term, the node the target pod was placed on,
this operator's two conditions (addedNodeSelectorTermApplied, targetPodUnschedulable) and the age.
-o wide adds the source node, the target pod and the conditions' reasons.

Examples:
  kubectl migrate list -n production
  kubectl migrate list -A -o wide

Options:
  -A, --all-namespaces=false: List the migrations of every namespace.
  -o, --output='': One of: wide, name, yaml, json.

Usage:
  kubectl migrate list [options]
)";
    case Command::kPolicyExplain:
      return R"(Plan a drain of NODE: can every VM on it leave, and which would hold the drain?

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

Options:
      --origin='Evacuation': The eviction to explain: Evacuation (kubectl drain, a node taint) or Descheduler.
  -o, --output='': One of: text, json, yaml.

Usage:
  kubectl migrate policy explain NODE [options]
)";
    case Command::kMigrate:
    case Command::kHelp:
      break;
  }
  return R"(Live-migrate a VirtualMachineInstance to a node you choose.

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

Available Commands:
  cancel      Cancel a migration (delete its VMIM, as virtctl does)
  explain     Explain, node by node, whether the VMI would fit
  list        List placed migrations with phase, term, node and conditions
  policy      Plan a node's drain: can every VM leave, under which policy, to where
  status      Show a migration's phase, conditions and Events

Options:
      --dry-run='none': Must be "none", "server", or "client".
      --exclude-node=[]: Never this node (may be repeated).
      --node='': Only this node.
  -o, --output='': One of: name, yaml, json.
  -l, --selector='': Only nodes matching this label selector (=, ==, !=, in, notin, exists, !key).
      --term-file='': A NodeSelectorTerm as JSON ("-" reads standard input).
      --timeout=10m0s: How long --wait waits.
      --wait=false: Follow the migration until it succeeds or fails.

Shell completion: put kubectl_complete-migrate next to kubectl-migrate on PATH (kubectl >= 1.26).

Global options:
      --context='': The kubeconfig context to use.
      --kubeconfig='': Path to the kubeconfig file.
  -n, --namespace='': The namespace (default: the context's namespace).

Usage:
  kubectl migrate NAME [options]
  kubectl migrate [command] [options]
)";
}

}  // namespace kmt::cli
