// base/json_filter.cc
#include "base/json_filter.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace kmt::base {

JsonFilter::Verdict JsonFilter::Element(const JsonScope& /*array*/) { return Verdict::Whole(); }

void JsonFilter::End(const JsonScope& /*scope*/, Json& /*container*/) {}

ObjectReads::ObjectReads(std::initializer_list<Path> paths) {
  for (const Path& path : paths) Add(path);
}

ObjectReads::ObjectReads(const std::vector<Path>& paths) {
  for (const Path& path : paths) Add(path);
}

ObjectReads ObjectReads::With(const std::vector<Path>& more) const {
  ObjectReads out(paths_);
  for (const Path& path : more) out.Add(path);
  return out;
}

void ObjectReads::Add(const Path& path) {
  paths_.push_back(path);
  Node* node = &root_;
  for (const std::string& name : path) {
    if (node->whole) return;  // read whole already
    node = &node->members[name];
  }
  node->whole = true;
  node->members.clear();
}

JsonFilter::Verdict ObjectReads::Member(const Node& node, std::string_view key, int kind) {
  auto it = node.members.find(key);
  if (it == node.members.end()) return JsonFilter::Verdict::Skip();
  return it->second.whole ? JsonFilter::Verdict::Whole()
                          : JsonFilter::Verdict::Filter({kind, &it->second});
}

void ObjectReads::Keep(const Node& node, Json& value) {
  if (node.whole) return;
  if (value.is_array()) {
    for (Json& element : value) Keep(node, element);
    return;
  }
  if (!value.is_object()) return;
  for (auto it = value.begin(); it != value.end();) {
    auto read = node.members.find(it.key());
    if (read == node.members.end()) {
      it = value.erase(it);
    } else {
      Keep(read->second, it.value());
      ++it;
    }
  }
}

namespace {

using Keep = JsonFilter::Verdict::Keep;

// nlohmann's SAX interface over a DOM under construction. `open_` holds the containers being
// built, innermost last; pointers into them stay valid because a container only grows while
// its last member or element is open (std::map nodes never move; a vector's last element is
// not moved by anything but a later push_back onto the same vector, which waits for it to end).
class FilteredDom {
 public:
  FilteredDom(JsonFilter& filter, JsonFilter::Verdict root) : filter_(filter), next_(root) {
    if (next_.keep == Keep::kSkip) next_ = JsonFilter::Verdict::Whole();
  }

  Json& result() { return root_; }
  std::string& error() { return error_; }

  bool null() { return Scalar(nullptr); }
  bool boolean(bool v) { return Scalar(v); }
  bool number_integer(Json::number_integer_t v) { return Scalar(v); }
  bool number_unsigned(Json::number_unsigned_t v) { return Scalar(v); }
  bool number_float(Json::number_float_t v, const Json::string_t& /*text*/) { return Scalar(v); }
  // Copied, not moved: the parser reuses its buffer (and its capacity) for the next token.
  bool string(Json::string_t& v) { return Scalar(v); }
  bool binary(Json::binary_t& v) { return Scalar(v); }
  bool start_object(size_t /*elements*/) { return Open(Json::value_t::object); }
  bool start_array(size_t /*elements*/) { return Open(Json::value_t::array); }
  bool end_object() { return Close(); }
  bool end_array() { return Close(); }

  bool key(Json::string_t& k) {
    if (skipping_ > 0) return true;
    Frame& parent = open_.back();
    next_ = parent.filtered ? filter_.Member(parent.scope, k) : JsonFilter::Verdict::Whole();
    // std::map's own operator[]: the key is copied only when it is new.
    slot_ = next_.keep == Keep::kSkip ? nullptr : &parent.value->get_ref<Json::object_t&>()[k];
    return true;
  }

  bool parse_error(size_t /*position*/, const std::string& /*token*/,
                   const nlohmann::detail::exception& e) {
    error_ = e.what();
    return false;
  }

