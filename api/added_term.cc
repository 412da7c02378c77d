#include "api/added_term.h"

#include <algorithm>

#include "api/names.h"
#include "api/validation.h"

namespace kmt::api {
namespace {

using json = nlohmann::json;

// nlohmann's what() starts with "[json.exception.parse_error.101] "; the rest ("parse error
// at line 1, column 5: syntax error while parsing ...") is what a user needs.
std::string ParseErrorText(const json::parse_error& e) {
  std::string s = e.what();
  if (const size_t end = s.find("] ");
      s.rfind("[json.exception.", 0) == 0 && end != std::string::npos) {
    s.erase(0, end + 2);
  }
  return s;
}

}  // namespace

std::optional<std::string> AddedTermSource(const json& vmim) {
  // The one place that knows where the request lives (DESIGN.md §2).
  if (!vmim.is_object()) return std::nullopt;
  auto meta = vmim.find("metadata");
  if (meta == vmim.end() || !meta->is_object()) return std::nullopt;
  auto annotations = meta->find("annotations");
  if (annotations == meta->end() || !annotations->is_object()) return std::nullopt;
  auto it = annotations->find(std::string(kAddedTermAnnotation));
  if (it == annotations->end() || !it->is_string()) return std::nullopt;
  return it->get<std::string>();
}

const std::string& AddedTermFieldPath() {
  static const std::string path = KeyPath("metadata.annotations", kAddedTermAnnotation);
  return path;
}

AddedTermParse ParseAddedTerm(std::string_view text) {
  AddedTermParse out;
  const std::string& path = AddedTermFieldPath();
  if (text.size() > kMaxAddedTermBytes) {
    out.causes.push_back(TooLongCause(path, kMaxAddedTermBytes));
    return out;
  }
  json j;
  try {
    j = json::parse(text.begin(), text.end());
  } catch (const json::parse_error& e) {
    out.causes.push_back(InvalidCauseOmitValue(
        path, "must be the JSON of a NodeSelectorTerm: " + ParseErrorText(e)));
    return out;
  } catch (const json::exception& e) {
    out.causes.push_back(InvalidCauseOmitValue(
        path, std::string("must be the JSON of a NodeSelectorTerm: ") + e.what()));
    return out;
  }
  TermParse parsed = ParseNodeSelectorTerm(j, path);
  if (!parsed.term) {
    out.causes = std::move(parsed.causes);
    return out;
  }
  out.causes = ValidateNodeSelectorTerm(*parsed.term, path);
  if (out.causes.empty()) out.term = std::move(parsed.term);
  return out;
}

}  // namespace kmt::api
