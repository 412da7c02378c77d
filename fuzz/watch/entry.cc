// fuzz/watch/entry.cc — arbitrary bytes as a watch response, split into chunks where the
// fuzzer says, through the real LineFramer and ParseWatchEvent (kube/line_framer.h) and the
// real Watcher state machine (kube/watcher.h).
//
// Input: byte 0 = k (bits 0-2, the number of split points), omit_managed_fields (bit 3) and
// the framer's max_line (bits 4-5: 64 MiB, 64, 1024, 1 bytes); then k chunk lengths, one
// byte each; then the stream. The stream's first line is the LIST answer the watcher gets,
// the rest is the body of its watch.
// Checks:
//   - LineFramer: the lines equal a reference split (on "\n", one trailing "\r" dropped,
//     blank lines skipped) however the stream is chunked; a line longer than max_line is a
//     KubeError kTooLarge and nothing else; HasPartial() says whether a non-blank tail is left;
//   - ParseWatchEvent: returns an event with an object or throws KubeError kInternal; with
//     omit_managed_fields it equals a full parse with object.metadata.managedFields erased;
//   - Watcher: Step() never throws and makes at most one API call; kInitApply only between
//     kInit and kInitDone; a kApply/kDelete comes only from a watch event and advances
//     resource_version() to the object's metadata.resourceVersion; the backoff never exceeds
//     max_backoff.
#include "fuzz/entry.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <exception>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "base/fake_clock.h"
#include "kube/client.h"
#include "kube/error.h"
#include "kube/line_framer.h"
#include "kube/watcher.h"

namespace kmt::fuzz {
namespace {

using Json = nlohmann::json;
using kube::ErrorKind;
using kube::KubeError;

struct Input {
  std::vector<size_t> cuts;  // chunk lengths
  bool omit_managed_fields = false;
  size_t max_line = size_t{64} << 20;
  std::string_view list;    // first line
  std::string_view stream;  // the rest
};

Input Decode(std::string_view in) {
  Input out;
  if (in.empty()) return out;
  const unsigned control = static_cast<unsigned char>(in[0]);
  in.remove_prefix(1);
  out.omit_managed_fields = (control & 8) != 0;
  static constexpr size_t kMaxLine[] = {size_t{64} << 20, 64, 1024, 1};
  out.max_line = kMaxLine[(control >> 4) & 3];
  for (unsigned k = control & 7; k > 0 && !in.empty(); --k) {
    out.cuts.push_back(static_cast<unsigned char>(in[0]));
    in.remove_prefix(1);
  }
  const size_t nl = in.find('\n');
  out.list = in.substr(0, nl);
  out.stream = nl == std::string_view::npos ? std::string_view() : in.substr(nl + 1);
  return out;
}

std::vector<std::string_view> Chunks(std::string_view s, const std::vector<size_t>& cuts) {
  std::vector<std::string_view> out;
  for (size_t c : cuts) {
    c = std::min(c, s.size());
    out.push_back(s.substr(0, c));
    s.remove_prefix(c);
  }
  out.push_back(s);
  return out;
}

bool Blank(std::string_view s) {
  return std::ranges::all_of(
      s, [](char c) { return std::isspace(static_cast<unsigned char>(c)) != 0; });
}

// The framer's specification, written the slow way.
struct Reference {
  std::vector<std::string> lines;
  bool too_large = false;  // lines holds those before the first oversized one
  bool partial = false;
};

Reference Frame(std::string_view s, size_t max_line) {
  Reference r;
  while (true) {
    const size_t nl = s.find('\n');
    std::string_view line = s.substr(0, nl);
    if (line.size() > max_line) {
      r.too_large = true;
      return r;
    }
    if (nl == std::string_view::npos) {
      r.partial = !Blank(line);
      return r;
    }
    s.remove_prefix(nl + 1);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (!Blank(line)) r.lines.emplace_back(line);
  }
}

std::string CheckFramer(const Input& in) {
  const Reference want = Frame(in.stream, in.max_line);
  kube::LineFramer framer(in.max_line);
  std::vector<std::string> got;
  bool too_large = false;
  try {
    for (std::string_view chunk : Chunks(in.stream, in.cuts)) framer.Feed(chunk, got);
  } catch (const KubeError& e) {
    if (e.kind() != ErrorKind::kTooLarge) return std::string("framer threw ") + e.what();
    too_large = true;
  }
  if (got != want.lines || too_large != want.too_large) {
    return fmt::format("framer gave {} lines (too large: {}), the reference {} (too large: {})",
                       got.size(), too_large, want.lines.size(), want.too_large);
  }
  if (!too_large && framer.HasPartial() != want.partial) return "HasPartial() is wrong";
  return {};
}

std::string CheckParse(const std::string& line) {
  std::optional<kube::WatchEvent> full, omitted;
  for (bool omit : {false, true}) {
    try {
      (omit ? omitted : full) = kube::ParseWatchEvent(line, "watch pods", omit);
    } catch (const KubeError& e) {
      if (e.kind() != ErrorKind::kInternal) return std::string("ParseWatchEvent threw ") + e.what();
    }
  }
  if (full.has_value() != omitted.has_value()) {
    return "ParseWatchEvent accepts a line with managedFields omitted iff not: " + line;
  }
  if (!full) return {};
  if (!full->object.is_object()) return "ParseWatchEvent returned a non-object: " + line;
  if (auto m = full->object.find("metadata"); m != full->object.end() && m->is_object()) {
    m->erase("managedFields");
  }
  if (full->type != omitted->type || full->object != omitted->object) {
    return "omitting managedFields changed more than managedFields: " + line;
  }
  return {};
}

// A KubeClient that answers one LIST with the input's first line and one WATCH with the
// rest, framed as the REST client frames it; later calls get an empty list and an empty
// stream. Counts the API calls (Next() included).
class StreamClient : public kube::KubeClient {
 public:
  StreamClient(const Input& in) : in_(in) {}
  int calls = 0;
  bool stream_done = false;

