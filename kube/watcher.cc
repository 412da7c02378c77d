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
    : client_(client),
      config_(std::move(config)),
      clock_(clock),
      backoff_(config_.initial_backoff, config_.max_backoff) {}

std::string Watcher::What() const { return DescribeCall("watch", config_.resource, config_.ns); }

const std::string& Watcher::resource_version() const {
  static const std::string kNone;
  if (const auto* listed = std::get_if<InitListed>(&state_)) return listed->resource_version;
  if (const auto* watching = std::get_if<Watching>(&state_)) return watching->resource_version;
  return kNone;
}

void Watcher::Cancel() {
  std::shared_ptr<WatchStream> s;
  {
    std::scoped_lock lock(stream_mu_);
    cancelled_ = true;
    if (const auto* watching = std::get_if<Watching>(&state_)) s = watching->stream;
  }
  cancel_cv_.notify_all();
  if (s) s->Cancel();
}

bool Watcher::cancelled() const {
  std::scoped_lock lock(stream_mu_);
  return cancelled_;
}

void Watcher::Become(States next) {
  std::shared_ptr<WatchStream> left;
  {
    std::scoped_lock lock(stream_mu_);
    if (auto* watching = std::get_if<Watching>(&state_)) left = std::move(watching->stream);
    state_ = std::move(next);
  }
  if (left) left->Cancel();
}

void Watcher::Fail(WatcherStep& step, KubeError error, States retry) {
  // The one disposition table decides: a 410 relists; anything else (even a terminal
  // kind: a watcher has nobody to give up to) retries after a backoff, no earlier than a
  // 429/5xx's Retry-After.
  const bool relist = DispositionOf(error) == Disposition::kRelist;
  Become(relist ? States(Empty{}) : std::move(retry));
  backoff_.Owe(error.retry_after());
  step.error = std::move(error);
}

WatcherStep Watcher::Step() {
  if (cancelled()) return {};
  if (std::optional<std::chrono::milliseconds> delay = backoff_.Take()) {
    std::unique_lock<std::mutex> lock(stream_mu_);
    if (clock_.WaitFor(*delay, cancel_cv_, lock, [this] { return cancelled_; })) return {};
  }
  if (std::holds_alternative<Empty>(state_)) {
    Become(InitListing{});
    WatcherStep step;
    step.events.push_back({WatcherEventType::kInit, nullptr});
    return step;
  }
  if (auto* listing = std::get_if<InitListing>(&state_)) return StepList(*listing);
  if (auto* listed = std::get_if<InitListed>(&state_)) return StepOpenWatch(*listed);
  return StepWatch(std::get<Watching>(state_));
}

WatcherStep Watcher::StepList(InitListing& listing) {
  WatcherStep step;
  ListOptions opts;
  opts.label_selector = config_.label_selector;
  opts.field_selector = config_.field_selector;
  opts.limit = config_.page_size;
  opts.continue_token = listing.continue_token;
  opts.omit_managed_fields = config_.omit_managed_fields;
  opts.max_label_bytes = config_.max_label_bytes;
  opts.reads = config_.reads;
  Json page;
  try {
    page = client_.List(config_.resource, config_.ns, opts);
  } catch (const KubeError& e) {
    // An expired continue token cannot be resumed: Fail starts the list over on a 410.
    Fail(step, e, InitListing{listing.continue_token});
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
         Empty{});
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
         Empty{});
    return step;
  }
  step.events.reserve(items.size() + 1);
  for (Json& item : items) step.events.push_back({WatcherEventType::kInitApply, std::move(item)});
  items = Json();
  if (continue_token.empty()) {
    Become(InitListed{std::move(resource_version)});
    step.events.push_back({WatcherEventType::kInitDone, nullptr});
  } else {
    listing.continue_token = std::move(continue_token);
  }
  backoff_.Reset();
  return step;
}

WatcherStep Watcher::StepOpenWatch(InitListed& listed) {
  WatcherStep step;
  WatchOptions opts;
  opts.label_selector = config_.label_selector;
  opts.field_selector = config_.field_selector;
  opts.resource_version = listed.resource_version;
  opts.allow_bookmarks = true;
  opts.omit_managed_fields = config_.omit_managed_fields;
  opts.max_label_bytes = config_.max_label_bytes;
  opts.reads = config_.reads;
  opts.timeout = config_.watch_timeout;
  std::shared_ptr<WatchStream> stream;
  try {
    stream = client_.Watch(config_.resource, config_.ns, opts);
  } catch (const KubeError& e) {
    Fail(step, e, InitListed{listed.resource_version});
    return step;
  }
  Become(Watching{std::move(listed.resource_version), stream, false});
  if (cancelled()) stream->Cancel();  // Cancel() ran before the stream was in the state
  return step;
}

WatcherStep Watcher::StepWatch(Watching& watching) {
  WatcherStep step;
  std::optional<WatchEvent> ev;
  try {
    ev = watching.stream->Next();
  } catch (const KubeError& e) {
    Fail(step, e, InitListed{watching.resource_version});
    return step;
  }
  if (!ev) {
    const bool said_something = watching.events_seen;
    Become(InitListed{std::move(watching.resource_version)});
    // A stream that ends before saying anything still costs a backoff, so a
    // server that closes every watch at once cannot make us spin.
    if (!said_something && !cancelled()) backoff_.Owe();
    return step;
  }
  watching.events_seen = true;
  const std::string& type = ev->type;
  if (type == "ERROR") {
    KubeError err = ErrorFromWatchEvent(ev->object, What());
    if (DispositionOf(err) == Disposition::kRelist) {
      // Our resourceVersion is older than the server's history: relist, now.
      Become(Empty{});
      step.error = std::move(err);
      return step;
    }
    Fail(step, std::move(err), InitListed{watching.resource_version});
    return step;
  }
  const bool known =
      type == "ADDED" || type == "MODIFIED" || type == "DELETED" || type == "BOOKMARK";
  if (!known) {
    Fail(step,
         KubeError(ErrorKind::kInternal,
                   fmt::format("{}: unknown watch event type \"{}\"", What(), type)),
         InitListed{watching.resource_version});
    return step;
  }
  std::string rv = base::StringAt(ev->object, {"metadata", "resourceVersion"});
  if (rv.empty()) {
    Fail(step,
         KubeError(ErrorKind::kInternal,
                   fmt::format("{}: {} event without metadata.resourceVersion", What(), type)),
         InitListed{watching.resource_version});
    return step;
  }
  watching.resource_version = std::move(rv);
  backoff_.Reset();
  if (type == "BOOKMARK") return step;
  step.events.push_back({type == "DELETED" ? WatcherEventType::kDelete : WatcherEventType::kApply,
                         std::move(ev->object)});
  return step;
}

}  // namespace kmt::kube