 private:
  struct Frame {
    Json* value;
    JsonScope scope;
    bool filtered;  // entered with kFilter: the filter decides its members or elements
  };

  // Where the value about to be read goes, with next_ its verdict; nullptr when it is skipped.
  Json* Slot() {
    if (open_.empty()) return &root_;
    Frame& parent = open_.back();
    if (!parent.value->is_array()) return slot_;  // set by key()
    next_ = parent.filtered ? filter_.Element(parent.scope) : JsonFilter::Verdict::Whole();
    if (next_.keep == Keep::kSkip) return nullptr;
    parent.value->push_back(nullptr);
    return &parent.value->back();
  }

  template <typename T>
  bool Scalar(T&& v) {
    if (skipping_ > 0) return true;
    if (Json* slot = Slot()) *slot = std::forward<T>(v);
    return true;
  }

  bool Open(Json::value_t type) {
    if (skipping_ > 0) {
      ++skipping_;
      return true;
    }
    Json* slot = Slot();
    if (slot == nullptr) {
      skipping_ = 1;
      return true;
    }
    *slot = Json(type);
    open_.push_back(Frame{slot, next_.scope, next_.keep == Keep::kFilter});
    return true;
  }

  bool Close() {
    if (skipping_ > 0) {
      --skipping_;
      return true;
    }
    const Frame done = open_.back();
    open_.pop_back();
    if (done.filtered) filter_.End(done.scope, *done.value);
    return true;
  }

  JsonFilter& filter_;
  Json root_;
  std::vector<Frame> open_;
  JsonFilter::Verdict next_;  // the verdict on the value about to be read
  Json* slot_ = nullptr;      // where an object member's value goes (key() sets it)
  size_t skipping_ = 0;       // > 0: inside a skipped container, its nesting
  std::string error_;
};

// Only the errors of a text, by nlohmann's SAX parser building nothing: the message of the
// first one (the filtered parse's own), or "" when the text is JSON after all.
class ErrorsOnly {
 public:
  bool null() { return true; }
  bool boolean(bool /*v*/) { return true; }
  bool number_integer(Json::number_integer_t /*v*/) { return true; }
  bool number_unsigned(Json::number_unsigned_t /*v*/) { return true; }
  bool number_float(Json::number_float_t /*v*/, const Json::string_t& /*text*/) { return true; }
  bool string(Json::string_t& /*v*/) { return true; }
  bool binary(Json::binary_t& /*v*/) { return true; }
  bool start_object(size_t /*elements*/) { return true; }
  bool start_array(size_t /*elements*/) { return true; }
  bool end_object() { return true; }
  bool end_array() { return true; }
  bool key(Json::string_t& /*k*/) { return true; }
  bool parse_error(size_t /*position*/, const std::string& /*token*/,
                   const nlohmann::detail::exception& e) {
    error = e.what();
    return false;
  }
  std::string error;
};

// The fast path's scanner. It checks what nlohmann's lexer and parser check (RFC 8259's
// grammar; strings of valid UTF-8 without control characters, with valid escapes and
// surrogate pairs; numbers that are finite as doubles) without building anything, several
// times faster than the lexer, which copies every string and converts every number. Each
// function returns the position just past what it read, or nullptr when the text is not JSON
// there.
class Scanner {
 public:
  explicit Scanner(const char* end) : end_(end) {}

  const char* Space(const char* p) const {
    while (p != end_ && (*p == ' ' || *p == '\n' || *p == '\r' || *p == '\t')) ++p;
    return p;
  }

  // A string from its opening quote; *escaped tells whether it holds a backslash.
  const char* String(const char* p, bool* escaped) const {
    ++p;  // the opening quote
    bool any = false;
    while (p != end_) {
      // Eight plain bytes at a time (no quote, backslash, control character or non-ASCII).
      while (end_ - p >= 8 && Plain8(p)) p += 8;
      if (p == end_) break;
      const auto c = static_cast<unsigned char>(*p);
      if (c == '"') {
        if (escaped != nullptr) *escaped = any;
        return p + 1;
      }
      if (c < 0x20) return nullptr;
      if (c == '\\') {
        any = true;
        p = Escape(p);
        if (p == nullptr) return nullptr;
        continue;
      }
      if (c < 0x80) {
        ++p;
        continue;
      }
      p = Utf8(p);
      if (p == nullptr) return nullptr;
    }
    return nullptr;
  }

