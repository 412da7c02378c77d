// base/json_filter.h — one parse of a JSON text into a Json DOM that never builds what its
// reader leaves out: the only filtered parser of the project (issue 41).
//
// A list page's metadata.managedFields, a tenant's labels beyond a budget, the members of an
// admitted pod its admitter never reads: each is skipped while the text is parsed. A filter
// decides every member on its key (and the container it sits in) before the member's value is
// read; a skipped value is only lexed, never built, and costs no allocation (nlohmann's SAX
// parser hands strings over in its one reused buffer). Everything kept is built as
// Json::parse builds it: numbers keep their type, a repeated member's last kept value wins.
//
//   class KeepName : public JsonFilter {            // {"metadata": {"name": ...}} only
//     Verdict Member(const JsonScope& in, std::string_view key) override {
//       if (in.kind == 0) return key == "metadata" ? Verdict::Filter({1}) : Verdict::Skip();
//       return key == "name" ? Verdict::Whole() : Verdict::Skip();
//     }
//   };
//   KeepName f;
//   Json pod = ParseFiltered(text, f, JsonFilter::Verdict::Filter({0}));
//
// A filter is asked only inside the containers it asked to see (Verdict::Filter); inside a
// value kept whole the parse runs without it, as fast as Json::parse. The parse takes the
// text's bytes as they are ([text.begin(), text.end()): no terminator, no copy) and, like
// nlohmann's SAX parser, keeps no recursion of its own, so its stack does not grow with the
// text's nesting.
#pragma once

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "base/json.h"

namespace kmt::base {

// A filter's own note on a container it asked to see inside, handed back with each of the
// container's members or elements and at its end. The parser never reads it.
struct JsonScope {
  int kind = 0;                // the filter's tag for what this container is
  const void* data = nullptr;  // the filter's data for it (a node of a tree of paths, say)
};

class JsonFilter {
 public:
  // What becomes of one value, decided before it is read.
  struct Verdict {
    enum class Keep : uint8_t {
      kSkip,    // lexed, never built; the member (or element) is absent from the DOM
      kWhole,   // built whole, without asking the filter about anything inside it
      kFilter,  // an object or array: each member or element decided in `scope`, then End();
                // any other value is kept as it is
    };
    Keep keep = Keep::kWhole;
    JsonScope scope;

    static Verdict Skip() { return {Keep::kSkip, {}}; }
    static Verdict Whole() { return {Keep::kWhole, {}}; }
    static Verdict Filter(JsonScope scope) { return {Keep::kFilter, scope}; }
  };

  virtual ~JsonFilter() = default;

  // The member `key` of an object entered with Filter(object), before its value is read.
  virtual Verdict Member(const JsonScope& object, std::string_view key) = 0;
  // Each element of an array entered with Filter(array), before it is read. By default whole.
  virtual Verdict Element(const JsonScope& array);
  // A container entered with Filter(scope), once its last member or element is built: the
  // filter may add to it (a count of what it left out, say). By default nothing.
  virtual void End(const JsonScope& scope, Json& container);
};

// The members of an object a reader reads, as paths of member names ({"metadata", "labels"}):
// what a filter keeps of an object when only those are read (the webhook's admitters, the
// informers' projections). A member whose path is listed is kept whole; one whose path is a
// proper prefix of a listed path is read through its node: an object keeps just its listed
// members, an array has each element read through the same node (so {"spec", "containers",
// "resources"} keeps every container's resources), any other value is kept as it is; every
// other member is left out. A path through a member listed whole adds nothing.
class ObjectReads {
 public:
  using Path = std::vector<std::string>;
  struct Node {
    std::map<std::string, Node, std::less<>> members;
    bool whole = false;  // the member's whole value
  };
  ObjectReads(std::initializer_list<Path> paths);
  explicit ObjectReads(const std::vector<Path>& paths);
  // These reads and `more`.
  ObjectReads With(const std::vector<Path>& more) const;

  const Node& root() const { return root_; }
  const std::vector<Path>& paths() const { return paths_; }

  // The verdict on member `key` of an object read through `node`: Skip when it is not read,
  // Whole when its path is listed, else Filter({kind, its node}). An array entered so has
  // each element read through the same node: Element's verdict is Filter({kind, node}).
  static JsonFilter::Verdict Member(const Node& node, std::string_view key, int kind);

  // The same on a value already built: leaves out of `value` what `node` does not read.
  static void Keep(const Node& node, Json& value);

 private:
  void Add(const Path& path);
  Node root_;
  std::vector<Path> paths_;
};

// Parses `text` (one JSON value, strict: nothing but whitespace after it), the root decided by
// `root` (kSkip reads as kWhole: a parse always yields its root). Never throws for any input:
// when the text is not JSON it returns a discarded value (Json::is_discarded()) and, when
// `error` is given, puts nlohmann's message there ("[json.exception.parse_error.101] ...").
Json ParseFiltered(std::string_view text, JsonFilter& filter, JsonFilter::Verdict root,
                   std::string* error = nullptr);

// The same answer by nlohmann's SAX parser alone, every byte through its lexer: the reference
// ParseFiltered is tested against. ParseFiltered walks the containers its filter sees with a
// scanner of its own, which checks skipped values without building or copying anything and
// hands each kept value's own text to nlohmann's parser; when the scanner finds the text is
// not JSON, nlohmann's parser (without the filter) gives the message.
Json ParseFilteredBySax(std::string_view text, JsonFilter& filter, JsonFilter::Verdict root,
                        std::string* error = nullptr);

}  // namespace kmt::base
