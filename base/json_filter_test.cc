// base/json_filter_test.cc
#include "base/json_filter.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdint>
#include <cstdlib>
#include <new>
#include <random>
#include <string>
#include <vector>

// Counts the allocations of this thread while `g_counting` is set: a skipped value must cost
// none. Not under a sanitizer, whose own operator new the library's allocations keep using.
namespace {
thread_local bool g_counting = false;
thread_local size_t g_allocations = 0;
}  // namespace

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr bool kCountsAllocations = false;
#else
constexpr bool kCountsAllocations = true;
void* operator new(size_t n) {
  if (g_counting) ++g_allocations;
  if (void* p = std::malloc(n == 0 ? 1 : n)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, size_t /*n*/) noexcept { std::free(p); }
#endif

namespace kmt::base {
namespace {

using Verdict = JsonFilter::Verdict;

// Keeps the members named in `drop` out of every object, at any depth, and records what it
// was asked.
class DropByName : public JsonFilter {
 public:
  explicit DropByName(std::vector<std::string> drop) : drop_(std::move(drop)) {}
  Verdict Member(const JsonScope& /*object*/, std::string_view key) override {
    members.emplace_back(key);
    for (const std::string& d : drop_) {
      if (key == d) return Verdict::Skip();
    }
    return Verdict::Filter({});
  }
  Verdict Element(const JsonScope& /*array*/) override {
    ++elements;
    return Verdict::Filter({});
  }
  void End(const JsonScope& /*scope*/, Json& container) override { ended.push_back(container); }

  std::vector<std::string> members;
  size_t elements = 0;
  std::vector<Json> ended;

 private:
  std::vector<std::string> drop_;
};

const char* kPod = R"({"apiVersion": "v1", "kind": "Pod",
  "metadata": {"name": "p", "labels": {"a": "1", "b": "2"}, "managedFields": [{"x": {"y": [1]}}]},
  "spec": {"containers": [{"name": "c", "ports": [{"containerPort": 8080}]}], "n": -3,
           "u": 18446744073709551615, "f": 1.5e3, "t": true, "z": null, "s": "\u00e9\n"}})";

TEST_CASE("With nothing left out, the DOM is Json::parse's, number types included") {
  for (const char* text :
       {kPod, "[1, -1, 1.0, \"x\", {}, []]", "3", "\"s\"", "null", R"({"a": 1, "a": 2})"}) {
    CAPTURE(text);
    DropByName none({});
    const Json got = ParseFiltered(text, none, Verdict::Filter({}));
    const Json want = Json::parse(text);
    CHECK(got == want);
    CHECK(got.dump() == want.dump());
    CHECK(ParseFiltered(text, none, Verdict::Whole()).dump() == want.dump());
  }
  DropByName none({});
  const Json pod = ParseFiltered(kPod, none, Verdict::Whole());
  CHECK(pod["spec"]["n"].is_number_integer());
  CHECK(pod["spec"]["u"].is_number_unsigned());
  CHECK(pod["spec"]["f"].is_number_float());
}

TEST_CASE("A skipped member is absent; everything else is built as Json::parse builds it") {
  DropByName drop({"managedFields", "b"});
  const Json got = ParseFiltered(kPod, drop, Verdict::Filter({}));
  Json want = Json::parse(kPod);
  want["metadata"].erase("managedFields");
  want["metadata"]["labels"].erase("b");
  CHECK(got == want);
  // Nothing inside the skipped value was asked about.
  CHECK(std::count(drop.members.begin(), drop.members.end(), "x") == 0);
  CHECK(std::count(drop.members.begin(), drop.members.end(), "y") == 0);
}

TEST_CASE("The filter is asked only inside the containers it asked to see") {
  class OnlyMetadata : public JsonFilter {
   public:
    Verdict Member(const JsonScope& in, std::string_view key) override {
      asked.emplace_back(key);
      if (in.kind == 0) return key == "metadata" ? Verdict::Filter({1}) : Verdict::Whole();
      return key == "managedFields" ? Verdict::Skip() : Verdict::Whole();
    }
    std::vector<std::string> asked;
  } f;
  const Json got = ParseFiltered(kPod, f, Verdict::Filter({0}));
  CHECK(f.asked == std::vector<std::string>{"apiVersion", "kind", "metadata", "name", "labels",
                                            "managedFields", "spec"});
  CHECK(got["spec"] == Json::parse(kPod)["spec"]);
  CHECK_FALSE(got["metadata"].contains("managedFields"));
  CHECK(got["metadata"]["labels"] == Json::parse(R"({"a": "1", "b": "2"})"));
}

TEST_CASE("An array entered with Filter has each element decided; a skipped one is left out") {
  class OddOnes : public JsonFilter {
   public:
    Verdict Member(const JsonScope&, std::string_view) override { return Verdict::Whole(); }
    Verdict Element(const JsonScope& in) override {
      CHECK(in.kind == 7);
      return n++ % 2 == 0 ? Verdict::Skip() : Verdict::Whole();
    }
    int n = 0;
  } f;
  CHECK(ParseFiltered(R"([0, {"a": [1]}, [2], "3", null, 5])", f, Verdict::Filter({7})) ==
        Json::parse(R"([{"a": [1]}, "3", 5])"));
  CHECK(f.n == 6);
}

TEST_CASE("Filter on a value that is no container keeps it as it is") {
  DropByName f({"x"});
  CHECK(ParseFiltered(R"({"a": "s", "b": 2, "c": null})", f, Verdict::Filter({})) ==
        Json::parse(R"({"a": "s", "b": 2, "c": null})"));
  CHECK(ParseFiltered("12", f, Verdict::Filter({})) == 12);
  CHECK(f.ended.size() == 1);  // the root object only
}

TEST_CASE("End sees each filtered container built, innermost first, and may add to it") {
  class CountSkipped : public JsonFilter {
   public:
    Verdict Member(const JsonScope& in, std::string_view key) override {
      if (key.starts_with("drop")) {
        ++skipped[in.kind];
        return Verdict::Skip();
      }
      return Verdict::Filter({in.kind + 1});
    }
    void End(const JsonScope& in, Json& container) override {
      order.push_back(in.kind);
      if (container.is_object() && skipped[in.kind] > 0) container["dropped"] = skipped[in.kind];
    }
    int skipped[8] = {};
    std::vector<int> order;
  } f;
  const Json got = ParseFiltered(R"({"a": {"drop1": 1, "drop2": {"b": 2}, "c": 3}, "drop": []})", f,
                                 Verdict::Filter({0}));
  CHECK(got == Json::parse(R"({"a": {"c": 3, "dropped": 2}, "dropped": 1})"));
  CHECK(f.order == std::vector<int>{1, 0});
}

TEST_CASE("A repeated member's last kept value wins; a skipped repeat leaves the kept one") {
  class SkipSecond : public JsonFilter {
   public:
    Verdict Member(const JsonScope&, std::string_view key) override {
      return key == "a" && seen_a++ > 0 ? Verdict::Skip() : Verdict::Whole();
    }
    int seen_a = 0;
  } f;
  CHECK(ParseFiltered(R"({"a": 1, "b": 1, "a": {"x": 2}, "b": 2})", f, Verdict::Filter({})) ==
        Json::parse(R"({"a": 1, "b": 2})"));
}

TEST_CASE("A skipped root reads as whole") {
  DropByName f({});
  CHECK(ParseFiltered(kPod, f, Verdict::Skip()) == Json::parse(kPod));
}

TEST_CASE("Text that is not JSON is a discarded value with nlohmann's message") {
  for (const char* text :
       {"", "{", R"({"a": 1,})", "[1] x", R"({"a": "\ud800"})", "1e999", "nul"}) {
    CAPTURE(text);
    DropByName f({"a"});
    std::string error;
    const Json got = ParseFiltered(text, f, Verdict::Filter({}), &error);
    CHECK(got.is_discarded());
    std::string want;
    try {
      const Json parsed = Json::parse(text);
      FAIL("parsed: " << parsed.dump());
    } catch (const Json::exception& e) {
      want = e.what();
    }
    CHECK(error == want);
    CHECK(ParseFiltered(text, f, Verdict::Filter({})).is_discarded());
  }
}

TEST_CASE("The text's own bytes bound the parse: no terminator is read") {
  const std::string buffer = R"({"a": [1, 2]}{"b": 3})";
  DropByName f({});
  CHECK(ParseFiltered(std::string_view(buffer).substr(0, 13), f, Verdict::Whole()) ==
        Json::parse(R"({"a": [1, 2]})"));
  CHECK(ParseFiltered(std::string_view(buffer).substr(0, 12), f, Verdict::Whole()).is_discarded());
}

TEST_CASE("A skipped value is never built: parsing it allocates nothing") {
  if (!kCountsAllocations) {
    SUCCEED("allocations are not counted under a sanitizer");
    return;
  }
  // The parser's own buffers grow to the longest token first; the kept member comes first
  // and is as long as any string in the skipped one.
  const std::string kept = R"({"a": ")" + std::string(64, 'k') + R"(", "drop": )";
  std::string big = "[";
  for (int i = 0; i < 200; ++i) {
    if (i > 0) big += ",";
    big += R"({"k)" + std::to_string(i) + R"(": ")" + std::string(60, 'v') +
           R"(", "n": [1.5, -2, {"deep": [[[null]]]}]})";
  }
  big += "]";
  const auto allocations = [](const std::string& text) {
    DropByName f({"drop"});
    g_allocations = 0;
    g_counting = true;
    Json got = ParseFiltered(text, f, Verdict::Filter({}));
    g_counting = false;
    CHECK(got == Json{{"a", std::string(64, 'k')}});
    return g_allocations;
  };
  const size_t small = allocations(kept + "0}");
  CHECK(small > 0);  // the kept members are counted
  CHECK(allocations(kept + big + "}") == small);
}