  // A number: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?, finite as a double.
  const char* Number(const char* p) const {
    const char* start = p;
    if (*p == '-') ++p;
    if (p == end_ || !Digit(*p)) return nullptr;
    if (*p == '0') {
      ++p;
    } else {
      while (p != end_ && Digit(*p)) ++p;
    }
    bool real = false;
    if (p != end_ && *p == '.') {
      real = true;
      ++p;
      if (p == end_ || !Digit(*p)) return nullptr;
      while (p != end_ && Digit(*p)) ++p;
    }
    if (p != end_ && (*p == 'e' || *p == 'E')) {
      real = true;
      ++p;
      if (p != end_ && (*p == '+' || *p == '-')) ++p;
      if (p == end_ || !Digit(*p)) return nullptr;
      while (p != end_ && Digit(*p)) ++p;
    }
    // An integer of up to 308 digits is finite however it is stored; anything else is
    // converted as nlohmann's lexer converts it, and refused when it overflows.
    if ((real || p - start > 308) && !Finite(start, p)) return nullptr;
    return p;
  }

  // One value, of any depth, without recursion: the containers open are a stack of bits
  // (1: object), in `inline_` up to 1,024 deep and in `deep_` beyond.
  const char* Value(const char* p) {
    size_t depth = 0;
    for (;;) {
      // A value is expected at p.
      p = Space(p);
      if (p == end_) return nullptr;
      switch (*p) {
        case '{':
          p = Space(p + 1);
          if (p != end_ && *p == '}') {
            ++p;
            break;
          }
          Push(depth++, true);
          p = Key(p);
          if (p == nullptr) return nullptr;
          continue;
        case '[':
          p = Space(p + 1);
          if (p != end_ && *p == ']') {
            ++p;
            break;
          }
          Push(depth++, false);
          continue;
        case '"':
          p = String(p, nullptr);
          break;
        case 't':
          p = Literal(p, "true");
          break;
        case 'f':
          p = Literal(p, "false");
          break;
        case 'n':
          p = Literal(p, "null");
          break;
        default:
          p = (*p == '-' || Digit(*p)) ? Number(p) : nullptr;
          break;
      }
      if (p == nullptr) return nullptr;
      // After a value: the next member or element, or the ends of containers.
      for (;;) {
        if (depth == 0) return p;
        p = Space(p);
        if (p == end_) return nullptr;
        const bool object = Top(depth - 1);
        if (*p == ',') {
          p = Space(p + 1);
          if (object) {
            p = Key(p);
            if (p == nullptr) return nullptr;
          }
          break;  // the next value
        }
        if (*p != (object ? '}' : ']')) return nullptr;
        ++p;
        --depth;
      }
    }
  }

  // A member's key and its colon, from the opening quote (past the colon's space).
  const char* Key(const char* p) const {
    if (p == end_ || *p != '"') return nullptr;
    p = String(p, nullptr);
    if (p == nullptr) return nullptr;
    p = Space(p);
    if (p == end_ || *p != ':') return nullptr;
    return p + 1;
  }

 private:
  static bool Digit(char c) { return c >= '0' && c <= '9'; }

  // Whether the eight bytes at p are all printable ASCII other than '"' and '\\' (SWAR: a
  // byte's high bit set in `lt` when it is below the bound, in `eq` when it equals one).
  static bool Plain8(const char* p) {
    uint64_t w;
    std::memcpy(&w, p, sizeof w);
    constexpr uint64_t kOnes = 0x0101010101010101, kHigh = 0x8080808080808080;
    const auto zero_byte = [&](uint64_t v) { return (v - kOnes) & ~v & kHigh; };
    const uint64_t control = (w - kOnes * 0x20) & ~w & kHigh;  // a byte < 0x20
    const uint64_t quote = zero_byte(w ^ (kOnes * '"'));
    const uint64_t backslash = zero_byte(w ^ (kOnes * '\\'));
    return ((w & kHigh) | control | quote | backslash) == 0;
  }
  static int Hex(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  }

