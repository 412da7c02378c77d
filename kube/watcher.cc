// kube/watcher.cc
#include "kube/watcher.h"

#include <fmt/format.h>

#include <algorithm>
#include <utility>

#include "base/json.h"
#include "kube/paths.h"

namespace kmt::kube {

const char* WatcherStateName(Watcher::State state) {
  switch (state) {
    case Watcher::State::kEmpty:
      return "Empty";
    case Watcher::State::kInitListing:
      return "InitListing";
    case Watcher::State::kInitListed:
      return "InitListed";
    case Watcher::State::kWatching:
      return "Watching";
  }
  return "Unknown";
}

Watcher::Watcher(KubeClient& client, WatcherConfig config, base::Clock& clock)
    : client_(client), config_(std::move(config)), clock_(clock) {}

std::string Watcher::What() const { return DescribeCall("watch", config_.resource, config_.ns); }

std::chrono::milliseconds Watcher::NextBackoff() const {
  std::chrono::milliseconds d = config_.initial_backoff;
  for (int i = 0; i < failures_ && d < config_.max_backoff; ++i) d *= 2;
  return std::min(d, config_.max_backoff);
}

void Watcher::Cancel() {
  std::shared_ptr<WatchStream> s;
  {
    std::lock_guard<std::mutex> lock(stream_mu_);
    cancelled_ = true;
    s = stream_;
  }
  cancel_cv_.notify_all();
  if (s) s->Cancel();
}

bool Watcher::cancelled() const {
  std::lock_guard<std::mutex> lock(stream_mu_);
  return cancelled_;
}

void Watcher::CloseStream() {
  std::shared_ptr<WatchStream> s;
  {
    std::lock_guard<std::mutex> lock(stream_mu_);
    s = std::move(stream_);
    stream_.reset();
  }
  if (s) s->Cancel();
}

void Watcher::Fail(WatcherStep& step, KubeError error, State retry_state) {
  // The one disposition table decides: a 410 relists; anything else (even a terminal
  // kind: a watcher has nobody to give up to) retries `retry_state` after a backoff, no
  // earlier than a 429/5xx's Retry-After.
  const State next = DispositionOf(error) == Disposition::kRelist ? State::kEmpty : retry_state;
  if (next == State::kEmpty || next == State::kInitListed) CloseStream();
  state_ = next;
  if (next == State::kEmpty) continue_token_.clear();
  backoff_pending_ = true;
  retry_after_ = error.retry_after();
  step.error = std::move(error);
}

WatcherStep Watcher::Step() {
  if (cancelled()) return {};
  if (backoff_pending_) {
    std::chrono::milliseconds delay = NextBackoff();
    if (retry_after_) {
      delay =
          std::max(delay, std::min<std::chrono::milliseconds>(*retry_after_, config_.max_backoff));
    }
    ++failures_;
    backoff_pending_ = false;
    retry_after_.reset();
    {
      std::unique_lock<std::mutex> lock(stream_mu_);
      if (clock_.WaitFor(delay, cancel_cv_, lock, [this] { return cancelled_; })) return {};
    }
  }
  switch (state_) {
    case State::kEmpty: {
      state_ = State::kInitListing;
      continue_token_.clear();
      WatcherStep step;
      step.events.push_back({WatcherEventType::kInit, nullptr});
      return step;
    }
    case State::kInitListing:
      return StepList();
    case State::kInitListed:
      return StepOpenWatch();
    case State::kWatching:
      return StepWatch();
  }
  return {};
}

WatcherStep Watcher::StepList() {
  WatcherStep step;
  ListOptions opts;
  opts.label_selector = config_.label_selector;
  opts.field_selector = config_.field_selector;
  opts.limit = config_.page_size;
  opts.continue_token = continue_token_;
  opts.omit_managed_fields = config_.omit_managed_fields;
  opts.max_label_bytes = config_.max_label_bytes;
  Json page;
  try {
    page = client_.List(config_.resource, config_.ns, opts);
  } catch (const KubeError& e) {
    // An expired continue token cannot be resumed: Fail starts the list over on a 410.
    Fail(step, e, State::kInitListing);
    return step;
  }
  // Move the items out of the page, and each item into its event: a page of 500 pods is
  // tens of MiB as a DOM, and a copy would double what the initial LIST holds at its peak.
  // metadata.continue and metadata.resourceVersion: strings, or absent/null (as Go's decoder
  // reads a null into a string). Anything else is a malformed answer, not a throw.
  std::string continue_token, resource_version;
  bool metadata_ok = true;
  if (page.is_object()) {
    for (auto [name, out] : {std::pair{"continue", &continue_token},
                             std::pair{"resourceVersion", &resource_version}}) {
      const auto v = base::String(page, {"metadata", name});
      if (v) *out = *v;
      if (v.status() == base::Lookup::kWrongType) metadata_ok = false;  // metadata or member
    }
  }
  if (!metadata_ok) {
    Fail(step,
         KubeError(ErrorKind::kInternal,
                   fmt::format("{}: list answer has a malformed metadata (continue and "
                               "resourceVersion must be strings)",
                               DescribeCall("list", config_.resource, config_.ns))),
         State::kEmpty);
    return step;
  }
  Json items = Json::array();
  if (page.is_object()) {
    auto it = page.find("items");
    if (it != page.end()) items = std::move(*it);
  }
  if (!page.is_object() || !items.is_array()) {
    Fail(step,
         KubeError(ErrorKind::kInternal,
                   fmt::format("{}: list answer has no items array",
                               DescribeCall("list", config_.resource, config_.ns))),
         State::kEmpty);
    return step;
  }
  step.events.reserve(items.size() + 1);
  for (Json& item : items) step.events.push_back({WatcherEventType::kInitApply, std::move(item)});
  items = Json();
  continue_token_ = std::move(continue_token);
  if (continue_token_.empty()) {
    resource_version_ = std::move(resource_version);
    state_ = State::kInitListed;
    step.events.push_back({WatcherEventType::kInitDone, nullptr});
  }
  failures_ = 0;
  return step;
}

WatcherStep Watcher::StepOpenWatch() {
  WatcherStep step;
  WatchOptions opts;
  opts.label_selector = config_.label_selector;
  opts.field_selector = config_.field_selector;
  opts.resource_version = resource_version_;
  opts.allow_bookmarks = true;
  opts.omit_managed_fields = config_.omit_managed_fields;
  opts.max_label_bytes = config_.max_label_bytes;
  opts.timeout = config_.watch_timeout;
  try {
    std::unique_ptr<WatchStream> s = client_.Watch(config_.resource, config_.ns, opts);
    std::lock_guard<std::mutex> lock(stream_mu_);
    stream_ = std::move(s);
    if (cancelled_) stream_->Cancel();
  } catch (const KubeError& e) {
    Fail(step, e, State::kInitListed);
    return step;
  }
  state_ = State::kWatching;
  events_on_stream_ = false;
  return step;
}

WatcherStep Watcher::StepWatch() {
  WatcherStep step;
  std::shared_ptr<WatchStream> s;
  {
    std::lock_guard<std::mutex> lock(stream_mu_);
    s = stream_;
  }
  std::optional<WatchEvent> ev;
  try {
    ev = s->Next();
  } catch (const KubeError& e) {
    Fail(step, e, State::kInitListed);
    return step;
  }
  if (!ev) {
    CloseStream();
    state_ = State::kInitListed;
    // A stream that ends before saying anything still costs a backoff, so a
    // server that closes every watch at once cannot make us spin.
    if (!events_on_stream_ && !cancelled()) backoff_pending_ = true;
    return step;
  }
  events_on_stream_ = true;
  const std::string& type = ev->type;
  if (type == "ERROR") {
    KubeError err = ErrorFromWatchEvent(ev->object, What());
    if (DispositionOf(err) == Disposition::kRelist) {
      // Our resourceVersion is older than the server's history: relist, now.
      CloseStream();
      state_ = State::kEmpty;
      continue_token_.clear();
      step.error = std::move(err);
      return step;
    }
    Fail(step, std::move(err), State::kInitListed);
    return step;
  }
  const bool known =
      type == "ADDED" || type == "MODIFIED" || type == "DELETED" || type == "BOOKMARK";
  if (!known) {
    Fail(step,
         KubeError(ErrorKind::kInternal,
                   fmt::format("{}: unknown watch event type \"{}\"", What(), type)),
         State::kInitListed);
    return step;
  }
  std::string rv = base::StringAt(ev->object, {"metadata", "resourceVersion"});
  if (rv.empty()) {
    Fail(step,
         KubeError(ErrorKind::kInternal,
                   fmt::format("{}: {} event without metadata.resourceVersion", What(), type)),
         State::kInitListed);
    return step;
  }
  resource_version_ = std::move(rv);
  failures_ = 0;
  if (type == "BOOKMARK") return step;
  step.events.push_back({type == "DELETED" ? WatcherEventType::kDelete : WatcherEventType::kApply,
                         std::move(ev->object)});
  return step;
}

}  // namespace kmt::kube
