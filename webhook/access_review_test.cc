#include "webhook/access_review.h"

#include <catch2/catch.hpp>
#include <chrono>
#include <optional>
#include <stdexcept>
#include <vector>

#include "base/fake_clock.h"
#include "kube/error.h"
#include "kube/fake_client.h"
#include "kube/resources.h"

namespace kmt::webhook {
namespace {

AccessQuery Query(UserInfo user) {
  return {std::move(user),          "ns1", "use", "migration-target.kubevirt.io",
          "addednodeselectorterms", ""};
}

// The API server's side of a SubjectAccessReview: keeps what was asked, answers `status`.
struct Authorizer {
  kube::FakeClient client;
  std::optional<Json> asked;
  Json status = {{"allowed", true}};

  Authorizer() {
    client.SetCreateHandler(kube::kSubjectAccessReviews, [this](const Json& review) {
      asked = review;
      Json answer = review;
      if (!status.is_null()) answer["status"] = status;
      return answer;
    });
  }
};

TEST_CASE("SubjectAccessReviewer asks about the requester exactly as the review carried them") {
  Authorizer api;
  SubjectAccessReviewer reviewer(api.client);
  AccessDecision d = reviewer.Review(
      Query({"vm-owner", "o-1", {"system:authenticated", "team-a"}, {{"scopes", {"a", "b"}}}}));
  CHECK(d.allowed);
  REQUIRE(api.asked.has_value());
  CHECK(*api.asked == Json::parse(R"({
    "apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
    "spec": {"user": "vm-owner", "uid": "o-1", "groups": ["system:authenticated", "team-a"],
             "extra": {"scopes": ["a", "b"]},
             "resourceAttributes": {"namespace": "ns1", "verb": "use",
                                    "group": "migration-target.kubevirt.io",
                                    "resource": "addednodeselectorterms"}}})"));
}

TEST_CASE("SubjectAccessReviewer leaves out what the requester did not have") {
  Authorizer api;
  SubjectAccessReviewer(api.client).Review(Query({"system:anonymous", "", {}, {}}));
  REQUIRE(api.asked.has_value());
  CHECK((*api.asked)["spec"] == Json::parse(R"({"user": "system:anonymous",
      "resourceAttributes": {"namespace": "ns1", "verb": "use",
                             "group": "migration-target.kubevirt.io",
                             "resource": "addednodeselectorterms"}})"));
}

TEST_CASE("SubjectAccessReviewer asks a non-resource question about a path") {
  Authorizer api;
  AccessQuery q;
  q.user = {"system:serviceaccount:monitoring:prometheus", "sa-1", {"system:authenticated"}, {}};
  q.verb = "get";
  q.path = "/metrics";
  CHECK(SubjectAccessReviewer(api.client).Review(q).allowed);
  REQUIRE(api.asked.has_value());
  CHECK((*api.asked)["spec"] == Json::parse(R"({
      "user": "system:serviceaccount:monitoring:prometheus", "uid": "sa-1",
      "groups": ["system:authenticated"],
      "nonResourceAttributes": {"path": "/metrics", "verb": "get"}})"));
}

TEST_CASE("SubjectAccessReviewer reads the decision") {
  struct Row {
    const char* name;
    Json status;
    bool allowed;
    std::string reason;
    std::string evaluation_error;
  };
  auto row = GENERATE(values<Row>({
      {"allowed", Json::parse(R"({"allowed": true, "reason": "RBAC: allowed by RoleBinding"})"),
       true, "RBAC: allowed by RoleBinding", ""},
      {"not allowed", Json::parse(R"({"allowed": false})"), false, "", ""},
      {"denied", Json::parse(R"({"allowed": false, "denied": true, "reason": "policy"})"), false,
       "policy", ""},
      {"allowed and denied", Json::parse(R"({"allowed": true, "denied": true})"), false, "", ""},
      {"evaluation error",
       Json::parse(R"({"allowed": false, "evaluationError": "webhook authorizer timed out"})"),
       false, "", "webhook authorizer timed out"},
      {"allowed not a bool", Json::parse(R"({"allowed": "true"})"), false, "", ""},
      {"empty status", Json::object(), false, "", ""},
  }));
  CAPTURE(row.name);
  Authorizer api;
  api.status = row.status;
  AccessDecision d = SubjectAccessReviewer(api.client).Review(Query({"u", "", {}, {}}));
  CHECK(d.allowed == row.allowed);
  CHECK(d.reason == row.reason);
  CHECK(d.evaluation_error == row.evaluation_error);
}

TEST_CASE("SubjectAccessReviewer throws when there is no decision") {
  Authorizer api;
  api.status = nullptr;
  SubjectAccessReviewer reviewer(api.client);
  CHECK_THROWS_WITH(reviewer.Review(Query({"u", "", {}, {}})),
                    "the SubjectAccessReview answer has no status");

  api.client.FailNext(kube::Verb::kCreate, 1, kube::ErrorKind::kUnavailable);
  CHECK_THROWS_AS(reviewer.Review(Query({"u", "", {}, {}})), kube::KubeError);
}

// An inner reviewer that counts the questions and answers from a script.
struct CountingReviewer : AccessReviewer {
  int asked = 0;
  AccessDecision answer{true, "", ""};
  bool fail = false;
  AccessDecision Review(const AccessQuery&) override {
    ++asked;
    if (fail) throw std::runtime_error("the API server is down");
    return answer;
  }
};

TEST_CASE("CachingAccessReviewer remembers allowed 10 s and denied 2 s by default") {
  CountingReviewer inner;
  base::FakeClock clock;
  CachingAccessReviewer cache(inner, {}, clock);
  const AccessQuery admin = Query({"admin", "a-1", {"system:masters"}, {}});
  CHECK(cache.Review(admin).allowed);
  CHECK(cache.Review(admin).allowed);
  CHECK(inner.asked == 1);
  clock.Advance(std::chrono::milliseconds(9'999));
  CHECK(cache.Review(admin).allowed);
  CHECK(inner.asked == 1);
  clock.Advance(std::chrono::milliseconds(1));  // 10 s: expired, asked again
  inner.answer = {false, "revoked", ""};
  CHECK_FALSE(cache.Review(admin).allowed);
  CHECK(inner.asked == 2);
  clock.Advance(std::chrono::milliseconds(1'999));
  CHECK(cache.Review(admin).reason == "revoked");
  CHECK(inner.asked == 2);
  clock.Advance(std::chrono::milliseconds(1));
  inner.answer = {true, "", ""};
  CHECK(cache.Review(admin).allowed);
  CHECK(inner.asked == 3);
}

TEST_CASE("CachingAccessReviewer keys on every member of the question") {
  CountingReviewer inner;
  base::FakeClock clock;
  CachingAccessReviewer cache(inner, {}, clock);
  const AccessQuery base = Query({"u", "uid-1", {"g1", "g2"}, {{"scopes", {"a"}}}});
  cache.Review(base);
  std::vector<AccessQuery> others(9, base);
  others[0].user.username = "v";
  others[1].user.uid = "uid-2";
  others[2].user.groups = {"g1"};
  others[3].user.extra = {{"scopes", {"b"}}};
  others[4].user.extra = {};
  others[5].ns = "ns2";
  others[6].verb = "get";
  others[7].group = "kubevirt.io";
  others[8].resource = "other";
  for (const auto& q : others) cache.Review(q);
  CHECK(inner.asked == 10);
  // The same question again, groups in another order: remembered.
  AccessQuery reordered = base;
  reordered.user.groups = {"g2", "g1"};
  cache.Review(reordered);
  CHECK(inner.asked == 10);
  // A non-resource question is another key than the resource question it extends.
  AccessQuery by_path = base;
  by_path.path = "/metrics";
  cache.Review(by_path);
  CHECK(inner.asked == 11);
  AccessQuery other_path = by_path;
  other_path.path = "/metrics/extra";
  cache.Review(other_path);
  CHECK(inner.asked == 12);
  cache.Review(by_path);
  CHECK(inner.asked == 12);
  // Length-prefixed parts: moving a character from one member to the next is another key.
  CHECK(AccessCacheKey(Query({"ab", "c", {}, {}})) != AccessCacheKey(Query({"a", "bc", {}, {}})));
}

TEST_CASE("CachingAccessReviewer never remembers a failure or an evaluation error") {
  CountingReviewer inner;
  base::FakeClock clock;
  CachingAccessReviewer cache(inner, {}, clock);
  const AccessQuery q = Query({"admin", "", {}, {}});
  inner.fail = true;
  CHECK_THROWS_AS(cache.Review(q), std::runtime_error);
  CHECK_THROWS_AS(cache.Review(q), std::runtime_error);
  CHECK(inner.asked == 2);
  inner.fail = false;
  inner.answer = {false, "", "webhook authorizer timed out"};
  CHECK_FALSE(cache.Review(q).allowed);
  CHECK_FALSE(cache.Review(q).allowed);
  CHECK(inner.asked == 4);
  CHECK(cache.size() == 0);
}

TEST_CASE("CachingAccessReviewer holds at most its capacity, dropping the least recently used") {
  CountingReviewer inner;
  base::FakeClock clock;
  AccessCacheOptions o;
  o.capacity = 2;
  CachingAccessReviewer cache(inner, o, clock);
  const AccessQuery a = Query({"a", "", {}, {}}), b = Query({"b", "", {}, {}}),
                    c = Query({"c", "", {}, {}});
  cache.Review(a);
  cache.Review(b);
  cache.Review(a);  // a is now the most recent
  cache.Review(c);  // drops b
  CHECK(cache.size() == 2);
  CHECK(inner.asked == 3);
  cache.Review(a);
  CHECK(inner.asked == 3);
  cache.Review(b);
  CHECK(inner.asked == 4);
}

TEST_CASE("SubjectAccessReviewer asks again when the connection broke, a bounded number of times") {
  Authorizer api;
  SubjectAccessReviewer reviewer(api.client);
  // A connection killed with the question or its answer in flight: asking again is safe.
  api.client.FailNext(kube::Verb::kCreate, SubjectAccessReviewer::kReviewAttempts - 1,
                      kube::ErrorKind::kTransport);
  CHECK(reviewer.Review(Query({"u", "", {}, {}})).allowed);

  api.client.FailNext(kube::Verb::kCreate, SubjectAccessReviewer::kReviewAttempts,
                      kube::ErrorKind::kTransport);
  CHECK_THROWS_AS(reviewer.Review(Query({"u", "", {}, {}})), kube::KubeError);
  // The failures were used up by this review, not left for the next one.
  CHECK(reviewer.Review(Query({"u", "", {}, {}})).allowed);

  // Any other failure (here a timeout: the admission deadline is short) is not retried.
  api.client.FailNext(kube::Verb::kCreate, 1, kube::ErrorKind::kTimeout);
  CHECK_THROWS_AS(reviewer.Review(Query({"u", "", {}, {}})), kube::KubeError);
  CHECK(reviewer.Review(Query({"u", "", {}, {}})).allowed);
}

}  // namespace
}  // namespace kmt::webhook