  // \uXXXX's code unit, from the backslash; -1 when it is not one.
  int CodeUnit(const char* p) const {
    if (end_ - p < 6 || p[0] != '\\' || p[1] != 'u') return -1;
    int v = 0;
    for (int i = 2; i < 6; ++i) {
      const int h = Hex(p[i]);
      if (h < 0) return -1;
      v = v * 16 + h;
    }
    return v;
  }

  // An escape, from its backslash: one of \" \\ \/ \b \f \n \r \t, or \uXXXX (a high
  // surrogate followed by a low one; never a low one alone).
  const char* Escape(const char* p) const {
    if (end_ - p < 2) return nullptr;
    switch (p[1]) {
      case '"':
      case '\\':
      case '/':
      case 'b':
      case 'f':
      case 'n':
      case 'r':
      case 't':
        return p + 2;
      case 'u': {
        const int unit = CodeUnit(p);
        if (unit < 0 || (unit >= 0xDC00 && unit <= 0xDFFF)) return nullptr;
        if (unit < 0xD800 || unit > 0xDBFF) return p + 6;
        const int low = CodeUnit(p + 6);
        if (low < 0xDC00 || low > 0xDFFF) return nullptr;
        return p + 12;
      }
      default:
        return nullptr;
    }
  }

  // One multi-byte UTF-8 sequence (RFC 3629: no overlong forms, no surrogates, at most
  // U+10FFFF), from its lead byte.
  const char* Utf8(const char* p) const {
    const auto b = [&](ptrdiff_t i) { return static_cast<unsigned char>(p[i]); };
    const auto in = [](unsigned char c, unsigned char lo, unsigned char hi) {
      return c >= lo && c <= hi;
    };
    const unsigned char c = b(0);
    const ptrdiff_t left = end_ - p;
    if (in(c, 0xC2, 0xDF)) return left >= 2 && in(b(1), 0x80, 0xBF) ? p + 2 : nullptr;
    if (in(c, 0xE0, 0xEF)) {
      if (left < 3) return nullptr;
      const unsigned char lo = c == 0xE0 ? 0xA0 : 0x80, hi = c == 0xED ? 0x9F : 0xBF;
      return in(b(1), lo, hi) && in(b(2), 0x80, 0xBF) ? p + 3 : nullptr;
    }
    if (in(c, 0xF0, 0xF4)) {
      if (left < 4) return nullptr;
      const unsigned char lo = c == 0xF0 ? 0x90 : 0x80, hi = c == 0xF4 ? 0x8F : 0xBF;
      return in(b(1), lo, hi) && in(b(2), 0x80, 0xBF) && in(b(3), 0x80, 0xBF) ? p + 4 : nullptr;
    }
    return nullptr;
  }

  const char* Literal(const char* p, std::string_view word) const {
    if (static_cast<size_t>(end_ - p) < word.size() || std::string_view(p, word.size()) != word) {
      return nullptr;
    }
    return p + word.size();
  }

  // Whether the number's text converts to a finite double (nlohmann's lexer uses strtod).
  static bool Finite(const char* begin, const char* end) {
    const std::string text(begin, end);
    return std::isfinite(std::strtod(text.c_str(), nullptr));
  }

  void Push(size_t depth, bool object) {
    if (depth < kInlineBits) {
      const uint64_t bit = uint64_t{1} << (depth % 64);
      if (object) {
        inline_[depth / 64] |= bit;
      } else {
        inline_[depth / 64] &= ~bit;
      }
      return;
    }
    const size_t at = depth - kInlineBits;
    if (deep_.size() <= at) deep_.resize(at + 1);
    deep_[at] = object;
  }
  bool Top(size_t depth) const {
    if (depth < kInlineBits) return ((inline_[depth / 64] >> (depth % 64)) & 1) != 0;
    return deep_[depth - kInlineBits];
  }

