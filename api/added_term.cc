#include "api/added_term.h"

#include <algorithm>
#include <string>

#include "api/names.h"
#include "api/validation.h"
#include "base/json.h"

namespace kmt::api {
namespace {

using json = nlohmann::json;

// nlohmann's what() starts with "[json.exception.parse_error.101] "; the rest ("parse error
// at line 1, column 5: syntax error while parsing ...") is what a user needs.
std::string ParseErrorText(const json::parse_error& e) {
  std::string s = e.what();
  if (const size_t end = s.find("] ");
      s.starts_with("[json.exception.") && end != std::string::npos) {
    s.erase(0, end + 2);
  }
  return s;
}

// Finds members whose name repeats within one JSON object while nlohmann parses (it keeps
// the last, as Go's decoder does; the API server's strict decoding rejects them, and a
// repeated "matchExpressions" would silently drop the first list). Records the field path
// of each repeat.
class DuplicateMembers {
 public:
  explicit DuplicateMembers(const std::string& root) : root_(root) {}

  bool operator()(int /*depth*/, json::parse_event_t event, json& parsed) {
    using E = json::parse_event_t;
    const bool in_array = !frames_.empty() && frames_.back().array;
    if (in_array && (event == E::object_start || event == E::array_start || event == E::value)) {
      ++frames_.back().elements;
    }
    switch (event) {
      case E::object_start:
      case E::array_start:
        frames_.push_back({event == E::array_start, 0, {}, {}});
        break;
      case E::object_end:
      case E::array_end:
        if (!frames_.empty()) frames_.pop_back();
        break;
      case E::key: {
        if (frames_.empty()) break;
        Frame& top = frames_.back();
        top.key = parsed.get<std::string>();
        if (std::ranges::find(top.names, top.key) != top.names.end()) {
          found_.push_back(ChildPath(Path(), top.key));
        } else {
          top.names.push_back(top.key);
        }
        break;
      }
      case E::value:
        break;
    }
    return true;
  }

  const std::vector<std::string>& found() const { return found_; }

 private:
  struct Frame {
    bool array;
    size_t elements;  // arrays: elements begun so far
    std::string key;  // objects: the member being read
    std::vector<std::string> names;
  };

  // The path of the innermost open object.
  std::string Path() const {
    std::string path = root_;
    for (size_t i = 0; i + 1 < frames_.size(); ++i) {
      path = frames_[i].array ? IndexPath(path, frames_[i].elements - 1)
                              : ChildPath(path, frames_[i].key);
    }
    return path;
  }

  const std::string& root_;
  std::vector<Frame> frames_;
  std::vector<std::string> found_;
};

}  // namespace

std::optional<std::string> AddedTermSource(const json& vmim) {
  // The one place that knows where the request lives (DESIGN.md §2).
  return base::String(vmim, {"metadata", "annotations", kAddedTermAnnotation}).optional();
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
  // nlohmann skips a UTF-8 byte order mark; Go's decoder (and so the API server) does not.
  if (text.starts_with("\xEF\xBB\xBF")) {
    out.causes.push_back(InvalidCauseOmitValue(
        path, "must be the JSON of a NodeSelectorTerm: a byte order mark is not JSON"));
    return out;
  }
  // nlohmann's lexer takes a NUL byte for the end of the input and ignores what follows;
  // JSON has no place for one outside a string, and none inside a string unescaped.
  if (const size_t nul = text.find('\0'); nul != std::string_view::npos) {
    out.causes.push_back(
        InvalidCauseOmitValue(path, "must be the JSON of a NodeSelectorTerm: a NUL byte (at byte " +
                                        std::to_string(nul + 1) + ") is not JSON"));
    return out;
  }
  json j;
  DuplicateMembers duplicates(path);
  try {
    j = json::parse(text.begin(), text.end(),
                    [&duplicates](int depth, json::parse_event_t event, json& parsed) {
                      return duplicates(depth, event, parsed);
                    });
  } catch (const json::parse_error& e) {
    out.causes.push_back(InvalidCauseOmitValue(
        path, "must be the JSON of a NodeSelectorTerm: " + ParseErrorText(e)));
    return out;
  } catch (const json::exception& e) {
    out.causes.push_back(InvalidCauseOmitValue(
        path, std::string("must be the JSON of a NodeSelectorTerm: ") + e.what()));
    return out;
  }
  if (!duplicates.found().empty()) {
    for (const std::string& field : duplicates.found()) {
      out.causes.push_back(InvalidCauseOmitValue(
          field, "duplicate member: a name may appear only once in an object"));
    }
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
