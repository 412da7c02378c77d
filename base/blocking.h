// base/blocking.h — marking work that must not wait, and the calls that would.
//
// The admission server decides a review on the I/O thread that read it when the decision
// needs no wait (a cached SubjectAccessReview answer, the VMIM from the informer), and on
// its handler pool otherwise (http/server.h, Route::try_inline). Which is which is only known
// while deciding, so the I/O thread runs the handler inside a NonBlockingScope and every
// call that can wait — an API request (kube::Transport, kube::FakeClient), a wait for
// another thread's result — calls MayBlock() first: inside the scope it throws WouldBlock,
// the attempt is dropped, and the request goes to the pool, where the same handler runs
// again from the start and may wait. The guard sits at the bottom, where the waiting
// happens, so a call path no one thought of cannot stall an I/O thread.
//
// WouldBlock is deliberately not a std::exception: handlers that turn a failed read into an
// answer (`catch (const std::exception&)`) let it pass; code that catches everything
// (`catch (...)`) must rethrow it (see IsWouldBlock).
#pragma once

#include <exception>

namespace kmt::base {

struct WouldBlock {};

// While one lives on a thread, MayBlock() on that thread throws WouldBlock. Nestable.
class NonBlockingScope {
 public:
  NonBlockingScope();
  ~NonBlockingScope();
  NonBlockingScope(const NonBlockingScope&) = delete;
  NonBlockingScope& operator=(const NonBlockingScope&) = delete;
};

// Whether this thread may wait now (no NonBlockingScope is open on it).
bool BlockingAllowed();

// Called before anything that may wait: throws WouldBlock inside a NonBlockingScope.
void MayBlock();

// Whether `e` holds a WouldBlock (for `catch (...)` blocks that must let it through).
bool IsWouldBlock(const std::exception_ptr& e);

}  // namespace kmt::base