  static constexpr size_t kInlineBits = 1024;
  const char* end_;
  uint64_t inline_[kInlineBits / 64] = {};
  std::vector<bool> deep_;
};

// The fast path: the filter's containers walked by the Scanner, skipped values only scanned,
// values kept whole or kept as they are handed to nlohmann's parser as their own texts.
// Returns false when the text is not JSON (nothing of `out` is then meant).
class FastFiltered {
 public:
  FastFiltered(std::string_view text, JsonFilter& filter)
      : begin_(text.data()), end_(text.data() + text.size()), scan_(end_), filter_(filter) {}

  bool Parse(const JsonFilter::Verdict& root, Json& out) {
    const char* p = scan_.Space(begin_);
    if (p == end_) return false;
    if (*p != '{' && *p != '[') {
      const char* e = scan_.Value(p);
      if (e == nullptr || scan_.Space(e) != end_) return false;
      return Whole(p, e, out);
    }
    out = Json(*p == '{' ? Json::value_t::object : Json::value_t::array);
    std::vector<Frame> open;
    open.push_back({&out, root.scope, *p == '{'});
    ++p;
    // Right after an opening bracket: the container may be empty.
    bool first = true;
    for (;;) {
      Frame& frame = open.back();
      p = scan_.Space(p);
      if (p == end_) return false;
      const char close = frame.object ? '}' : ']';
      if (first && *p == close) {
        p = Close(open, p);
        if (open.empty()) return scan_.Space(p) == end_;
        first = false;
        p = After(open, p);
        if (p == nullptr) return false;
        if (open.empty()) return scan_.Space(p) == end_;
        continue;
      }
      first = false;
      // The next member or element.
      JsonFilter::Verdict verdict;
      Json* slot = nullptr;
      if (frame.object) {
        if (*p != '"') return false;
        bool escaped = false;
        const char* key_end = scan_.String(p, &escaped);
        if (key_end == nullptr) return false;
        std::string decoded;
        std::string_view key(p + 1, static_cast<size_t>(key_end - p - 2));
        if (escaped) {
          String(p, decoded);
          key = decoded;
        }
        p = scan_.Space(key_end);
        if (p == end_ || *p != ':') return false;
        p = scan_.Space(p + 1);
        verdict = filter_.Member(frame.scope, key);
        if (verdict.keep != Keep::kSkip) {
          slot = &frame.value->get_ref<Json::object_t&>()[std::string(key)];
        }
      } else {
        verdict = filter_.Element(frame.scope);
        if (verdict.keep != Keep::kSkip) {
          frame.value->push_back(nullptr);
          slot = &frame.value->back();
        }
      }
      if (p == end_) return false;
      if (slot != nullptr && verdict.keep == Keep::kFilter && (*p == '{' || *p == '[')) {
        const bool object = *p == '{';
        *slot = Json(object ? Json::value_t::object : Json::value_t::array);
        open.push_back({slot, verdict.scope, object});
        ++p;
        first = true;
        continue;
      }
      const char* e = scan_.Value(p);
      if (e == nullptr) return false;
      if (slot != nullptr && !Whole(p, e, *slot)) return false;
      p = After(open, e);
      if (p == nullptr) return false;
      if (open.empty()) return scan_.Space(p) == end_;
    }
  }

 private:
  struct Frame {
    Json* value;
    JsonScope scope;
    bool object;
  };

  // Closes the innermost container at its closing bracket `p`: the filter's End, then the
  // position past the bracket.
  const char* Close(std::vector<Frame>& open, const char* p) {
    const Frame done = open.back();
    open.pop_back();
    filter_.End(done.scope, *done.value);
    return p + 1;
  }

