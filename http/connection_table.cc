#include "http/connection_table.h"

#include <cstdint>
#include <iterator>
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

ConnectionTable::Admission ConnectionTable::Open(Phase first, TimePoint now,
                                                 std::string_view source) {
  Admission a;
  a.id = next_id_++;
  std::string key(source);
  const bool source_full = limits_.max_per_source > 0 && FromSource(key) >= limits_.max_per_source;
  if (source_full || entries_.size() >= limits_.max_connections) {
    a.evicted = Victim(key, /*own_only=*/source_full);
    if (!a.evicted) return a;  // refused
    Erase(entries_.find(*a.evicted));
  }
  ++per_source_[key];
  entries_.emplace(a.id, Entry{first, now, now, now, false, std::move(key)});
  a.admitted = true;
  return a;
}

size_t ConnectionTable::FromSource(std::string_view source) const {
  auto it = per_source_.find(std::string(source));
  return it == per_source_.end() ? 0 : it->second;
}

void ConnectionTable::Erase(std::unordered_map<Id, Entry>::iterator it) {
  auto s = per_source_.find(it->second.source);
  if (s != per_source_.end() && --s->second == 0) per_source_.erase(s);
  entries_.erase(it);
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

bool ConnectionTable::Close(Id id) {
  auto it = entries_.find(id);
  if (it == entries_.end()) return false;
  Erase(it);
  return true;
}

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
      auto next = std::next(it);
      Erase(it);
      it = next;
    } else {
      ++it;
    }
  }
  return out;
}

std::optional<ConnectionTable::Id> ConnectionTable::Victim(const std::string& opener,
                                                           bool own_only) const {
  std::optional<Id> best;
  // Rank: the most crowded source first, then (among equally crowded ones) the opener's own,
  // then never served, then the oldest activity, then the oldest id (a total order, so ties
  // are decided the same way every time).
  using Rank = std::tuple<size_t, bool, bool, TimePoint, Id>;
  Rank best_rank{};
  for (const auto& [id, e] : entries_) {
    if (!Evictable(e.phase)) continue;
    if (own_only && e.source != opener) continue;
    const size_t crowd = per_source_.at(e.source);
    Rank rank{SIZE_MAX - crowd, e.source != opener, e.served, e.last_activity, id};
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
