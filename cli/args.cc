#include "cli/args.h"

#include <functional>
#include <map>

#include "cli/duration.h"

namespace kmt::cli {
namespace {

enum class FlagKind { kString, kBool };

struct FlagSpec {
  FlagKind kind;
  // Applies a value; returns an error text or "".
  std::function<std::string(Invocation&, const std::string&)> apply;
};

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

const std::map<std::string, FlagSpec>& Flags() {
  static const auto* flags = new std::map<std::string, FlagSpec>{
      {"kubeconfig",
       {FlagKind::kString,
        [](Invocation& inv, const std::string& v) {
          inv.kubeconfig = v;
          return std::string();
        }}},
      {"context",
       {FlagKind::kString,
        [](Invocation& inv, const std::string& v) {
          inv.context = v;
          return std::string();
        }}},
      {"namespace",
       {FlagKind::kString,
        [](Invocation& inv, const std::string& v) {
          if (v.empty()) return std::string("flag --namespace needs a non-empty value");
          inv.ns = v;
          return std::string();
        }}},
      {"node",
       {FlagKind::kString,
        [](Invocation& inv, const std::string& v) {
          return SetOnce(inv.node, "--node", v,
                         "; for a set of nodes use --selector "
                         "'kubernetes.io/hostname in (node-a,node-b)'");
        }}},
      {"selector",
       {FlagKind::kString,
        [](Invocation& inv, const std::string& v) {
          return SetOnce(inv.selector, "--selector", v);
        }}},
      {"term-file",
       {FlagKind::kString,
        [](Invocation& inv, const std::string& v) {
          return SetOnce(inv.term_file, "--term-file", v);
        }}},
      {"exclude-node",
       {FlagKind::kString,
        [](Invocation& inv, const std::string& v) {
          if (v.empty()) return std::string("flag --exclude-node needs a non-empty value");
          inv.exclude_nodes.push_back(v);
          return std::string();
        }}},
      {"dry-run",
       {FlagKind::kString,
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
        }}},
      {"wait",
       {FlagKind::kBool,
        [](Invocation& inv, const std::string& v) {
          auto b = ParseBool(v);
          if (!b) return "invalid argument \"" + v + "\" for \"--wait\" flag: not a boolean";
          inv.wait = *b;
          return std::string();
        }}},
      {"timeout",
       {FlagKind::kString,
        [](Invocation& inv, const std::string& v) {
          std::string err;
          auto d = ParseDuration(v, &err);
          if (!d) return "invalid argument \"" + v + "\" for \"--timeout\" flag: " + err;
          if (d->count() == 0) return std::string("--timeout must be greater than 0");
          inv.timeout = *d;
          return std::string();
        }}},
      {"output",
       {FlagKind::kString,
        [](Invocation& inv, const std::string& v) {
          if (v != "name" && v != "yaml" && v != "json") {
            return "unable to match a printer suitable for the output format \"" + v +
                   "\", allowed formats are: json,name,yaml";
          }
          inv.output = v;
          return std::string();
        }}},
  };
  return *flags;
}

const std::map<char, std::string>& Shorthands() {
  static const auto* s =
      new std::map<char, std::string>{{'n', "namespace"}, {'o', "output"}, {'l', "selector"}};
  return *s;
}

}  // namespace

ArgsParse ParseArgs(const std::vector<std::string>& args) {
  Invocation inv;
  std::vector<std::string> positionals;
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
    std::string name;
    std::optional<std::string> value;
    if (a.rfind("--", 0) == 0) {
      std::string body = a.substr(2);
      auto eq = body.find('=');
      name = body.substr(0, eq);
      if (eq != std::string::npos) value = body.substr(eq + 1);
      if (!Flags().count(name)) return fail("unknown flag: --" + name);
    } else if (a.size() >= 2 && a[0] == '-' && a[1] != '-') {
      auto it = Shorthands().find(a[1]);
      if (it == Shorthands().end()) {
        return fail("unknown shorthand flag: '" + std::string(1, a[1]) + "' in " + a);
      }
      name = it->second;
      if (a.size() > 2) value = a[2] == '=' ? a.substr(3) : a.substr(2);
    } else {
      positionals.push_back(a);
      continue;
    }
    const FlagSpec& spec = Flags().at(name);
    if (!value) {
      if (spec.kind == FlagKind::kBool) {
        value = "true";
      } else if (name == "dry-run") {
        value = "client";  // kubectl's historical meaning of a bare --dry-run
      } else if (i + 1 < args.size()) {
        value = args[++i];
      } else {
        return fail("flag needs an argument: --" + name);
      }
    }
    std::string err = spec.apply(inv, *value);
    if (!err.empty()) return fail(err);
  }

  Command command = Command::kMigrate;
  if (!positionals.empty() && (positionals[0] == "explain" || positionals[0] == "status")) {
    command = positionals[0] == "explain" ? Command::kExplain : Command::kStatus;
    positionals.erase(positionals.begin());
  } else if (!positionals.empty() && positionals[0] == "help") {
    inv.command = Command::kHelp;
    return ArgsParse{inv, {}};
  }
  if (help) {
    inv.command = Command::kHelp;
    inv.help_for = command;
    return ArgsParse{inv, {}};
  }
  const char* what = command == Command::kStatus ? "MIGRATION" : "NAME";
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
  inv.command = command;
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
      if (inv.dry_run != DryRun::kNone || inv.wait || !inv.output.empty()) {
        return fail("explain accepts only --node, --selector, --term-file and --exclude-node");
      }
      break;
    case Command::kStatus:
      if (inv.HasRequest() || inv.dry_run != DryRun::kNone || inv.wait) {
        return fail("status accepts no placement, --dry-run or --wait flags");
      }
      break;
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

Available Commands:
  explain     Explain, node by node, whether the VMI would fit
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
