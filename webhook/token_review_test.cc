#include "webhook/token_review.h"

#include <catch2/catch.hpp>
#include <chrono>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>

#include "base/fake_clock.h"
#include "kube/error.h"
#include "kube/fake_client.h"
#include "kube/resources.h"

namespace kmt::webhook {
namespace {

// The API server's side of a TokenReview: knows some tokens, keeps what was asked.
struct Authenticator {
  kube::FakeClient client;
  std::optional<Json> asked;
  std::map<std::string, Json> users;  // token -> status.user
  bool answer_without_status = false;

  Authenticator() {
    client.SetCreateHandler(kube::kTokenReviews, [this](const Json& review) {
      asked = review;
      Json answer = review;
      if (answer_without_status) return answer;
      const std::string token = review["spec"]["token"];
      auto it = users.find(token);
      answer["status"] = it == users.end()
                             ? Json{{"authenticated", false}, {"error", "invalid bearer token"}}
                             : Json{{"authenticated", true}, {"user", it->second}};
      return answer;
    });
  }
};

TEST_CASE("TokenReviewer sends the token and reads the user the API server names") {
  Authenticator api;
  api.users["good"] = {{"username", "system:serviceaccount:monitoring:prometheus"},
                       {"uid", "sa-uid"},
                       {"groups", {"system:serviceaccounts", "system:authenticated"}},
                       {"extra", {{"authentication.kubernetes.io/pod-name", {"prom-0"}}}}};
  TokenReviewer reviewer(api.client);
  TokenIdentity id = reviewer.Authenticate("good");
  REQUIRE(api.asked.has_value());
  CHECK(*api.asked == Json::parse(R"({"apiVersion": "authentication.k8s.io/v1",
      "kind": "TokenReview", "spec": {"token": "good"}})"));
  CHECK(id.authenticated);
  CHECK(id.user == UserInfo{"system:serviceaccount:monitoring:prometheus",
                            "sa-uid",
                            {"system:serviceaccounts", "system:authenticated"},
                            {{"authentication.kubernetes.io/pod-name", {"prom-0"}}}});

  TokenIdentity bad = reviewer.Authenticate("made-up");
  CHECK_FALSE(bad.authenticated);
  CHECK(bad.user == UserInfo{});
  CHECK(bad.error == "invalid bearer token");
}

TEST_CASE("TokenIdentityOf reads the status leniently and never trusts a nameless user") {
  struct Row {
    const char* name;
    const char* answer;
    bool authenticated;
    std::string username;
  };
  auto row = GENERATE(values<Row>({
      {"authenticated", R"({"status": {"authenticated": true, "user": {"username": "u"}}})", true,
       "u"},
      {"not authenticated", R"({"status": {"authenticated": false}})", false, ""},
      {"authenticated not a bool", R"({"status": {"authenticated": "true", "user":
          {"username": "u"}}})",
       false, ""},
      {"no user", R"({"status": {"authenticated": true}})", false, ""},
      {"empty user name", R"({"status": {"authenticated": true, "user": {"username": ""}}})", false,
       ""},
      {"groups of the wrong type", R"({"status": {"authenticated": true, "user":
          {"username": "u", "groups": "g", "extra": []}}})",
       true, "u"},
      {"empty status", R"({"status": {}})", false, ""},
  }));
  CAPTURE(row.name);
  TokenIdentity id = TokenIdentityOf(Json::parse(row.answer));
  CHECK(id.authenticated == row.authenticated);
  CHECK(id.user.username == row.username);
  CHECK(id.user.groups.empty());
}

TEST_CASE("TokenReviewer throws when there is no answer") {
  Authenticator api;
  TokenReviewer reviewer(api.client);
  api.answer_without_status = true;
  CHECK_THROWS_WITH(reviewer.Authenticate("t"), "the TokenReview answer has no status");
  api.answer_without_status = false;
  api.client.FailNext(kube::Verb::kCreate, 1, kube::ErrorKind::kUnavailable);
  CHECK_THROWS_AS(reviewer.Authenticate("t"), kube::KubeError);
  // A broken connection is asked again, a bounded number of times.
  api.client.FailNext(kube::Verb::kCreate, TokenReviewer::kReviewAttempts - 1,
                      kube::ErrorKind::kTransport);
  CHECK_FALSE(reviewer.Authenticate("t").authenticated);
  api.client.FailNext(kube::Verb::kCreate, TokenReviewer::kReviewAttempts,
                      kube::ErrorKind::kTransport);
  CHECK_THROWS_AS(reviewer.Authenticate("t"), kube::KubeError);
}

struct CountingAuthenticator : TokenAuthenticator {
  int asked = 0;
  bool fail = false;
  TokenIdentity Authenticate(const std::string& token) override {
    ++asked;
    if (fail) throw std::runtime_error("the API server is down");
    TokenIdentity id;
    id.authenticated = token.starts_with("good");
    if (id.authenticated) id.user.username = "user-of-" + token;
    return id;
  }
};

TEST_CASE("CachingTokenAuthenticator keeps an accepted token 10 s and a rejected one 2 s") {
  CountingAuthenticator inner;
  base::FakeClock time;
  CachingTokenAuthenticator cache(inner, {}, time);
  CHECK(cache.Authenticate("good-1").user.username == "user-of-good-1");
  CHECK(cache.Authenticate("good-1").user.username == "user-of-good-1");
  CHECK_FALSE(cache.Authenticate("bad").authenticated);
  CHECK_FALSE(cache.Authenticate("bad").authenticated);
  CHECK(inner.asked == 2);
  time.Advance(std::chrono::milliseconds(1'999));
  cache.Authenticate("bad");
  CHECK(inner.asked == 2);
  time.Advance(std::chrono::milliseconds(1));
  cache.Authenticate("bad");
  CHECK(inner.asked == 3);
  time.Advance(std::chrono::milliseconds(7'999));  // 9,999 ms after good-1 was asked
  cache.Authenticate("good-1");
  CHECK(inner.asked == 3);
  time.Advance(std::chrono::milliseconds(1));
  cache.Authenticate("good-1");
  CHECK(inner.asked == 4);
  // Another token is another question.
  cache.Authenticate("good-2");
  CHECK(inner.asked == 5);
}

TEST_CASE("CachingTokenAuthenticator never keeps a failure, and stays within its capacity") {
  CountingAuthenticator inner;
  base::FakeClock time;
  TokenCacheOptions o;
  o.capacity = 2;
  CachingTokenAuthenticator cache(inner, o, time);
  inner.fail = true;
  CHECK_THROWS(cache.Authenticate("good-1"));
  CHECK(cache.size() == 0);
  inner.fail = false;
  cache.Authenticate("good-1");
  cache.Authenticate("good-2");
  cache.Authenticate("good-1");  // the most recent now
  for (int i = 0; i < 100; ++i) cache.Authenticate("made-up-" + std::to_string(i));
  CHECK(cache.size() == 2);
  // TTL 0 turns the cache off.
  TokenCacheOptions off;
  off.authenticated_ttl = std::chrono::milliseconds(0);
  CachingTokenAuthenticator uncached(inner, off, time);
  const int before = inner.asked;
  uncached.Authenticate("good-1");
  uncached.Authenticate("good-1");
  CHECK(inner.asked == before + 2);
}

}  // namespace
}  // namespace kmt::webhook
