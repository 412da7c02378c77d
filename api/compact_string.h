// api/compact_string.h — an immutable-ish text in 8 bytes, for the string members of cached
// projections (issue 38: ≤ 24 MiB RSS with 10,000 target pods and 10,000 VMIMs cached).
//
// A std::string is 32 bytes inline, plus a heap block for a text over 15 characters. A cached
// target pod or VMIM holds about a dozen of them, most either short ("vms", "Pending", a
// resourceVersion) or empty (spec.nodeName while unscheduled): those 32-byte slots were a
// third of each object. A CompactString is one word:
//   - empty: all zero (no allocation);
//   - up to 7 characters: kept in the word itself (the low byte tags it and holds the length);
//   - one of a fixed list of texts that recur on every cached object of a kind (phases, the
//     scheduler's SchedulingGated reason and message, our condition types and reasons, the
//     well-known topology keys: KnownTexts() in the .cc): its index in that list;
//   - longer: a pointer to one heap block holding a 32-bit length and the characters.
// Per-object texts stay with their object: the list is constant, nothing is pooled. Copies copy the
// text, as a std::string's do. It reads as a std::string_view (implicitly), converts to std::string
// (implicitly, for the callers that take one), compares by content with anything that reads as
// a string_view, and is assigned from any text.
#pragma once

#include <compare>
#include <cstddef>
#include <cstdint>
#include <iosfwd>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <string_view>

namespace kmt::api {

class CompactString {
 public:
  CompactString() = default;
  CompactString(std::string_view s) { Assign(s); }  // NOLINT(google-explicit-constructor)
  CompactString(const std::string& s) : CompactString(std::string_view(s)) {}  // NOLINT
  CompactString(const char* s) : CompactString(std::string_view(s)) {}         // NOLINT
  CompactString(const CompactString& o) : CompactString(o.view()) {}
  CompactString(CompactString&& o) noexcept : word_(o.word_) { o.word_ = 0; }
  CompactString& operator=(const CompactString& o);
  CompactString& operator=(CompactString&& o) noexcept;
  CompactString& operator=(std::string_view s);
  CompactString& operator=(const std::string& s) { return *this = std::string_view(s); }
  CompactString& operator=(const char* s) { return *this = std::string_view(s); }
  ~CompactString() { Free(); }

  std::string_view view() const;
  std::string str() const { return std::string(view()); }
  operator std::string_view() const { return view(); }  // NOLINT(google-explicit-constructor)
  operator std::string() const { return str(); }        // NOLINT(google-explicit-constructor)

  bool empty() const { return word_ == 0; }
  size_t size() const { return view().size(); }
  size_t length() const { return size(); }
  const char* data() const { return view().data(); }
  char operator[](size_t i) const { return view()[i]; }
  bool starts_with(std::string_view p) const { return view().starts_with(p); }
  bool ends_with(std::string_view p) const { return view().ends_with(p); }
  size_t find(std::string_view s, size_t pos = 0) const { return view().find(s, pos); }
  size_t find(char c, size_t pos = 0) const { return view().find(c, pos); }
  std::string substr(size_t pos, size_t n = std::string::npos) const {
    return std::string(view().substr(pos, n));
  }
  void clear() { *this = std::string_view(); }

  friend bool operator==(const CompactString& a, const CompactString& b) {
    return a.view() == b.view();
  }
  friend bool operator==(const CompactString& a, std::string_view b) { return a.view() == b; }
  friend bool operator==(const CompactString& a, const std::string& b) { return a.view() == b; }
  friend bool operator==(const CompactString& a, const char* b) {
    return a.view() == std::string_view(b);
  }
  friend std::strong_ordering operator<=>(const CompactString& a, const CompactString& b) {
    return a.view() <=> b.view();
  }
  friend std::strong_ordering operator<=>(const CompactString& a, std::string_view b) {
    return a.view() <=> b;
  }
  friend std::strong_ordering operator<=>(const CompactString& a, const std::string& b) {
    return a.view() <=> std::string_view(b);
  }
  friend std::strong_ordering operator<=>(const CompactString& a, const char* b) {
    return a.view() <=> std::string_view(b);
  }
  friend std::string operator+(const CompactString& a, std::string_view b) {
    return std::string(a.view()).append(b);
  }
  friend std::string operator+(std::string_view a, const CompactString& b) {
    return std::string(a).append(b.view());
  }
  friend std::string operator+(const CompactString& a, const std::string& b) {
    return std::string(a.view()).append(b);
  }
  friend std::string operator+(const std::string& a, const CompactString& b) {
    return std::string(a).append(b.view());
  }
  friend std::string operator+(const CompactString& a, const char* b) {
    return std::string(a.view()).append(b);
  }
  friend std::string operator+(const char* a, const CompactString& b) {
    return std::string(a).append(b.view());
  }

 private:
  static constexpr size_t kInline = 7;
  void Assign(std::string_view s);
  void Free();
  bool is_inline() const { return (word_ & 1U) != 0; }
  bool is_known() const { return (word_ & 3U) == 2U; }

  // 0: empty; low bit set: inline (length in bits 1..3, characters in bytes 1..7, so
  // little-endian only); low bits 10: a known text, its index above them; otherwise the
  // address of the heap block (uint32 length, characters; aligned, so low bits 00).
  uintptr_t word_ = 0;
};

std::ostream& operator<<(std::ostream& os, const CompactString& s);
void to_json(nlohmann::json& j, const CompactString& s);    // NOLINT(readability-identifier-naming)
void from_json(const nlohmann::json& j, CompactString& s);  // NOLINT(readability-identifier-naming)

}  // namespace kmt::api

template <>
struct std::hash<kmt::api::CompactString> {
  size_t operator()(const kmt::api::CompactString& s) const noexcept {
    return std::hash<std::string_view>{}(s.view());
  }
};