  Json Get(const kube::Resource&, std::string_view, std::string_view, std::string_view) override {
    throw KubeError(ErrorKind::kInternal, "unused");
  }
  Json List(const kube::Resource&, std::string_view, const kube::ListOptions&) override {
    ++calls;
    if (lists_++ > 0) return {{"items", Json::array()}, {"metadata", {{"resourceVersion", "1"}}}};
    Json page = Json::parse(in_.list, nullptr, /*allow_exceptions=*/false);
    if (page.is_discarded()) throw KubeError(ErrorKind::kInternal, "list: not JSON");
    return page;
  }
  Json Create(const kube::Resource&, std::string_view, const Json&,
              const kube::WriteOptions&) override {
    throw KubeError(ErrorKind::kInternal, "unused");
  }
  Json Update(const kube::Resource&, std::string_view, const Json&, std::string_view,
              const kube::WriteOptions&) override {
    throw KubeError(ErrorKind::kInternal, "unused");
  }
  Json Patch(const kube::Resource&, std::string_view, std::string_view, kube::PatchType,
             const Json&, std::string_view, const kube::WriteOptions&) override {
    throw KubeError(ErrorKind::kInternal, "unused");
  }
  Json Delete(const kube::Resource&, std::string_view, std::string_view,
              const kube::DeleteOptions&) override {
    throw KubeError(ErrorKind::kInternal, "unused");
  }
  std::unique_ptr<kube::WatchStream> Watch(const kube::Resource&, std::string_view,
                                           const kube::WatchOptions& opts) override;

