#include "api/compiled_selector.h"

namespace kmt::api {

std::string SelectorText(const LabelSelector& sel, bool null) {
  if (null) return "null";
  std::string s;
  for (const auto& [k, v] : sel.match_labels.Sorted()) {
    if (!s.empty()) s += ", ";
    s.append(k).append("=").append(v);
  }
  for (const auto& r : sel.match_expressions) {
    if (!s.empty()) s += ", ";
    s += ToString(r);
  }
  return s.empty() ? "{}" : s;
}

}  // namespace kmt::api