TEST_CASE("Nesting deeper than any stack inside a skipped value is counted, not recursed") {
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  DropByName f({"drop"});
  CHECK(ParseFiltered(R"({"drop": )" + deep + R"(, "a": 1})", f, Verdict::Filter({})) ==
        Json{{"a", 1}});
}

// Decides each member by its key's first letter: skip, keep whole, or look inside; elements
// alternate. So one text exercises every verdict at every depth.
class ByLetter : public JsonFilter {
 public:
  Verdict Member(const JsonScope& /*object*/, std::string_view key) override {
    const char c = key.empty() ? 'f' : key.front();
    if (c == 's') return Verdict::Skip();
    if (c == 'w') return Verdict::Whole();
    return Verdict::Filter({});
  }
  Verdict Element(const JsonScope& /*array*/) override {
    ++elements_;
    if (elements_ % 3 == 0) return Verdict::Skip();
    return elements_ % 3 == 1 ? Verdict::Filter({}) : Verdict::Whole();
  }
  void End(const JsonScope& /*scope*/, Json& container) override {
    if (container.is_object()) container["ended"] = ++ended_;
  }

 private:
  size_t elements_ = 0;
  size_t ended_ = 0;
};

std::string RandomText(std::mt19937& rng, int depth) {
  auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<unsigned>(n)); };
  static const char* const kKeys[] = {"s",  "w",          "f",      "sa",      "wb",
                                      "fc", R"(a\u00e9)", R"(s\n)", R"(w\"x)", ""};
  static const char* const kScalars[] = {"0",
                                         "-0",
                                         "12",
                                         "-7",
                                         "1.5",
                                         "-2.5e-3",
                                         "1E400",
                                         "18446744073709551615",
                                         "18446744073709551616",
                                         "-9223372036854775809",
                                         "true",
                                         "false",
                                         "null",
                                         R"("")",
                                         R"("plain")",
                                         R"("\u00e9\t\"\\\/")",
                                         R"("\ud83d\ude00")",
                                         "\"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\"",
                                         "1e-400",
                                         "0.0000001",
                                         "-9223372036854775808",
                                         "9223372036854775808",
                                         "123456789012345678901234567890",
                                         "1.7976931348623157e308",
                                         "4.9e-324",
                                         "-0.0",
                                         "2E+2",
                                         R"("\b\f\n\r\t x\u0041\ud800\udc00\u20ac")"};
  if (depth <= 0 || pick(3) == 0) return kScalars[pick(static_cast<int>(std::size(kScalars)))];
  std::string out;
  const int n = pick(4);
  if (pick(2) == 0) {
    out = "{";
    for (int i = 0; i < n; ++i) {
      if (i > 0) out += pick(4) == 0 ? " , " : ",";
      out += std::string("\"") + kKeys[pick(static_cast<int>(std::size(kKeys)))] + "\"" +
             (pick(3) == 0 ? " :\n " : ":") + RandomText(rng, depth - 1);
    }
    return out + "}";
  }
  out = "[";
  for (int i = 0; i < n; ++i) {
    if (i > 0) out += ",";
    out += (pick(5) == 0 ? "\t" : "") + RandomText(rng, depth - 1);
  }
  return out + "]";
}

