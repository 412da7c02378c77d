#include "api/compact_string.h"

#include <catch2/catch.hpp>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <unordered_set>
#include <utility>

namespace kmt::api {
namespace {

TEST_CASE("CompactString keeps any text in one word") {
  static_assert(sizeof(CompactString) == 8);
  const std::string text =
      GENERATE(std::string(), std::string("a"), std::string("vms"), std::string("1234567"),
               std::string("12345678"), std::string("11111111-aaaa-bbbb-cccc-000000000001"),
               std::string("with\0nul", 8), std::string(70000, 'x'), std::string("SchedulingGated"),
               std::string("Succeeded"),
               std::string("Scheduling is blocked due to non-empty scheduling gates"),
               std::string("kubernetes.io/hostname"), std::string("kubernetes.io/hostnam"));
  CAPTURE(text.size());
  const CompactString s(text);
  CHECK(s.view() == text);
  CHECK(s == text);
  CHECK(s.str() == text);
  CHECK(s.size() == text.size());
  CHECK(s.empty() == text.empty());
  CompactString copy = s;
  CHECK(copy == s);
  CompactString moved = std::move(copy);
  CHECK(moved == text);
  CHECK(copy.empty());  // NOLINT(bugprone-use-after-move): moved-from is empty
  CompactString assigned = "other text, long enough for the heap";
  assigned = s;
  CHECK(assigned == text);
  assigned = assigned.view();  // from its own text
  CHECK(assigned == text);
  assigned = moved.view().substr(0, text.size() / 2);
  CHECK(assigned == text.substr(0, text.size() / 2));
  assigned.clear();
  CHECK(assigned.empty());
  CHECK(assigned == "");
}

TEST_CASE("CompactString keeps a recurring text without a heap block") {
  const std::string gated = "SchedulingGated";
  const CompactString known(gated);
  CHECK(known == gated);
  CHECK(known.data() != gated.data());
  CHECK(known.data() == CompactString("SchedulingGated").data());  // the binary's one copy
  CHECK(CompactString("SchedulingGatedX").data() != known.data());
  CompactString assigned = "a per-object text of some length";
  assigned = known;
  CHECK(assigned == "SchedulingGated");
  assigned = "Unschedulable";
  CHECK(assigned == "Unschedulable");
  CHECK(known < CompactString("Unschedulable"));
}

TEST_CASE("CompactString compares, concatenates, prints and converts like a string") {
  const CompactString a = "node-a", b = "node-b-with-a-long-name";
  CHECK(a < b);
  CHECK(a != b);
  CHECK(a == "node-a");
  CHECK("node-a" == a);
  CHECK(a == std::string("node-a"));
  CHECK(a == std::string_view("node-a"));
  CHECK(a < std::string("node-b"));
  CHECK(a + "/x" == "node-a/x");
  CHECK("x/" + b == "x/node-b-with-a-long-name");
  CHECK(std::string("vms/") + a == "vms/node-a");
  const std::string converted = b;
  CHECK(converted == "node-b-with-a-long-name");
  std::ostringstream os;
  os << a << ' ' << b;
  CHECK(os.str() == "node-a node-b-with-a-long-name");
  nlohmann::json j = {{"n", b}};
  CHECK(j.dump() == R"({"n":"node-b-with-a-long-name"})");
  CHECK(j["n"].get<CompactString>() == b);
  std::unordered_set<CompactString> set{a, b, CompactString("node-a")};
  CHECK(set.size() == 2);
  std::map<CompactString, int> by_name{{b, 2}, {a, 1}};
  CHECK(by_name.begin()->first == a);
  CHECK(b.starts_with("node-b"));
  CHECK(b.find("long") == 14);
  CHECK(b.substr(0, 6) == "node-b");
}

}  // namespace
}  // namespace kmt::api
