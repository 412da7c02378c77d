// cli/args.h — the command line of `kubectl migrate`, parsed the way kubectl
// (pflag) parses flags: `--flag=value`, `--flag value`, `-n value`, `-nvalue`,
// booleans as `--wait` or `--wait=false`, flags before or after positionals.
//
//   kubectl migrate NAME [--node NODE] [--selector SEL] [--term-file FILE]
//                   [--exclude-node NODE]... [--dry-run=none|client|server]
//                   [--wait] [--timeout DURATION] [-o name|yaml|json]
//   kubectl migrate explain NAME [--node NODE] [--selector SEL] [--term-file FILE]
//                   [--exclude-node NODE]...
//   kubectl migrate status MIGRATION
//   kubectl migrate cancel MIGRATION|--vmi VMI [--dry-run=none|client|server] [-o name|yaml|json]
//   kubectl migrate list [-A] [-o wide|name|yaml|json]
//   kubectl migrate policy explain NODE [--origin Evacuation|Descheduler] [-o text|json]
//   global: --kubeconfig FILE, --context NAME, -n/--namespace NS, -h/--help
//
// FlagDocs() is the one list of flags: the parser accepts exactly these, the help
// texts name them (a test checks it) and shell completion offers them.
//
// A usage error exits with code 2 (as kubectl does) with "error: <why>".
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <vector>

namespace kmt::cli {

enum class Command { kMigrate, kExplain, kStatus, kCancel, kList, kPolicyExplain, kHelp };
enum class DryRun { kNone, kClient, kServer };

struct Invocation {
  Command command = Command::kHelp;
  Command help_for = Command::kMigrate;  // with kHelp: which help to print
  // VMI name (migrate, explain), VMIM name (status, cancel), node (policy explain), "" (list)
  std::string name;

  // Global (kubeconfig) flags.
  std::string kubeconfig;
  std::string context;
  std::optional<std::string> ns;  // -n; unset = the context's namespace

  // The request; every given flag is ANDed.
  std::optional<std::string> node;
  std::optional<std::string> selector;
  std::optional<std::string> term_file;  // "-" = standard input
  std::vector<std::string> exclude_nodes;

  DryRun dry_run = DryRun::kNone;
  bool wait = false;
  std::chrono::milliseconds timeout{std::chrono::minutes(10)};
  std::string output;  // "", "name", "yaml", "json"; list also "wide"; policy explain "text"

  std::optional<std::string> vmi;  // cancel --vmi: the VMI whose active migration to cancel
  bool all_namespaces = false;     // list -A
  // policy explain --origin: the eviction about to happen, "Evacuation" (kubectl drain, a
  // node taint) or "Descheduler" (the descheduler's eviction in background).
  std::string origin = "Evacuation";

  bool HasRequest() const { return node || selector || term_file || !exclude_nodes.empty(); }
};

struct ArgsParse {
  std::optional<Invocation> invocation;  // set iff error is empty
  std::string error;                     // usage error text, without the "error: " prefix
};

// One flag as the parser, the help texts and shell completion know it.
struct FlagDoc {
  std::string name;               // long name, without "--"
  char shorthand;                 // 0 when there is none
  bool takes_value;               // false for booleans (--wait, -A)
  bool repeatable;                // may be given more than once (--exclude-node)
  std::string usage;              // one line
  bool global;                    // accepted by every command
  std::vector<Command> commands;  // when not global: the commands that accept it
};

// Every flag, in the order help texts list them.
const std::vector<FlagDoc>& FlagDocs();

// Whether `command` accepts `flag`.
bool Accepts(Command command, const FlagDoc& flag);

// The -o formats a command prints, comma-separated ("json,name,yaml"); "" when it has no -o.
const char* OutputFormats(Command command);

// The subcommands, with the one-line description help and completion show. "policy" is
// followed by its own subcommand, "explain" (the only one).
struct SubcommandDoc {
  std::string name;
  Command command;
  std::string summary;
};
const std::vector<SubcommandDoc>& SubcommandDocs();

// args excludes argv[0].
ArgsParse ParseArgs(const std::vector<std::string>& args);

// The help text of a command, in kubectl's layout.
std::string HelpText(Command command);

}  // namespace kmt::cli
