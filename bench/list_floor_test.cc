// The cold-start floor's parser: every byte parsed, nothing kept but the continue token.
#include "bench/list_floor.h"

#include <catch2/catch.hpp>

namespace kmt::bench {
namespace {

TEST_CASE("ParseListPageDiscarding counts the items and keeps the root's continue token") {
  const auto page = ParseListPageDiscarding(R"({"kind":"PodList","apiVersion":"v1",
      "metadata":{"resourceVersion":"12","continue":"abc","remainingItemCount":3},
      "items":[{"metadata":{"name":"a","continue":"not this","labels":{"x":"y"}},
                "spec":{"containers":[{"name":"c"}],"items":[{}]}},
               {"metadata":{"name":"b"}}]})");
  REQUIRE(page);
  CHECK(page->items == 2);
  CHECK(page->continue_token == "abc");
}

TEST_CASE("ParseListPageDiscarding: the last page has no token; an empty list no items") {
  const auto last = ParseListPageDiscarding(R"({"metadata":{"resourceVersion":"9"},"items":[]})");
  REQUIRE(last);
  CHECK(last->items == 0);
  CHECK(last->continue_token.empty());
  const auto none = ParseListPageDiscarding(R"({"metadata":{},"items":null})");
  REQUIRE(none);
  CHECK(none->items == 0);
}

TEST_CASE("ParseListPageDiscarding refuses what is not JSON") {
  CHECK_FALSE(ParseListPageDiscarding("{\"items\":[{}"));
  CHECK_FALSE(ParseListPageDiscarding("not json"));
}

}  // namespace
}  // namespace kmt::bench
