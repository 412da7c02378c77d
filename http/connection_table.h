// http/connection_table.h — which connections the server holds, in which phase, and which
// to close: the pure core of the event-driven HTTP server (http/server.h).
//
// Every connection is in one phase at a time, and every phase but kHandling has a deadline:
//
//   accept ──► kHandshake ──► kHeaders ──► kBody ──► kHandling ──► kWriting ──► kIdle ─┐
//    (plain HTTP starts at kHeaders)  ▲                                              │
//                                     └──────────── first byte of the next request ──┘
//
//   kHandshake  TLS handshake             limits.handshake after accept          (2 s)
//   kHeaders    request line + headers    limits.headers after the request began (5 s)
//   kBody       the body                  limits.request after the request began (30 s)
//   kHandling   the handler runs          none here: the handler pool is bounded and the
//                                         handlers carry their own API timeouts
//   kWriting    the response              limits.write after it began            (10 s)
//   kIdle       keep-alive, between       limits.idle after the last response   (60 s)
//               requests
//
// A request "begins" when its phase kHeaders begins: right after the handshake (or accept)
// for the first request, at the first byte after kIdle for later ones. Bytes arriving do not
// extend a deadline: a client trickling one byte a second is closed when its phase ends,
// exactly as a silent one is.
//
// The table holds at most limits.max_connections, and at most limits.max_per_source from
// one source (the peer's address). A connection the server can drop without losing work is
// one in any phase but kHandling and kWriting. Opening one more from a source at its bound
// evicts that source's own droppable connection; opening one more in a full table evicts a
// droppable connection of the source holding the most (so a client that fills the table,
// with silent connections or with served keep-alive ones, loses its own, and the API
// server's few connections, handshaking or idle, are never preferred to it; among equally
// crowded sources the opener's own pays). Within a source: first the connections that have never
// completed a request, then the one idle the longest (oldest last activity). When no connection can
// be dropped, the new one is refused.
//
// Not thread-safe; http::Server guards it with one mutex. Time is passed in: tests drive it
// with any clock.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace kmt::http {

using TimePoint = std::chrono::steady_clock::time_point;

enum class Phase { kHandshake, kHeaders, kBody, kHandling, kWriting, kIdle };

// Why a connection left the table (the label of kmt_webhook_connections_closed_total).
enum class CloseReason {
  kHandshakeTimeout,
  kHeaderTimeout,
  kRequestTimeout,  // the body did not arrive within limits.request
  kWriteTimeout,
  kIdleTimeout,
  kEvicted,  // made room for a new connection
  kRefused,  // the table was full of busy connections
  kDone,     // the server closed it after a response (Connection: close, errors, stop)
  kPeerClosed,
  kError,  // TLS or socket error
};

std::string_view ToString(Phase phase);
std::string_view ToString(CloseReason reason);

struct Limits {
  std::chrono::milliseconds handshake{2000};
  std::chrono::milliseconds headers{5000};
  std::chrono::milliseconds request{30000};  // the API server's longest webhook timeout
  std::chrono::milliseconds write{10000};
  std::chrono::milliseconds idle{60000};
  size_t max_connections = 1024;
  size_t max_per_source = 256;  // 0: no bound of its own
};

class ConnectionTable {
 public:
  using Id = uint64_t;

  explicit ConnectionTable(Limits limits);

  struct Admission {
    bool admitted = false;      // false: refused (every held connection is busy)
    Id id = 0;                  // the new connection's id (also when refused)
    std::optional<Id> evicted;  // a connection removed to make room: close it
  };
  // A new connection from `source` (the peer's address) starting in `first` (kHandshake for
  // TLS, kHeaders for plain HTTP).
  Admission Open(Phase first, TimePoint now, std::string_view source = {});

  // The connection moves to `phase` at `now`; entering kIdle marks it as having served a
  // request. Unknown ids (already expired or evicted) are ignored: returns false.
  bool Enter(Id id, Phase phase, TimePoint now);

  // Bytes moved on the connection at `now` (its idleness, for eviction; deadlines stay).
  void Touch(Id id, TimePoint now);

  // Removes the connection; false when it was no longer held.
  bool Close(Id id);

  // Removes and returns every connection whose phase deadline is at or before `now`.
  std::vector<std::pair<Id, CloseReason>> Expire(TimePoint now);

  // The phase deadline of a held connection (none while kHandling).
  std::optional<TimePoint> Deadline(Id id) const;
  std::optional<Phase> PhaseOf(Id id) const;

  // Ids of every held connection (for a server that stops).
  std::vector<Id> Ids() const;

  size_t size() const { return entries_.size(); }
  // Connections held from `source`.
  size_t FromSource(std::string_view source) const;
  const Limits& limits() const { return limits_; }

 private:
  struct Entry {
    Phase phase;
    TimePoint phase_start;
    TimePoint request_start;
    TimePoint last_activity;
    bool served = false;
    std::string source;
  };
  std::optional<TimePoint> DeadlineOf(const Entry& e) const;
  // The connection to drop for a new one from `opener`: of `opener` only when `own_only`,
  // else of the most crowded source (the opener's own first among equally crowded ones).
  std::optional<Id> Victim(const std::string& opener, bool own_only) const;
  void Erase(std::unordered_map<Id, Entry>::iterator it);

  Limits limits_;
  Id next_id_ = 1;
  std::unordered_map<Id, Entry> entries_;
  std::unordered_map<std::string, size_t> per_source_;  // held connections, by source
};

}  // namespace kmt::http