  // After a member or element: past its comma (the next one follows), or past the closing
  // brackets of the containers that end there. nullptr when the text is not JSON there.
  const char* After(std::vector<Frame>& open, const char* p) {
    for (;;) {
      p = scan_.Space(p);
      if (p == end_) return nullptr;
      if (*p == ',') return p + 1;
      if (*p != (open.back().object ? '}' : ']')) return nullptr;
      p = Close(open, p);
      if (open.empty()) return p;
    }
  }

  // The value [p, e), already scanned, built as nlohmann's parser builds it (the DOM, the
  // number types, a repeated member's last value winning), without its lexer: the text is
  // known to be JSON, so only the values are converted. Iterative, like nlohmann's parser:
  // the containers open are a stack on the heap.
  bool Whole(const char* p, const char* e, Json& out) {
    std::vector<Json*> open;
    Json* slot = &out;
    for (;;) {
      p = scan_.Space(p);
      switch (*p) {
        case '{':
          *slot = Json(Json::value_t::object);
          p = scan_.Space(p + 1);
          if (*p == '}') {
            ++p;
            break;
          }
          open.push_back(slot);
          p = Member(p, *slot, &slot);
          continue;
        case '[':
          *slot = Json(Json::value_t::array);
          p = scan_.Space(p + 1);
          if (*p == ']') {
            ++p;
            break;
          }
          open.push_back(slot);
          slot->push_back(nullptr);
          slot = &slot->back();
          continue;
        case '"': {
          std::string text;
          p = String(p, text);
          *slot = std::move(text);
          break;
        }
        case 't':
          *slot = true;
          p += 4;
          break;
        case 'f':
          *slot = false;
          p += 5;
          break;
        case 'n':
          *slot = nullptr;
          p += 4;
          break;
        default:
          p = Number(p, *slot);
          break;
      }
      // After a value: the next member or element, or the ends of containers.
      for (;;) {
        if (open.empty()) return p == e || scan_.Space(p) == e;
        p = scan_.Space(p);
        Json& container = *open.back();
        if (*p == ',') {
          p = scan_.Space(p + 1);
          if (container.is_object()) {
            p = Member(p, container, &slot);
          } else {
            container.push_back(nullptr);
            slot = &container.back();
          }
          break;
        }
        ++p;  // the container's closing bracket
        open.pop_back();
      }
    }
  }

  // A member's key from its opening quote: its slot in `object` (a repeated key's, which the
  // new value replaces, as nlohmann's parser does), and the position of its value.
  const char* Member(const char* p, Json& object, Json** slot) {
    std::string key;
    p = String(p, key);
    p = scan_.Space(p);
    *slot = &object.get_ref<Json::object_t&>()[std::move(key)];
    return p + 1;  // past the colon
  }

  // A string the Scanner accepted, from its opening quote, decoded into `out`; the position
  // past its closing quote.
  const char* String(const char* p, std::string& out) {
    bool escaped = false;
    const char* e = scan_.String(p, &escaped);
    if (!escaped) {
      out.assign(p + 1, e - 1);
      return e;
    }
    out.reserve(static_cast<size_t>(e - p - 2));
    for (const char* q = p + 1; q != e - 1;) {
      const char* plain = std::find(q, e - 1, '\\');
      out.append(q, plain);
      q = plain;
      if (q == e - 1) break;
      switch (q[1]) {
        case 'b':
          out += '\b';
          break;
        case 'f':
          out += '\f';
          break;
        case 'n':
          out += '\n';
          break;
        case 'r':
          out += '\r';
          break;
        case 't':
          out += '\t';
          break;
        case 'u': {
          uint32_t code = CodeUnit(q);
          if (code >= 0xD800 && code <= 0xDBFF) {
            code = 0x10000 + ((code - 0xD800) << 10) + (CodeUnit(q + 6) - 0xDC00);
            q += 6;
          }
          AppendUtf8(code, out);
          q += 6;
          continue;
        }
        default:  // \" \\ \/
          out += q[1];
          break;
      }
      q += 2;
    }
    return e;
  }

