// cli/completion.h — shell completion of `kubectl migrate ...`, the kubectl way.
//
// kubectl (>= 1.26, k8s.io/kubectl pkg/cmd/plugin/plugin_completion.go) completes a
// plugin's arguments by running the executable `kubectl_complete-migrate` from PATH with
// the words typed after `kubectl migrate`, the last one being the word under completion
// ("" when the cursor follows a space). It reads stdout: one candidate per line
// (cobra's `candidate<TAB>description` form is passed through), and a last line
// `:<N>` holding cobra's ShellCompDirective bits (1 error, 2 no space, 4 no file
// completion; 0 = the shell's default, i.e. files). kubectl clears its own global
// flags first, so the plugin completes -n, --context and --kubeconfig itself.
// kubectl_complete-migrate runs `kubectl-migrate __complete WORDS...`, which prints
// exactly that — the same protocol a cobra program answers on `__complete`.
//
// What is completed (candidates filtered by the typed prefix):
//  - first word: the subcommands (with descriptions) and, for `kubectl migrate NAME`,
//    the namespace's VMIs;
//  - `explain`'s NAME and `cancel --vmi`: VMIs; `status`: migrations; `cancel`: migrations
//    that have not ended; `policy`: its subcommand `explain`, then node names;
//  - `-...`: the flags the command accepts (with their usage), a flag given once not again;
//  - values: --node and --exclude-node node names (nodes already excluded left out),
//    --selector label keys of the nodes (and a key's values after `key=`/`key!=`, each
//    part of a comma-separated selector in turn), -n namespaces, -o, --dry-run and --origin
//    their choices, --term-file and --kubeconfig files (directive 0: the shell completes files).
// Values come from the cluster named by the typed --kubeconfig/--context/-n (else the
// environment's kubeconfig). A failed read gives no candidates and directive 1, so the
// shell shows nothing rather than files.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "cli/flag_table.h"
#include "kube/client.h"

namespace kmt::cli {

// cobra's ShellCompDirective bits.
inline constexpr int kDirectiveDefault = 0;
inline constexpr int kDirectiveError = 1;
inline constexpr int kDirectiveNoSpace = 2;
inline constexpr int kDirectiveNoFileComp = 4;

// What the word under completion is.
enum class Want {
  kNothing,          // no candidates, no files
  kFiles,            // the shell's file completion
  kFirstWord,        // subcommands + VMIs
  kVmi,              // VMI names
  kMigration,        // VMIM names
  kActiveMigration,  // VMIM names that have not ended
  kFlagName,         // flags of `command`
  kNode,             // node names
  kSelector,         // label selector over nodes
  kNamespace,        // namespaces
  kChoice,           // one of `choices`
};

// The command line read up to the word under completion; pure.
struct CompletionRequest {
  Want want = Want::kNothing;
  Command command = Command::kMigrate;
  std::string prefix;                    // what is typed of the word (after `--flag=`)
  std::vector<std::string> choices;      // with kChoice
  std::vector<std::string> given_flags;  // long names already on the line
  std::vector<std::string> excluded;     // --exclude-node values already on the line
  // The typed global flags: which cluster and namespace to ask.
  std::string kubeconfig;
  std::string context;
  std::optional<std::string> ns;

  bool NeedsCluster() const;
};

// `words` are the arguments kubectl passes: everything after `kubectl migrate`, the
// last one being the word under completion (an empty list counts as one empty word).
CompletionRequest ReadCompletionLine(const std::vector<std::string>& words);

struct CompletionAnswer {
  std::vector<std::string> candidates;  // "value" or "value\tdescription"
  int directive = kDirectiveNoFileComp;
};

// Answers the request, asking `client` (may be null when !request.NeedsCluster()) in
// namespace `ns`. Never throws: a failed read is directive kDirectiveError.
CompletionAnswer Complete(const CompletionRequest& request, const std::string& ns,
                          kube::KubeClient* client);

// The protocol's output: one candidate per line (descriptions dropped when
// !descriptions), then ":<directive>".
std::string FormatCompletion(const CompletionAnswer& answer, bool descriptions);

}  // namespace kmt::cli
