#include "webhook/access_review.h"

#include <catch2/catch.hpp>
#include <optional>
#include <stdexcept>

#include "kube/error.h"
#include "kube/fake_client.h"
#include "kube/resources.h"

namespace kmt::webhook {
namespace {

AccessQuery Query(UserInfo user) {
  return {std::move(user), "ns1", "use", "migration-target.kubevirt.io", "addednodeselectorterms"};
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
