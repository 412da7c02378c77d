#include "base/blocking.h"

#include <catch2/catch.hpp>
#include <stdexcept>
#include <thread>

namespace kmt::base {
namespace {

TEST_CASE("MayBlock throws WouldBlock only inside a NonBlockingScope") {
  CHECK(BlockingAllowed());
  CHECK_NOTHROW(MayBlock());
  {
    NonBlockingScope scope;
    CHECK_FALSE(BlockingAllowed());
    CHECK_THROWS_AS(MayBlock(), WouldBlock);
    {
      NonBlockingScope nested;
      CHECK_THROWS_AS(MayBlock(), WouldBlock);
    }
    CHECK_THROWS_AS(MayBlock(), WouldBlock);  // the outer scope still holds
  }
  CHECK(BlockingAllowed());
  CHECK_NOTHROW(MayBlock());
}

TEST_CASE("A NonBlockingScope holds on its own thread only") {
  NonBlockingScope scope;
  bool other_allowed = false;
  std::thread t([&] { other_allowed = BlockingAllowed(); });
  t.join();
  CHECK(other_allowed);
  CHECK_FALSE(BlockingAllowed());
}

TEST_CASE("WouldBlock passes handlers that catch std::exception, and IsWouldBlock finds it") {
  NonBlockingScope scope;
  bool caught_as_error = false;
  std::exception_ptr seen;
  try {
    try {
      MayBlock();
    } catch (const std::exception&) {
      caught_as_error = true;
    }
  } catch (...) {
    seen = std::current_exception();
  }
  CHECK_FALSE(caught_as_error);
  CHECK(IsWouldBlock(seen));
  CHECK_FALSE(IsWouldBlock(std::make_exception_ptr(std::runtime_error("x"))));
  CHECK_FALSE(IsWouldBlock(nullptr));
}

}  // namespace
}  // namespace kmt::base
