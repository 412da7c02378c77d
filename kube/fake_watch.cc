// kube/fake_watch.cc — FakeClient's watch side: streams, history replay,
// selector transitions, bookmarks, compaction and server-side closes.
#include <fmt/format.h>

#include <charconv>

#include "kube/fake_client.h"
#include "kube/internal/fake_support.h"
#include "kube/paths.h"

namespace kmt::kube {

using fake_internal::BadRequest;
using fake_internal::ExtraSelectableFields;
using fake_internal::StatusJson;

class FakeClient::FakeWatch : public WatchStream {
 public:
  explicit FakeWatch(std::shared_ptr<Stream> s) : s_(std::move(s)) {}
  ~FakeWatch() override { Cancel(); }

  std::optional<WatchEvent> Next() override {
    std::unique_lock<std::mutex> lock(s_->mu);
    s_->cv.wait(lock,
                [&] { return s_->cancelled || !s_->queue.empty() || s_->ended || s_->broken; });
    if (s_->cancelled) return std::nullopt;
    if (!s_->queue.empty()) {
      WatchEvent e = std::move(s_->queue.front());
      s_->queue.pop_front();
      return e;
    }
    if (s_->broken) {
      throw KubeError(ErrorKind::kTransport,
                      fmt::format("watch {}: connection broken", s_->resource));
    }
    return std::nullopt;
  }

  void Cancel() override {
    std::scoped_lock lock(s_->mu);
    s_->cancelled = true;
    s_->cv.notify_all();
  }

 private:
  std::shared_ptr<Stream> s_;
};

void FakeClient::Publish(const HistoryEntry& e) {
  auto it = streams_.begin();
  while (it != streams_.end()) {
    std::shared_ptr<Stream> s = it->lock();
    if (!s) {
      it = streams_.erase(it);
      continue;
    }
    ++it;
    if (s->resource != e.resource) continue;
    std::scoped_lock lock(s->mu);
    const bool now_matches = s->Matches(e.object);
    if (e.type == "ADDED") {
      if (now_matches) s->PushLocked("ADDED", e.object);
    } else if (e.type == "DELETED") {
      if (now_matches) s->PushLocked("DELETED", e.object);
    } else {
      const bool was_matching = s->Matches(e.old_object);
      if (was_matching && now_matches) {
        s->PushLocked("MODIFIED", e.object);
      } else if (now_matches) {
        s->PushLocked("ADDED", e.object);
      } else if (was_matching) {
        // Leaving the selector reads as a deletion, at the new resourceVersion.
        Json gone = e.old_object;
        gone["metadata"]["resourceVersion"] = e.object["metadata"]["resourceVersion"];
        s->PushLocked("DELETED", std::move(gone));
      }
    }
  }
}

std::unique_ptr<WatchStream> FakeClient::Watch(const Resource& r, std::string_view ns,
                                               const WatchOptions& opts) {
  Before({Verb::kWatch, GroupResourceName(r), std::string(ns), "", "", false, nullptr,
          opts.label_selector, opts.field_selector});
  const std::string what = DescribeCall("watch", r, ns);
  auto s = std::make_shared<Stream>();
  s->resource = GroupResourceName(r);
  s->ns = r.namespaced ? std::string(ns) : "";
  s->bookmarks = opts.allow_bookmarks;
  s->trim = TrimOf(opts);
  s->kind = r.kind;
  s->api_version = ApiVersion(r);
  try {
    s->labels = LabelSelector::Parse(opts.label_selector);
    s->fields = FieldSelector::Parse(opts.field_selector);
  } catch (const std::invalid_argument& e) {
    throw BadRequest(e.what(), what);
  }
  for (const FieldRequirement& f : s->fields.requirements()) {
    if (f.field != "metadata.name" && f.field != "metadata.namespace" &&
        !ExtraSelectableFields(s->resource).count(f.field)) {
      throw BadRequest(fmt::format("field label not supported: {}", f.field), what);
    }
  }

  std::scoped_lock lock(mu_, s->mu);
  const std::string& rv_text = opts.resource_version;
  if (rv_text.empty() || rv_text == "0") {
    // "Get state and start at most recent": synthetic ADDED for what exists.
    for (const auto& [key, obj] : stores_[s->resource]) {
      if (s->Matches(obj)) s->PushLocked("ADDED", obj);
    }
  } else {
    int64_t from = 0;
    if (std::from_chars(rv_text.data(), rv_text.data() + rv_text.size(), from).ptr !=
        rv_text.data() + rv_text.size()) {
      throw BadRequest(fmt::format("invalid resource version \"{}\"", rv_text), what);
    }
    if (from < compacted_rv_) {
      s->PushLocked("ERROR", StatusJson(410, "Expired",
                                        fmt::format("too old resource version: {} ({})", from,
                                                    compacted_rv_ + 1)));
      s->ended = true;
      return std::make_unique<FakeWatch>(std::move(s));
    }
    for (const HistoryEntry& e : history_) {
      if (e.rv <= from || e.resource != s->resource) continue;
      const bool now_matches = s->Matches(e.object);
      const bool was_matching = e.type == "MODIFIED" && s->Matches(e.old_object);
      if (e.type == "ADDED" || e.type == "DELETED") {
        if (now_matches) s->PushLocked(e.type, e.object);
      } else if (was_matching && now_matches) {
        s->PushLocked("MODIFIED", e.object);
      } else if (now_matches) {
        s->PushLocked("ADDED", e.object);
      } else if (was_matching) {
        Json gone = e.old_object;
        gone["metadata"]["resourceVersion"] = e.object["metadata"]["resourceVersion"];
        s->PushLocked("DELETED", std::move(gone));
      }
    }
  }
  streams_.push_back(s);
  return std::make_unique<FakeWatch>(std::move(s));
}

void FakeClient::SendBookmarks() {
  std::scoped_lock lock(mu_);
  for (const auto& w : streams_) {
    std::shared_ptr<Stream> s = w.lock();
    if (!s || !s->bookmarks) continue;
    std::scoped_lock slock(s->mu);
    s->PushLocked("BOOKMARK", Json{{"kind", s->kind},
                                   {"apiVersion", s->api_version},
                                   {"metadata", {{"resourceVersion", std::to_string(rv_)}}}});
  }
}

void FakeClient::Compact() {
  std::scoped_lock lock(mu_);
  history_.clear();
  compacted_rv_ = rv_;
}

void FakeClient::CloseWatches() {
  std::scoped_lock lock(mu_);
  for (const auto& w : streams_) {
    if (std::shared_ptr<Stream> s = w.lock()) {
      std::scoped_lock slock(s->mu);
      s->ended = true;
      s->cv.notify_all();
    }
  }
  streams_.clear();
}

void FakeClient::BreakWatches() {
  std::scoped_lock lock(mu_);
  for (const auto& w : streams_) {
    if (std::shared_ptr<Stream> s = w.lock()) {
      std::scoped_lock slock(s->mu);
      s->broken = true;
      s->cv.notify_all();
    }
  }
  streams_.clear();
}

size_t FakeClient::OpenWatchCount() const {
  std::scoped_lock lock(mu_);
  size_t n = 0;
  for (const auto& w : streams_) {
    if (std::shared_ptr<Stream> s = w.lock()) {
      std::scoped_lock slock(s->mu);
      if (!s->cancelled && !s->ended && !s->broken) ++n;
    }
  }
  return n;
}

}  // namespace kmt::kube