  // \uXXXX's code unit, from the backslash (the Scanner checked the four hex digits).
  static uint32_t CodeUnit(const char* p) {
    uint32_t v = 0;
    for (int i = 2; i < 6; ++i) {
      const char c = p[i];
      v = v * 16 + static_cast<uint32_t>(c <= '9'   ? c - '0'
                                         : c <= 'F' ? c - 'A' + 10
                                                    : c - 'a' + 10);
    }
    return v;
  }

  static void AppendUtf8(uint32_t code, std::string& out) {
    if (code < 0x80) {
      out += static_cast<char>(code);
    } else if (code < 0x800) {
      out += static_cast<char>(0xC0 | (code >> 6));
      out += static_cast<char>(0x80 | (code & 0x3F));
    } else if (code < 0x10000) {
      out += static_cast<char>(0xE0 | (code >> 12));
      out += static_cast<char>(0x80 | ((code >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (code & 0x3F));
    } else {
      out += static_cast<char>(0xF0 | (code >> 18));
      out += static_cast<char>(0x80 | ((code >> 12) & 0x3F));
      out += static_cast<char>(0x80 | ((code >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (code & 0x3F));
    }
  }

  // A number the Scanner accepted, typed as nlohmann's lexer types it: with a fraction or an
  // exponent a double (strtod); else a non-negative integer that fits 64 bits unsigned, a
  // negative one that fits 64 bits signed, and a double when it does not fit.
  const char* Number(const char* p, Json& out) {
    const char* e = p;
    bool real = false;
    while (e != end_ &&
           (Digit(*e) || *e == '-' || *e == '+' || *e == '.' || *e == 'e' || *e == 'E')) {
      real = real || *e == '.' || *e == 'e' || *e == 'E';
      ++e;
    }
    if (!real) {
      if (*p == '-') {
        int64_t v = 0;
        if (std::from_chars(p, e, v).ec == std::errc()) {
          out = v;
          return e;
        }
      } else {
        uint64_t v = 0;
        if (std::from_chars(p, e, v).ec == std::errc()) {
          out = v;
          return e;
        }
      }
    }
    const std::string text(p, e);  // strtod reads up to a terminator
    out = std::strtod(text.c_str(), nullptr);
    return e;
  }

  static bool Digit(char c) { return c >= '0' && c <= '9'; }

  const char* begin_;
  const char* end_;
  Scanner scan_;
  JsonFilter& filter_;
};

}  // namespace

Json ParseFilteredBySax(std::string_view text, JsonFilter& filter, JsonFilter::Verdict root,
                        std::string* error) {
  FilteredDom dom(filter, root);
  if (!Json::sax_parse(text.begin(), text.end(), &dom)) {
    if (error != nullptr) *error = std::move(dom.error());
    Json discarded(Json::value_t::discarded);  // not {...}: that would be an array of it
    return discarded;
  }
  return std::move(dom.result());
}

Json ParseFiltered(std::string_view text, JsonFilter& filter, JsonFilter::Verdict root,
                   std::string* error) {
  // A root not filtered is Json::parse's (a BOM, which nlohmann skips, too).
  if (root.keep != Keep::kFilter || (!text.empty() && text.front() == '\xEF')) {
    return ParseFilteredBySax(text, filter, root, error);
  }
  FastFiltered fast(text, filter);
  Json out;
  if (fast.Parse(root, out)) return out;
  // Not JSON: nlohmann's message, found without the filter (which has seen part of the text).
  ErrorsOnly errors;
  if (!Json::sax_parse(text.begin(), text.end(), &errors)) {
    if (error != nullptr) *error = std::move(errors.error);
    Json discarded(Json::value_t::discarded);
    return discarded;
  }
  // The scanner refused what nlohmann accepts (a bug): the SAX path decides.
  return ParseFilteredBySax(text, filter, root, error);
}

}  // namespace kmt::base
