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

// A server whose LIST answers `page`, whatever it is.
class OddLists : public FakeClient {
 public:
  explicit OddLists(Json page) : page_(std::move(page)) {}
  Json List(const Resource&, std::string_view, const ListOptions&) override { return page_; }

 private:
  Json page_;
};

TEST_CASE("ListAll: an odd answer is a KubeError or read leniently, never another exception") {
  struct Row {
    const char* page;
    int items;  // -1: KubeError kInternal
  };
  const Row row = GENERATE(values<Row>({
      {R"([])", -1},
      {R"([{"items": []}])", -1},
      {R"("PodList")", -1},
      {R"(null)", -1},
      {R"(42)", -1},
      {R"({"items": "x"})", -1},
      {R"({"items": {"a": 1}})", -1},
      {R"({})", 0},
      {R"({"items": null})", 0},
      {R"({"metadata": null, "items": [{}]})", 1},
      {R"({"metadata": "x", "items": [{}, {}]})", 2},
      {R"({"metadata": [], "items": [{}]})", 1},
      {R"({"metadata": {"continue": 5}, "items": [{}]})", 1},
      {R"({"metadata": {"continue": null, "remainingItemCount": 3}, "items": []})", 0},
  }));
  CAPTURE(row.page);
  OddLists c(Json::parse(row.page));
  if (row.items < 0) {
    try {
      ListAll(c, kPods, "ns");
      FAIL("no error");
    } catch (const KubeError& e) {
      CHECK(e.kind() == ErrorKind::kInternal);
      CHECK(std::string(e.what()) == "list pods -n ns: list answer has no items array");
    }
    return;
  }
  Json all;
  REQUIRE_NOTHROW(all = ListAll(c, kPods, "ns"));
  CHECK(all["items"].size() == static_cast<size_t>(row.items));
  if (all["metadata"].is_object()) {
    CHECK_FALSE(all["metadata"].contains("continue"));
    CHECK_FALSE(all["metadata"].contains("remainingItemCount"));
  }
}

}  // namespace
}  // namespace kmt::kube
