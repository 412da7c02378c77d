// kube/watcher_backoff_test.cc
#include "kube/watcher_backoff.h"

#include <catch2/catch.hpp>
#include <vector>

namespace kmt::kube {
namespace {

using ms = std::chrono::milliseconds;
using std::chrono::seconds;

TEST_CASE("Nothing owed, nothing waited") {
  WatcherBackoff b(ms(800), ms(30000));
  CHECK_FALSE(b.Take().has_value());
  CHECK(b.consecutive_failures() == 0);
}

TEST_CASE("Doubles per consecutive failure, capped, and a success resets it") {
  WatcherBackoff b(ms(800), ms(5000));
  std::vector<ms> waited;
  for (int i = 0; i < 5; ++i) {
    b.Owe();
    waited.push_back(*b.Take());
  }
  CHECK(waited == std::vector<ms>{ms(800), ms(1600), ms(3200), ms(5000), ms(5000)});
  CHECK(b.consecutive_failures() == 5);
  b.Reset();
  CHECK(b.Next() == ms(800));
  b.Owe();
  CHECK(b.Take() == ms(800));
}

TEST_CASE("No shorter than the server's Retry-After, itself capped") {
  WatcherBackoff b(ms(800), ms(30000));
  b.Owe(seconds(5));
  CHECK(b.Take() == ms(5000));
  b.Owe(seconds(0));
  CHECK(b.Take() == ms(1600));
  b.Owe(seconds(3600));
  CHECK(b.Take() == ms(30000));
  b.Owe();  // a later failure without one: the exponential alone
  CHECK(b.Take() == ms(6400));
}

}  // namespace
}  // namespace kmt::kube
