#include "http/connection_table.h"

#include <tuple>

namespace kmt::http {

std::string_view ToString(Phase phase) {
  switch (phase) {
    case Phase::kHandshake:
      return "handshake";
    case Phase::kHeaders:
      return "headers";
    case Phase::kBody:
      return "body";
    case Phase::kHandling:
      return "handling";
    case Phase::kWriting:
      return "writing";
    case Phase::kIdle:
      return "idle";
  }
  return "unknown";
}

std::string_view ToString(CloseReason reason) {
  switch (reason) {
    case CloseReason::kHandshakeTimeout:
      return "handshake_timeout";
    case CloseReason::kHeaderTimeout:
      return "header_timeout";
    case CloseReason::kRequestTimeout:
      return "request_timeout";
    case CloseReason::kWriteTimeout:
      return "write_timeout";
    case CloseReason::kIdleTimeout:
      return "idle_timeout";
    case CloseReason::kEvicted:
      return "evicted";
    case CloseReason::kRefused:
      return "refused";
    case CloseReason::kDone:
      return "done";
    case CloseReason::kPeerClosed:
      return "peer_closed";
    case CloseReason::kError:
      return "error";
  }
  return "unknown";
}

namespace {

CloseReason TimeoutReason(Phase phase) {
  switch (phase) {
    case Phase::kHandshake:
      return CloseReason::kHandshakeTimeout;
    case Phase::kHeaders:
      return CloseReason::kHeaderTimeout;
    case Phase::kBody:
      return CloseReason::kRequestTimeout;
    case Phase::kWriting:
      return CloseReason::kWriteTimeout;
    case Phase::kIdle:
    case Phase::kHandling:  // has no deadline; never asked
      break;
  }
  return CloseReason::kIdleTimeout;
}

bool Evictable(Phase phase) { return phase != Phase::kHandling && phase != Phase::kWriting; }

}  // namespace

ConnectionTable::ConnectionTable(Limits limits) : limits_(limits) {
  if (limits_.max_connections == 0) limits_.max_connections = 1;
}

ConnectionTable::Admission ConnectionTable::Open(Phase first, TimePoint now) {
  Admission a;
  a.id = next_id_++;
  if (entries_.size() >= limits_.max_connections) {
    a.evicted = Victim();
    if (!a.evicted) return a;  // refused
    entries_.erase(*a.evicted);
  }
  entries_.emplace(a.id, Entry{first, now, now, now, false});
  a.admitted = true;
  return a;
}

bool ConnectionTable::Enter(Id id, Phase phase, TimePoint now) {
  auto it = entries_.find(id);
  if (it == entries_.end()) return false;
  Entry& e = it->second;
  if (phase == Phase::kHeaders) e.request_start = now;
  if (phase == Phase::kIdle) e.served = true;
  e.phase = phase;
  e.phase_start = now;
  e.last_activity = now;
  return true;
}

void ConnectionTable::Touch(Id id, TimePoint now) {
  auto it = entries_.find(id);
  if (it != entries_.end()) it->second.last_activity = now;
}

bool ConnectionTable::Close(Id id) { return entries_.erase(id) > 0; }

std::optional<TimePoint> ConnectionTable::DeadlineOf(const Entry& e) const {
  switch (e.phase) {
    case Phase::kHandshake:
      return e.phase_start + limits_.handshake;
    case Phase::kHeaders:
      return e.request_start + limits_.headers;
    case Phase::kBody:
      return e.request_start + limits_.request;
    case Phase::kHandling:
      return std::nullopt;
    case Phase::kWriting:
      return e.phase_start + limits_.write;
    case Phase::kIdle:
      return e.phase_start + limits_.idle;
  }
  return std::nullopt;
}

std::vector<std::pair<ConnectionTable::Id, CloseReason>> ConnectionTable::Expire(TimePoint now) {
  std::vector<std::pair<Id, CloseReason>> out;
  for (auto it = entries_.begin(); it != entries_.end();) {
    std::optional<TimePoint> deadline = DeadlineOf(it->second);
    if (deadline && *deadline <= now) {
      out.emplace_back(it->first, TimeoutReason(it->second.phase));
      it = entries_.erase(it);
    } else {
      ++it;
    }
  }
  return out;
}

std::optional<ConnectionTable::Id> ConnectionTable::Victim() const {
  std::optional<Id> best;
  // Rank: never served first, then the oldest activity, then the oldest id (a total order,
  // so ties are decided the same way every time).
  std::tuple<bool, TimePoint, Id> best_rank{};
  for (const auto& [id, e] : entries_) {
    if (!Evictable(e.phase)) continue;
    std::tuple<bool, TimePoint, Id> rank{e.served, e.last_activity, id};
    if (!best || rank < best_rank) {
      best = id;
      best_rank = rank;
    }
  }
  return best;
}

std::optional<TimePoint> ConnectionTable::Deadline(Id id) const {
  auto it = entries_.find(id);
  if (it == entries_.end()) return std::nullopt;
  return DeadlineOf(it->second);
}

std::optional<Phase> ConnectionTable::PhaseOf(Id id) const {
  auto it = entries_.find(id);
  if (it == entries_.end()) return std::nullopt;
  return it->second.phase;
}

std::vector<ConnectionTable::Id> ConnectionTable::Ids() const {
  std::vector<Id> ids;
  ids.reserve(entries_.size());
  for (const auto& [id, e] : entries_) ids.push_back(id);
  return ids;
}

}  // namespace kmt::http
