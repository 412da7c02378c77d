// cli/flag_table.h — what `kubectl migrate` accepts, declared once: the flag table (each
// flag's names, value, check, where its value goes, help line, default shown and what
// completion offers) and the command table (each command's help text, usage and the flags it
// accepts). cli/args.h parses with CLI11 from these tables and renders the help texts from
// them; cli/completion.h completes from them.
//
// A new flag: its row in flag_table.cc (and its Invocation member), its name in the tables of
// the commands that accept it, and its use in those commands.
#pragma once

#include <chrono>
#include <functional>
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

// What shell completion offers as a flag's value (cli/completion.h asks the cluster).
enum class ValueKind {
  kNothing,     // nothing to offer (--timeout, --context)
  kFiles,       // the shell's file completion
  kNodes,       // node names
  kSelector,    // a label selector over the nodes
  kNamespaces,  // namespace names
  kVmis,        // VMI names
  kChoices,     // FlagDoc::choices (-o: the command's formats)
};

// One row of the flag table: what CLI11 parses and validates (cli/args.cc), what the help
// texts and shell completion show.
struct FlagDoc {
  std::string name;    // long name, without "--"
  char shorthand = 0;  // 0 when there is none
  std::string usage;   // one line, shown by completion (and by help unless the command's differs)
  std::string shown_default = {};  // the "=..." of kubectl's help: "''", "[]", "false", "10m0s"
  // A flag that may stand alone (--wait, -A, --dry-run): the value it then means; it takes
  // a value only as --flag=value. Empty: the flag takes a value (--flag=value, --flag value).
  std::string bare = {};
  bool repeatable = false;  // may be given more than once (--exclude-node)
  bool global = false;      // accepted by every command (--kubeconfig, --context, -n)
  ValueKind values = ValueKind::kNothing;
  std::vector<std::string> choices = {};  // with ValueKind::kChoices (-o: empty, the command's)
  // A value's check ("" = valid, else the usage error) and where a valid value goes ("" or
  // the usage error of a value given again).
  std::function<std::string(const std::string& value)> check = {};
  std::function<std::string(Invocation&, const std::string& value)> set = {};

  bool takes_value() const { return bare.empty(); }
};

// A command and its table: the flags it accepts (besides the global ones), in the order
// completion offers them, and its help text around the generated option lists.
struct CommandDoc {
  Command command;
  std::string path = {};     // "" (kubectl migrate NAME), "explain", ..., "policy explain"
  std::string summary = {};  // the line of "Available Commands"
  std::string about;         // the help text before the option lists (description, examples)
  std::vector<std::string> usage = {};           // the lines of the help's "Usage:"
  std::vector<std::string> flags = {};           // long names of the FlagDocs it accepts
  std::vector<std::string> output_formats = {};  // -o's formats in help order; empty: no -o
};

// The commands, the main one (kMigrate) first.
const std::vector<CommandDoc>& Commands();
const CommandDoc& CommandOf(Command command);

// Every flag once: the commands' flags in table order, then the global ones.
const std::vector<FlagDoc>& FlagDocs();

// The flag of this long name or shorthand; null when there is none.
const FlagDoc* FindFlag(const std::string& name);
const FlagDoc* FindFlag(char shorthand);

// The flag's line in the command's help: its usage, for -o the command's formats.
std::string HelpLine(Command command, const FlagDoc& flag);

// Whether `command` accepts `flag`.
bool Accepts(Command command, const FlagDoc& flag);

// The -o formats a command prints, sorted, comma-separated ("json,name,yaml"); "" when it
// has no -o.
std::string OutputFormats(Command command);

// The subcommands, with the one-line description help and completion show. "policy" is
// followed by its own subcommand, "explain" (the only one).
struct SubcommandDoc {
  std::string name;
  Command command;
  std::string summary;
};
const std::vector<SubcommandDoc>& SubcommandDocs();

}  // namespace kmt::cli
