// controller/events.cc
#include "controller/events.h"

#include <fmt/format.h>

#include <optional>

#include "kube/error.h"
#include "kube/resources.h"

namespace kmt::controller {

KubeEventRecorder::KubeEventRecorder(kube::KubeClient& client, const base::Clock& clock,
                                     base::Logger& log, std::string instance)
    : client_(client), clock_(clock), log_(log), instance_(std::move(instance)) {}

nlohmann::json KubeEventRecorder::Build(const ObjectRef& about, const EventSpec& event) {
  const base::WallTime now = clock_.WallNow();
  const auto nanos =
      std::chrono::duration_cast<std::chrono::nanoseconds>(now.time_since_epoch()).count();
  // client-go names events "<name>.<unix nanos in hex>"; the sequence number
  // keeps two events of one reconcile (same clock reading) apart.
  const std::string name =
      fmt::format("{}.{:x}", about.name, static_cast<uint64_t>(nanos) + seq_.fetch_add(1));
  const std::string ts = base::FormatRfc3339(now);
  return {{"apiVersion", "v1"},
          {"kind", "Event"},
          {"metadata", {{"name", name}, {"namespace", about.ns}}},
          {"involvedObject",
           {{"apiVersion", about.api_version},
            {"kind", about.kind},
            {"namespace", about.ns},
            {"name", about.name},
            {"uid", about.uid},
            {"resourceVersion", about.resource_version}}},
          {"type", event.type},
          {"reason", event.reason},
          {"message", event.message},
          {"source", {{"component", kEventSource}, {"host", instance_}}},
          {"reportingComponent", kEventSource},
          {"reportingInstance", instance_},
          {"count", 1},
          {"firstTimestamp", ts},
          {"lastTimestamp", ts}};
}

namespace {

// The lines about an Event carry its reconcile's fields, or at least the VMIM.
base::LogContext EventLog(base::Logger& log, const ObjectRef& about,
                          const EventLogFields& log_fields) {
  if (!log_fields.empty()) return {log, log_fields};
  return {log, {{"vmim", about.ns + "/" + about.name}}};
}

}  // namespace

void KubeEventRecorder::Record(const ObjectRef& about, const EventSpec& event,
                               const EventLogFields& log_fields) {
  const base::LogContext log = EventLog(log_, about, log_fields);
  try {
    client_.Create(kube::kEvents, about.ns, Build(about, event));
    log.Debug("Recorded event", {{"reason", event.reason}, {"type", event.type}});
  } catch (const kube::KubeError& e) {
    log.Error("Failed to record event", {{"reason", event.reason}, {"error", e.what()}});
  }
}

AsyncEventRecorder::AsyncEventRecorder(EventRecorder& sink, const base::Clock& clock,
                                       base::Logger& log, size_t capacity,
                                       std::chrono::milliseconds drain_for)
    : sink_(sink), clock_(clock), log_(log), capacity_(capacity), drain_for_(drain_for) {
  thread_ = std::thread([this] { Run(); });
}

AsyncEventRecorder::~AsyncEventRecorder() { Stop(); }

void AsyncEventRecorder::Record(const ObjectRef& about, const EventSpec& event,
                                const EventLogFields& log_fields) {
  {
    std::scoped_lock lock(mu_);
    if (!stopping_ && queue_.size() < capacity_) {
      queue_.push_back({about, event, log_fields});
      cv_.notify_one();
      return;
    }
  }
  dropped_.fetch_add(1);
  EventLog(log_, about, log_fields)
      .Error("Dropped event: the event queue is full or stopping", {{"reason", event.reason}});
}

void AsyncEventRecorder::Flush() {
  std::unique_lock<std::mutex> lock(mu_);
  idle_cv_.wait(lock, [this] { return queue_.empty() && !busy_; });
}

void AsyncEventRecorder::Stop() {
  {
    std::scoped_lock lock(mu_);
    if (stopping_) return;
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

bool AsyncEventRecorder::stopping() const {
  std::scoped_lock lock(mu_);
  return stopping_;
}

void AsyncEventRecorder::Run() {
  std::unique_lock<std::mutex> lock(mu_);
  std::optional<base::SteadyTime> deadline;
  for (;;) {
    cv_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
    if (stopping_ && !deadline) deadline = clock_.Now() + drain_for_;
    if (queue_.empty() || (deadline && clock_.Now() >= *deadline)) break;
    Queued next = std::move(queue_.front());
    queue_.pop_front();
    busy_ = true;
    lock.unlock();
    // Best effort: the sink logs its own failures, with the reconcile's fields.
    sink_.Record(next.about, next.event, next.log_fields);
    lock.lock();
    busy_ = false;
    if (queue_.empty()) idle_cv_.notify_all();
  }
  if (!queue_.empty()) {
    dropped_.fetch_add(queue_.size());
    log_.Error("Dropped events at shutdown", {{"count", std::to_string(queue_.size())}});
    queue_.clear();
  }
  idle_cv_.notify_all();
}

}  // namespace kmt::controller
