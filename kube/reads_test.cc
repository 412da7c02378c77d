// kube/reads_test.cc
#include "kube/reads.h"

#include <catch2/catch.hpp>

#include "kube/error.h"
#include "kube/fake_client.h"
#include "kube/resources.h"

namespace kmt::kube {
namespace {

TEST_CASE("GetIfExists: the object, nothing for a 404, every other error thrown") {
  FakeClient client;
  client.Create(kPods, "ns", {{"metadata", {{"name", "a"}}}});
  auto got = GetIfExists(client, kPods, "ns", "a");
  REQUIRE(got.has_value());
  CHECK((*got)["metadata"]["name"] == "a");
  CHECK_FALSE(GetIfExists(client, kPods, "ns", "b").has_value());
  client.FailNext(Verb::kGet, 1, ErrorKind::kForbidden);
  try {
    GetIfExists(client, kPods, "ns", "a");
    FAIL("no error thrown");
  } catch (const KubeError& e) {
    CHECK(e.kind() == ErrorKind::kForbidden);
  }
}
}  // namespace
}  // namespace kmt::kube
