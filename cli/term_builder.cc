#include "cli/term_builder.h"

#include <stdexcept>

#include "api/added_term.h"
#include "api/validation.h"
#include "kube/selector.h"

namespace kmt::cli {
namespace {

std::string JoinCauses(const std::vector<api::Cause>& causes) {
  std::string out;
  for (const auto& c : causes) {
    if (!out.empty()) out += "; ";
    out += c.field.empty() ? c.message : c.field + ": " + c.message;
  }
  return out;
}

const char* OperatorFor(kube::LabelRequirement::Op op) {
  using Op = kube::LabelRequirement::Op;
  switch (op) {
    case Op::kExists:
      return "Exists";
    case Op::kDoesNotExist:
      return "DoesNotExist";
    case Op::kEquals:
    case Op::kIn:
      return "In";
    case Op::kNotEquals:
    case Op::kNotIn:
      return "NotIn";
    case Op::kGt:
      return "Gt";
    case Op::kLt:
      return "Lt";
  }
  return "In";
}

}  // namespace

TermBuild TermFromSelector(const std::string& selector) {
  api::NodeSelectorTerm term;
  try {
    auto parsed = kube::LabelSelector::Parse(selector);
    for (const auto& req : parsed.requirements()) {
      term.match_expressions.push_back({req.key, OperatorFor(req.op), req.values});
    }
  } catch (const std::invalid_argument& e) {
    return {std::nullopt, std::string("invalid --selector: ") + e.what()};
  }
  if (term.empty()) return {std::nullopt, "invalid --selector: it selects every node"};
  return {term, {}};
}

TermBuild BuildTerm(const Invocation& inv, const std::optional<std::string>& term_file_text) {
  api::NodeSelectorTerm term;
  if (inv.term_file) {
    if (!term_file_text) return {std::nullopt, "--term-file was given but not read"};
    auto parsed = api::ParseAddedTerm(*term_file_text);
    if (!parsed.term) {
      std::vector<api::Cause> causes = parsed.causes;
      // The annotation prefix means nothing to someone who wrote a file.
      const std::string& prefix = api::AddedTermFieldPath();
      for (auto& c : causes) {
        if (c.field.starts_with(prefix)) {
          c.field = c.field.substr(prefix.size());
          if (!c.field.empty() && c.field[0] == '.') c.field.erase(0, 1);
        }
      }
      return {std::nullopt, "invalid --term-file " + *inv.term_file + ": " + JoinCauses(causes)};
    }
    term = *parsed.term;
  }
  if (inv.node) {
    term.match_fields.push_back({std::string(api::kFieldMetadataName), "In", {*inv.node}});
  }
  if (inv.selector) {
    auto sel = TermFromSelector(*inv.selector);
    if (!sel.term) return sel;
    for (auto& r : sel.term->match_expressions) term.match_expressions.push_back(std::move(r));
  }
  for (const auto& n : inv.exclude_nodes) {
    term.match_fields.push_back({std::string(api::kFieldMetadataName), "NotIn", {n}});
  }
  auto causes = api::ValidateNodeSelectorTerm(term, "");
  if (!causes.empty()) return {std::nullopt, "invalid request: " + JoinCauses(causes)};
  return {term, {}};
}

}  // namespace kmt::cli
