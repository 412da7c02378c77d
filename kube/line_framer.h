// kube/line_framer.h — framing of a watch response body.
//
// kube-apiserver streams a watch as newline-delimited JSON objects
// ({"type":"ADDED","object":{...}}), but TCP hands them over in arbitrary
// chunks: one read may end mid-object or carry several. LineFramer turns
// chunks back into whole lines; ParseWatchEvent decodes one line. Both are
// pure and total: bad input is a KubeError, never a crash.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "kube/client.h"
#include "kube/managed_fields.h"

namespace kmt::kube {

class LineFramer {
 public:
  // A line longer than max_line bytes is refused (KubeError kTooLarge) rather
  // than buffered without bound.
  explicit LineFramer(size_t max_line = size_t{64} << 20) : max_line_(max_line) {}

  // Appends a chunk and moves every completed, non-blank line (without its
  // "\n" or "\r\n") to out.
  void Feed(std::string_view chunk, std::vector<std::string>& out);

  // Bytes of an unfinished line (non-blank): at end of stream this means the
  // stream was cut mid-event.
  bool HasPartial() const;
  size_t PartialSize() const { return buffer_.size(); }

 private:
  size_t max_line_;
  std::string buffer_;
};

// Decodes one line of a watch stream. Throws KubeError kInternal naming `what`
// when the line is not JSON, has no string "type", or no object "object".
// The type is not checked here: the watcher decides what an unknown type means.
// The object is trimmed while parsing as `trim` says (kube/managed_fields.h).
WatchEvent ParseWatchEvent(std::string_view line, const std::string& what,
                           const ObjectTrim& trim = {});
inline WatchEvent ParseWatchEvent(std::string_view line, const std::string& what,
                                  bool omit_managed_fields) {
  return ParseWatchEvent(line, what, ObjectTrim{.managed_fields = omit_managed_fields});
}

}  // namespace kmt::kube
