// cli/args.h — the command line of `kubectl migrate`, parsed the way kubectl
// (pflag) parses flags, with CLI11: `--flag=value`, `--flag value`, `-n value`, `-nvalue`,
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
// cli/flag_table.h is the one list of flags: CLI11 parses and validates exactly these (one
// CLI::App per command, built from the command tables), the help texts are rendered from
// them in kubectl's layout and shell completion offers them.
//
// A usage error exits with code 2 (as kubectl does) with "error: <why>".
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "cli/flag_table.h"

namespace kmt::cli {

struct ArgsParse {
  std::optional<Invocation> invocation;  // set iff error is empty
  std::string error;                     // usage error text, without the "error: " prefix
};

// args excludes argv[0]. CLI11 parses, with kubectl's (pflag's) spellings and messages.
ArgsParse ParseArgs(const std::vector<std::string>& args);

// The help text of a command, in kubectl's layout (CLI11's help, with a kubectl formatter).
std::string HelpText(Command command);

}  // namespace kmt::cli
