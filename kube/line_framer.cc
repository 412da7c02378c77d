// kube/line_framer.cc
#include "kube/line_framer.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>

#include "kube/error.h"

namespace kmt::kube {
namespace {

bool Blank(std::string_view s) {
  return std::ranges::all_of(
      s, [](char c) { return std::isspace(static_cast<unsigned char>(c)) != 0; });
}

std::string Excerpt(std::string_view s) {
  constexpr size_t kMax = 80;
  std::string out(s.substr(0, kMax));
  if (s.size() > kMax) out += "...";
  return out;
}

}  // namespace

void LineFramer::Feed(std::string_view chunk, std::vector<std::string>& out) {
  while (!chunk.empty()) {
    const size_t nl = chunk.find('\n');
    const std::string_view part = chunk.substr(0, nl);
    if (buffer_.size() + part.size() > max_line_) {
      buffer_.clear();
      throw KubeError(ErrorKind::kTooLarge,
                      fmt::format("watch event larger than {} bytes", max_line_));
    }
    buffer_.append(part);
    if (nl == std::string_view::npos) return;
    chunk.remove_prefix(nl + 1);
    if (!buffer_.empty() && buffer_.back() == '\r') buffer_.pop_back();
    if (!Blank(buffer_)) out.push_back(std::move(buffer_));
    buffer_.clear();
  }
}

bool LineFramer::HasPartial() const { return !Blank(buffer_); }

WatchEvent ParseWatchEvent(std::string_view line, const std::string& what, const ObjectTrim& trim) {
  Json j = ParseTrimmed(line, ObjectsAt::kWatchEvent, trim);
  if (j.is_discarded()) {
    throw KubeError(ErrorKind::kInternal,
                    fmt::format("{}: malformed watch event (not JSON): {}", what, Excerpt(line)));
  }
  if (!j.is_object() || !j.contains("type") || !j["type"].is_string()) {
    throw KubeError(ErrorKind::kInternal, fmt::format("{}: malformed watch event (no \"type\"): {}",
                                                      what, Excerpt(line)));
  }
  if (!j.contains("object") || !j["object"].is_object()) {
    throw KubeError(
        ErrorKind::kInternal,
        fmt::format("{}: malformed watch event (no \"object\"): {}", what, Excerpt(line)));
  }
  return WatchEvent{j["type"].get<std::string>(), std::move(j["object"])};
}

}  // namespace kmt::kube