// Whether a and b have the same type at every position (nlohmann's == calls 1, 1u and 1.0
// equal).
bool SameTypes(const Json& a, const Json& b) {
  if (a.type() != b.type() || a.size() != b.size()) return false;
  if (a.is_object()) {
    for (auto it = a.begin(); it != a.end(); ++it) {
      if (!b.contains(it.key()) || !SameTypes(*it, b.at(it.key()))) return false;
    }
  } else if (a.is_array()) {
    for (size_t i = 0; i < a.size(); ++i) {
      if (!SameTypes(a[i], b[i])) return false;
    }
  }
  return true;
}

TEST_CASE("The fast path gives the SAX path's answer on random and broken texts") {
  const uint32_t seed = GENERATE(1u, 2u);  // a failure names its seed
  std::mt19937 rng(seed);
  static const char kBytes[] = {'"',    '\\',   '{',    '}',    '[',    ']',    ',', ':',
                                'u',    '0',    '-',    'e',    '.',    ' ',    'D', '8',
                                '\x80', '\xc3', '\xed', '\xf4', '\x1f', '\x7f', 't', 'n',
                                '\xef', '\xbf', 'E',    '+',    '1',    '9'};
  size_t broken = 0;
  for (int i = 0; i < 10000; ++i) {
    std::string text =
        (rng() % 4 == 0 ? R"({"f": )" : R"({"w": 1, "f": )") + RandomText(rng, 5) + "}";
    const int mutations = static_cast<int>(rng() % 3);
    for (int m = 0; m < mutations && !text.empty(); ++m) {
      const size_t at = rng() % text.size();
      const char b = kBytes[rng() % sizeof(kBytes)];
      switch (rng() % 3) {
        case 0:
          text[at] = b;
          break;
        case 1:
          text.insert(text.begin() + static_cast<ptrdiff_t>(at), b);
          break;
        default:
          text.erase(at, 1);
          break;
      }
    }
    CAPTURE(seed, i, text);
    ByLetter fast_filter, sax_filter;
    std::string fast_error, sax_error;
    const Json fast = ParseFiltered(text, fast_filter, Verdict::Filter({}), &fast_error);
    const Json sax = ParseFilteredBySax(text, sax_filter, Verdict::Filter({}), &sax_error);
    REQUIRE(fast.is_discarded() == sax.is_discarded());
    if (sax.is_discarded()) {
      ++broken;
      CHECK(fast_error == sax_error);
    } else {
      CHECK(fast == sax);
      CHECK(SameTypes(fast, sax));
    }
  }
  CHECK(broken > 2000);   // the mutations do break texts
  CHECK(broken < 18000);  // and leave many whole
}

}  // namespace
}  // namespace kmt::base
