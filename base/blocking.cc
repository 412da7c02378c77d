#include "base/blocking.h"

namespace kmt::base {
namespace {

thread_local int non_blocking_depth = 0;

}  // namespace

NonBlockingScope::NonBlockingScope() { ++non_blocking_depth; }

NonBlockingScope::~NonBlockingScope() { --non_blocking_depth; }

bool BlockingAllowed() { return non_blocking_depth == 0; }

void MayBlock() {
  if (non_blocking_depth > 0) throw WouldBlock{};
}

bool IsWouldBlock(const std::exception_ptr& e) {
  if (!e) return false;
  try {
    std::rethrow_exception(e);
  } catch (const WouldBlock&) {
    return true;
  } catch (...) {
    return false;
  }
}

}  // namespace kmt::base
