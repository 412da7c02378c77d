// base/version.h — the release and the commit the binaries were built from (--version).
#pragma once

#include <string>
#include <string_view>

namespace kmt::base {

// The release: the image tag manifests/default deploys (hack/image_check.sh checks that the
// image's --version names it).
inline constexpr std::string_view kRelease = "v0.1.0";

// The commit the build was given (--define=KMT_COMMIT=...), "unknown" when none.
std::string_view Commit();

// "<program> <release> (commit <commit>)", the line --version prints.
std::string VersionLine(std::string_view program);

}  // namespace kmt::base
