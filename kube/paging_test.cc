// kube/paging_test.cc
#include "kube/paging.h"

#include <catch2/catch.hpp>

#include "kube/error.h"
#include "kube/fake_client.h"
#include "kube/resources.h"

namespace kmt::kube {
namespace {

TEST_CASE("ListAll follows continue tokens") {
  FakeClient c;
  for (int i = 0; i < 7; ++i) {
    c.Create(kPods, "ns", {{"metadata", {{"name", "p" + std::to_string(i)}}}});
  }
  ListOptions o;
  o.limit = 3;
  Json all = ListAll(c, kPods, "ns", o);
  CHECK(all["items"].size() == 7);
  CHECK(all["items"][6]["metadata"]["name"] == "p6");
  CHECK(all["metadata"] == Json{{"resourceVersion", "7"}});
  int lists = 0;
  for (const FakeCall& call : c.Calls()) lists += call.verb == Verb::kList;
  CHECK(lists == 3);
}

TEST_CASE("ListAll restarts once when the snapshot expires mid-way") {
  FakeClient c;
  for (int i = 0; i < 4; ++i) {
    c.Create(kPods, "ns", {{"metadata", {{"name", "p" + std::to_string(i)}}}});
  }
  int lists = 0;
  c.SetCallHook([&](const FakeCall& call) {
    if (call.verb == Verb::kList && ++lists == 2) {
      c.Create(kPods, "other", {{"metadata", {{"name", "x" + std::to_string(lists)}}}});
      c.Compact();  // the snapshot of page 1 is gone
    }
  });
  ListOptions o;
  o.limit = 2;
  CHECK(ListAll(c, kPods, "ns", o)["items"].size() == 4);
  CHECK(lists == 4);  // page 1, expired page 2, then pages 1 and 2 again

  lists = 0;
  c.SetCallHook([&](const FakeCall& call) {
    if (call.verb == Verb::kList && ++lists % 2 == 0) {
      c.Create(kPods, "other", {{"metadata", {{"name", "y" + std::to_string(lists)}}}});
      c.Compact();
    }
  });
  try {
    ListAll(c, kPods, "ns", o);
    FAIL("no error");
  } catch (const KubeError& e) {
    CHECK(e.kind() == ErrorKind::kGone);
  }
}

}  // namespace
}  // namespace kmt::kube