 private:
  const Input& in_;
  int lists_ = 0;
  int watches_ = 0;
  friend class Stream;
};

class Stream : public kube::WatchStream {
 public:
  Stream(StreamClient& c, std::vector<std::string_view> chunks, bool omit, size_t max_line)
      : c_(c), chunks_(std::move(chunks)), omit_(omit), framer_(max_line) {}
  std::optional<kube::WatchEvent> Next() override {
    ++c_.calls;
    while (lines_.empty() && next_ < chunks_.size()) framer_.Feed(chunks_[next_++], lines_);
    if (!lines_.empty()) {
      std::string line = std::move(lines_.front());
      lines_.erase(lines_.begin());
      return kube::ParseWatchEvent(line, "watch pods", omit_);
    }
    c_.stream_done = true;
    if (framer_.HasPartial()) throw KubeError(ErrorKind::kTransport, "cut mid-event");
    return std::nullopt;
  }
  void Cancel() override {}

 private:
  StreamClient& c_;
  std::vector<std::string_view> chunks_;
  bool omit_;
  kube::LineFramer framer_;
  std::vector<std::string> lines_;
  size_t next_ = 0;
};

std::unique_ptr<kube::WatchStream> StreamClient::Watch(const kube::Resource&, std::string_view,
                                                       const kube::WatchOptions& opts) {
  ++calls;
  if (watches_++ > 0)
    return std::make_unique<Stream>(*this, std::vector<std::string_view>{},
                                    opts.omit_managed_fields, in_.max_line);
  return std::make_unique<Stream>(*this, Chunks(in_.stream, in_.cuts), opts.omit_managed_fields,
                                  in_.max_line);
}

std::string ResourceVersionOf(const Json& obj) {
  auto m = obj.find("metadata");
  if (m == obj.end() || !m->is_object()) return "";
  auto rv = m->find("resourceVersion");
  return rv != m->end() && rv->is_string() ? rv->get<std::string>() : "";
}

std::string CheckWatcher(const Input& in) {
  StreamClient client(in);
  kube::WatcherConfig config;
  config.resource = {"", "v1", "pods", true, "Pod"};
  config.omit_managed_fields = in.omit_managed_fields;
  base::FakeClock clock;  // backoffs are recorded, not waited
  kube::Watcher watcher(client, config, clock);
  const size_t max_steps = 16 + std::count(in.stream.begin(), in.stream.end(), '\n') * 2;
  bool listing = false;
  for (size_t i = 0; i < max_steps; ++i) {
    const kube::Watcher::State before = watcher.state();
    const int calls_before = client.calls;
    kube::WatcherStep step = watcher.Step();
    if (client.calls - calls_before > 1) return "one Step() made more than one API call";
    int watch_events = 0;
    for (const kube::WatcherEvent& e : step.events) {
      switch (e.type) {
        case kube::WatcherEventType::kInit:
          listing = true;
          break;
        case kube::WatcherEventType::kInitApply:
          if (!listing) return "kInitApply outside a list";
          break;
        case kube::WatcherEventType::kInitDone:
          if (!listing) return "kInitDone without kInit";
          listing = false;
          break;
        case kube::WatcherEventType::kApply:
        case kube::WatcherEventType::kDelete:
          ++watch_events;
          if (before != kube::Watcher::State::kWatching) return "an event while not watching";
          if (!e.object.is_object() || ResourceVersionOf(e.object) != watcher.resource_version()) {
            return "a watch event that did not advance resource_version() to its own";
          }
          break;
      }
    }
    if (watch_events > 1) return "one Step() delivered more than one watch event";
    for (base::Duration slept : clock.Sleeps()) {
      if (slept > config.max_backoff) return "a backoff beyond max_backoff";
    }
    if (client.stream_done && watcher.state() != kube::Watcher::State::kWatching) break;
  }
  return {};
}

std::string Check(std::string_view raw) {
  const Input in = Decode(raw);
  if (std::string broken = CheckFramer(in); !broken.empty()) return broken;
  for (const std::string& line : Frame(in.stream, in.max_line).lines) {
    if (std::string broken = CheckParse(line); !broken.empty()) return broken;
  }
  return CheckWatcher(in);
}

}  // namespace

std::string CheckTarget(std::string_view input) { return Check(input); }

}  // namespace kmt::fuzz
