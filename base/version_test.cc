#include "base/version.h"

#include <catch2/catch.hpp>
#include <string>

namespace kmt::base {
namespace {

TEST_CASE("--version names the release the manifests deploy and the commit") {
  CHECK(VersionLine("kubectl-migrate") ==
        "kubectl-migrate " + std::string(kRelease) + " (commit " + std::string(Commit()) + ")");
  CHECK_FALSE(Commit().empty());
}

}  // namespace
}  // namespace kmt::base
