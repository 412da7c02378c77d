// cli/term_builder.h — turns the plugin's placement flags into one NodeSelectorTerm.
//
//   --node N          → matchFields metadata.name In [N]
//   --selector SEL    → matchExpressions (set-based label selector syntax)
//   --exclude-node N  → matchFields metadata.name NotIn [N], one per node
//   --term-file F     → the term in F (strict JSON, as the webhook parses it)
// Everything given is ANDed into one term, then validated with the same rules
// the webhook applies, so a bad request fails here with the same message.
#pragma once

#include <optional>
#include <string>

#include "api/node_selector.h"
#include "cli/args.h"

namespace kmt::cli {

struct TermBuild {
  std::optional<api::NodeSelectorTerm> term;  // set iff error is empty
  std::string error;
};

// term_file_text: the contents of --term-file when given (the caller reads it).
TermBuild BuildTerm(const Invocation& inv, const std::optional<std::string>& term_file_text);

// Label selector text → matchExpressions. `a=b`/`a==b` → In [b], `a!=b` → NotIn [b],
// `a in (x,y)`, `a notin (x)`, `a` → Exists, `!a` → DoesNotExist, `a>N` → Gt, `a<N` → Lt.
TermBuild TermFromSelector(const std::string& selector);

}  // namespace kmt::cli
