// The connection state machine with an injected clock: every deadline fires at its limit
// and not a tick before, trickled bytes do not extend one, and the bound evicts the
// longest-idle connection that can be dropped.
#include "http/connection_table.h"

#include <catch2/catch.hpp>
#include <chrono>
#include <string>
#include <vector>

namespace kmt::http {
namespace {

using std::chrono::milliseconds;
const TimePoint t0{};
TimePoint At(int ms) { return t0 + milliseconds(ms); }

Limits Small(size_t max_connections = 8) {
  Limits l;
  l.handshake = milliseconds(2000);
  l.headers = milliseconds(5000);
  l.request = milliseconds(30000);
  l.write = milliseconds(10000);
  l.idle = milliseconds(60000);
  l.max_connections = max_connections;
  return l;
}

TEST_CASE("Every phase's deadline fires exactly at its limit, with its reason") {
  struct Row {
    Phase phase;
    int limit_ms;
    CloseReason reason;
  };
  auto row = GENERATE(Row{Phase::kHandshake, 2000, CloseReason::kHandshakeTimeout},
                      Row{Phase::kHeaders, 5000, CloseReason::kHeaderTimeout},
                      Row{Phase::kBody, 30000, CloseReason::kRequestTimeout},
                      Row{Phase::kWriting, 10000, CloseReason::kWriteTimeout},
                      Row{Phase::kIdle, 60000, CloseReason::kIdleTimeout});
  CAPTURE(std::string(ToString(row.phase)));
  ConnectionTable table(Small());
  auto a = table.Open(Phase::kHandshake, At(0));
  REQUIRE(a.admitted);
  const int entered = 100;
  if (row.phase == Phase::kBody) REQUIRE(table.Enter(a.id, Phase::kHeaders, At(entered)));
  if (row.phase != Phase::kHandshake) {
    REQUIRE(table.Enter(a.id, row.phase, At(row.phase == Phase::kBody ? entered + 50 : entered)));
  }
  const int start = row.phase == Phase::kHandshake ? 0 : entered;
  REQUIRE(table.Deadline(a.id) == At(start + row.limit_ms));
  CHECK(table.Expire(At(start + row.limit_ms - 1)).empty());
  CHECK(table.size() == 1);
  auto expired = table.Expire(At(start + row.limit_ms));
  REQUIRE(expired.size() == 1);
  CHECK(expired[0].first == a.id);
  CHECK(expired[0].second == row.reason);
  CHECK(table.size() == 0);
  CHECK_FALSE(table.Close(a.id));  // already gone: closing again is a no-op
}

TEST_CASE("A running handler has no deadline") {
  ConnectionTable table(Small());
  auto a = table.Open(Phase::kHeaders, At(0));
  table.Enter(a.id, Phase::kHandling, At(10));
  CHECK_FALSE(table.Deadline(a.id).has_value());
  CHECK(table.Expire(At(24 * 3600 * 1000)).empty());
  CHECK(table.size() == 1);
}

TEST_CASE("Trickled bytes do not extend the header or the request deadline") {
  ConnectionTable table(Small());
  auto a = table.Open(Phase::kHandshake, At(0));
  table.Enter(a.id, Phase::kHeaders, At(500));
  for (int ms = 1500; ms < 5500; ms += 1000) table.Touch(a.id, At(ms));
  CHECK(table.Expire(At(5499)).empty());
  CHECK(table.Expire(At(5500)).size() == 1);

  auto b = table.Open(Phase::kHeaders, At(0));
  table.Enter(b.id, Phase::kBody, At(1000));  // the body deadline counts from the request start
  for (int ms = 2000; ms < 30000; ms += 1000) table.Touch(b.id, At(ms));
  CHECK(table.Deadline(b.id) == At(30000));
  auto expired = table.Expire(At(30000));
  REQUIRE(expired.size() == 1);
  CHECK(expired[0].second == CloseReason::kRequestTimeout);
}

TEST_CASE("The next request's header deadline starts at its first byte after keep-alive") {
  ConnectionTable table(Small());
  auto a = table.Open(Phase::kHeaders, At(0));
  table.Enter(a.id, Phase::kBody, At(10));
  table.Enter(a.id, Phase::kHandling, At(20));
  table.Enter(a.id, Phase::kWriting, At(30));
  table.Enter(a.id, Phase::kIdle, At(40));
  CHECK(table.Deadline(a.id) == At(60040));
  table.Enter(a.id, Phase::kHeaders, At(50000));
  CHECK(table.Deadline(a.id) == At(55000));
  table.Enter(a.id, Phase::kBody, At(50001));
  CHECK(table.Deadline(a.id) == At(80000));
}

TEST_CASE("The bound evicts the longest-idle connection, never-served ones first") {
  ConnectionTable table(Small(3));
  // An established keep-alive connection (has served a request), idle since t=100.
  auto api = table.Open(Phase::kHandshake, At(0));
  table.Enter(api.id, Phase::kHeaders, At(10));
  table.Enter(api.id, Phase::kIdle, At(100));
  // Two silent connections, opened later than the keep-alive one went idle.
  auto silent1 = table.Open(Phase::kHandshake, At(200));
  auto silent2 = table.Open(Phase::kHandshake, At(300));
  table.Touch(silent1.id, At(400));  // silent1 moved a byte: silent2 is now the longest idle

  auto next = table.Open(Phase::kHandshake, At(500));
  REQUIRE(next.admitted);
  REQUIRE(next.evicted == silent2.id);
  CHECK(table.size() == 3);
  CHECK_FALSE(table.PhaseOf(silent2.id).has_value());

  auto next2 = table.Open(Phase::kHandshake, At(600));
  CHECK(next2.evicted == silent1.id);
  // Only served or newer connections left: the oldest never-served one (next) goes before
  // the keep-alive connection, although the keep-alive one is idle longer.
  auto next3 = table.Open(Phase::kHandshake, At(700));
  CHECK(next3.evicted == next.id);
  CHECK(table.PhaseOf(api.id) == Phase::kIdle);
}

TEST_CASE("Among served connections the longest idle goes; busy ones never do") {
  ConnectionTable table(Small(3));
  auto busy = table.Open(Phase::kHeaders, At(0));
  table.Enter(busy.id, Phase::kHandling, At(1));
  auto writing = table.Open(Phase::kHeaders, At(0));
  table.Enter(writing.id, Phase::kWriting, At(1));
  auto idle = table.Open(Phase::kHeaders, At(5));
  table.Enter(idle.id, Phase::kIdle, At(6));
  auto a = table.Open(Phase::kHeaders, At(10));
  REQUIRE(a.admitted);
  CHECK(a.evicted == idle.id);
  table.Enter(a.id, Phase::kHandling, At(11));
  // Now every held connection is busy: the next one is refused and nothing is evicted.
  auto refused = table.Open(Phase::kHeaders, At(12));
  CHECK_FALSE(refused.admitted);
  CHECK_FALSE(refused.evicted.has_value());
  CHECK(table.size() == 3);
  CHECK_FALSE(table.Enter(refused.id, Phase::kBody, At(13)));
}

TEST_CASE("One source holds at most max_per_source: its own connections make room") {
  Limits l = Small(10);
  l.max_per_source = 2;
  ConnectionTable table(l);
  auto a1 = table.Open(Phase::kHandshake, At(0), "10.0.0.66");
  auto a2 = table.Open(Phase::kHandshake, At(10), "10.0.0.66");
  auto b1 = table.Open(Phase::kHandshake, At(20), "10.0.0.1");
  CHECK(table.FromSource("10.0.0.66") == 2);
  // A third from the same source evicts that source's longest-idle one, though the table
  // has room and b1 is older than a2.
  auto a3 = table.Open(Phase::kHandshake, At(30), "10.0.0.66");
  REQUIRE(a3.admitted);
  CHECK(a3.evicted == a1.id);
  CHECK(table.FromSource("10.0.0.66") == 2);
  CHECK(table.PhaseOf(b1.id) == Phase::kHandshake);
  // When all of that source's connections are busy, its next one is refused.
  table.Enter(a2.id, Phase::kHandling, At(40));
  table.Enter(a3.id, Phase::kWriting, At(40));
  auto a4 = table.Open(Phase::kHandshake, At(50), "10.0.0.66");
  CHECK_FALSE(a4.admitted);
  CHECK_FALSE(a4.evicted.has_value());
  // Other sources still get in.
  CHECK(table.Open(Phase::kHandshake, At(60), "10.0.0.2").admitted);
  // Closing, expiring and evicting all give the source's slots back.
  table.Close(a2.id);
  CHECK(table.FromSource("10.0.0.66") == 1);
  table.Close(a3.id);
  CHECK(table.FromSource("10.0.0.66") == 0);
  CHECK(table.Expire(At(100000)).size() == 2);
  CHECK(table.FromSource("10.0.0.1") == 0);
  CHECK(table.size() == 0);
}

TEST_CASE(
    "A full table drops the most crowded source's connections, never a small source's "
    "handshake") {
  Limits l = Small(6);
  l.max_per_source = 4;
  ConnectionTable table(l);
  // The API server: one served keep-alive connection, idle the longest.
  auto api_idle = table.Open(Phase::kHandshake, At(0), "10.0.0.1");
  table.Enter(api_idle.id, Phase::kHeaders, At(1));
  table.Enter(api_idle.id, Phase::kIdle, At(2));
  // A client holding four served keep-alive connections, more recently active.
  std::vector<ConnectionTable::Id> flood;
  for (int i = 0; i < 4; ++i) {
    auto c = table.Open(Phase::kHandshake, At(10 + i), "10.0.0.66");
    table.Enter(c.id, Phase::kHeaders, At(20 + i));
    table.Enter(c.id, Phase::kIdle, At(30 + i));
    flood.push_back(c.id);
  }
  // The API server opens a new connection (handshaking): the table is now full.
  auto api_new = table.Open(Phase::kHandshake, At(100), "10.0.0.1");
  REQUIRE(api_new.admitted);
  CHECK_FALSE(api_new.evicted.has_value());
  // And another: the flooder's longest-idle connection goes, not the API server's older
  // idle one nor its handshake (never served, which alone would have ranked first).
  auto api_third = table.Open(Phase::kHandshake, At(110), "10.0.0.1");
  REQUIRE(api_third.admitted);
  CHECK(api_third.evicted == flood[0]);
  // The flooder reconnecting evicts its own connections (it is still the most crowded).
  auto again = table.Open(Phase::kHandshake, At(120), "10.0.0.66");
  CHECK(again.evicted == flood[1]);
  CHECK(table.PhaseOf(api_idle.id) == Phase::kIdle);
  CHECK(table.PhaseOf(api_new.id) == Phase::kHandshake);
  CHECK(table.PhaseOf(api_third.id) == Phase::kHandshake);
}

TEST_CASE("Expire removes only the connections past their deadline") {
  ConnectionTable table(Small(100));
  std::vector<ConnectionTable::Id> silent;
  silent.reserve(50);
  for (int i = 0; i < 50; ++i) silent.push_back(table.Open(Phase::kHandshake, At(i)).id);
  auto live = table.Open(Phase::kHandshake, At(0));
  table.Enter(live.id, Phase::kIdle, At(100));
  auto expired = table.Expire(At(2024));  // silent ones opened at 0..24 are past 2 s
  CHECK(expired.size() == 25);
  for (const auto& [id, reason] : expired) CHECK(reason == CloseReason::kHandshakeTimeout);
  CHECK(table.size() == 26);
  CHECK(table.PhaseOf(live.id) == Phase::kIdle);
  CHECK(table.Expire(At(2049)).size() == 25);
  CHECK(table.size() == 1);
}

}  // namespace
}  // namespace kmt::http
