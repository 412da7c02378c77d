// controller/events_test.cc — AsyncEventRecorder: order, never blocking the caller,
// dropping when full, draining at Stop.
#include "controller/events.h"

#include <catch2/catch.hpp>
#include <condition_variable>
#include <mutex>
#include <string>
#include <vector>

#include "base/fake_clock.h"
#include "base/poll.h"
#include "kube/error.h"
#include "kube/fake_client.h"

namespace kmt::controller {
namespace {

// A sink that records reasons and can be held shut.
struct Sink : EventRecorder {
  std::mutex mu;
  std::condition_variable cv;
  bool open = true;
  int entered = 0;
  std::vector<std::string> reasons;
  std::vector<EventLogFields> log_fields;

  void Record(const ObjectRef&, const EventSpec& e, const EventLogFields& fields) override {
    std::unique_lock<std::mutex> lock(mu);
    ++entered;
    cv.notify_all();
    cv.wait(lock, [this] { return open; });
    reasons.push_back(e.reason);
    log_fields.push_back(fields);
  }
  void Hold() {
    std::scoped_lock lock(mu);
    open = false;
  }
  void Release() {
    std::scoped_lock lock(mu);
    open = true;
    cv.notify_all();
  }
  void WaitEntered(int n) {
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, [&] { return entered >= n; });
  }
  std::vector<std::string> Got() {
    std::scoped_lock lock(mu);
    return reasons;
  }
};

struct World {
  base::FakeClock clock;
  std::vector<std::string> lines;
  std::mutex lines_mu;
  base::Logger log{clock, base::LogLevel::kDebug, base::LogFormat::kText,
                   [this](const std::string& l) {
                     std::scoped_lock lock(lines_mu);
                     lines.push_back(l);
                   }};
  Sink sink;
  ObjectRef about{"kubevirt.io/v1", "VirtualMachineInstanceMigration", "ns", "m", "uid", "1"};
  EventSpec Event(int i) { return {"Normal", "Reason" + std::to_string(i), "message"}; }
};

std::vector<std::string> Reasons(int from, int to) {
  std::vector<std::string> out;
  for (int i = from; i < to; ++i) out.push_back("Reason" + std::to_string(i));
  return out;
}

TEST_CASE("Events reach the sink in the order they were recorded") {
  World w;
  AsyncEventRecorder async(w.sink, w.clock, w.log);
  for (int i = 0; i < 50; ++i) async.Record(w.about, w.Event(i));
  async.Flush();
  CHECK(w.sink.Got() == Reasons(0, 50));
  CHECK(async.dropped() == 0);
}

TEST_CASE("Record never waits for a slow sink; beyond capacity Events are dropped and logged") {
  World w;
  AsyncEventRecorder async(w.sink, w.clock, w.log, /*capacity=*/3);
  w.sink.Hold();
  async.Record(w.about, w.Event(0));
  w.sink.WaitEntered(1);  // Event 0 is in the sink, which does not return
  for (int i = 1; i <= 5; ++i) async.Record(w.about, w.Event(i));  // 1..3 queue, 4 and 5 drop
  CHECK(async.dropped() == 2);
  {
    std::scoped_lock lock(w.lines_mu);
    REQUIRE(w.lines.size() == 2);
    CHECK(w.lines[0].find("Dropped event") != std::string::npos);
    CHECK(w.lines[0].find("Reason4") != std::string::npos);
  }
  w.sink.Release();
  async.Flush();
  CHECK(w.sink.Got() == Reasons(0, 4));
}

TEST_CASE("Stop delivers what is queued") {
  World w;
  {
    AsyncEventRecorder async(w.sink, w.clock, w.log);
    w.sink.Hold();
    for (int i = 0; i < 10; ++i) async.Record(w.about, w.Event(i));
    w.sink.WaitEntered(1);
    w.sink.Release();
    async.Stop();
    async.Record(w.about, w.Event(10));  // after Stop: dropped, not lost silently
    CHECK(async.dropped() == 1);
  }
  CHECK(w.sink.Got() == Reasons(0, 10));
}

TEST_CASE("Stop gives up on a sink that does not drain in time, counting what it drops") {
  World w;
  AsyncEventRecorder async(w.sink, w.clock, w.log, 1000, std::chrono::milliseconds(0));
  w.sink.Hold();
  for (int i = 0; i < 5; ++i) async.Record(w.about, w.Event(i));
  w.sink.WaitEntered(1);
  std::thread releaser([&] {  // once Stop has begun: Event 0 comes back to a stopping queue
    base::PollUntil(base::SystemClock(), std::chrono::seconds(10), base::Duration::zero(),
                    [&] { return async.stopping(); });
    w.sink.Release();
  });
  async.Stop();  // the deadline passed while Event 0 was in the sink: 1..4 dropped
  releaser.join();
  CHECK(w.sink.Got() == Reasons(0, 1));
  CHECK(async.dropped() == 4);
  std::scoped_lock lock(w.lines_mu);
  REQUIRE_FALSE(w.lines.empty());
  CHECK(w.lines.back().find("Dropped events at shutdown") != std::string::npos);
}

TEST_CASE("Lines about an Event carry the fields of the reconcile that recorded it") {
  World w;
  const EventLogFields reconcile{{"vmim", "ns/m"}, {"reconcile_id", "7"}};
  {
    AsyncEventRecorder async(w.sink, w.clock, w.log, /*capacity=*/1);
    w.sink.Hold();
    async.Record(w.about, w.Event(0), reconcile);
    w.sink.WaitEntered(1);
    async.Record(w.about, w.Event(1), reconcile);  // queued
    async.Record(w.about, w.Event(2), reconcile);  // dropped: logged with the reconcile
    async.Record(w.about, w.Event(3));             // dropped: logged with the VMIM only
    w.sink.Release();
    async.Flush();
    std::scoped_lock sink_lock(w.sink.mu);
    CHECK(w.sink.log_fields == std::vector<EventLogFields>{reconcile, reconcile});
  }
  {
    std::scoped_lock lock(w.lines_mu);
    REQUIRE(w.lines.size() == 2);
    CHECK(w.lines[0].find("vmim=ns/m reconcile_id=7") != std::string::npos);
    CHECK(w.lines[0].find("Reason2") != std::string::npos);
    CHECK(w.lines[1].find("vmim=ns/m") != std::string::npos);
    CHECK(w.lines[1].find("reconcile_id") == std::string::npos);
  }

  // The API recorder's failure line too.
  kube::FakeClient api;
  api.FailNext(kube::Verb::kCreate, 1, kube::ErrorKind::kTransport);
  KubeEventRecorder recorder(api, w.clock, w.log, "replica-1");
  recorder.Record(w.about, w.Event(4), reconcile);
  std::scoped_lock lock(w.lines_mu);
  REQUIRE(w.lines.size() == 3);
  CHECK(w.lines[2].find("Failed to record event") != std::string::npos);
  CHECK(w.lines[2].find("vmim=ns/m reconcile_id=7") != std::string::npos);
}

}  // namespace
}  // namespace kmt::controller
