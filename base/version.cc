#include "base/version.h"

#include <string>

namespace kmt::base {

std::string_view Commit() { return KMT_COMMIT; }

std::string VersionLine(std::string_view program) {
  return std::string(program) + " " + std::string(kRelease) + " (commit " + std::string(Commit()) +
         ")";
}

}  // namespace kmt::base
