// cmd/operator/metrics_auth_test.cc — the scrape decision, pure and through the HTTPS metrics
// server with the real TokenReview and SubjectAccessReview clients on the fake API server.
#include "cmd/operator/metrics_auth.h"

#include <httplib.h>

#include <catch2/catch.hpp>
#include <map>
#include <set>
#include <string>

#include "base/metrics.h"
#include "cmd/operator/probes.h"
#include "http/testing/test_tls.h"
#include "kube/fake_client.h"
#include "kube/resources.h"
#include "webhook/serving_cert.h"
#include "webhook/testing/fake_access_reviewer.h"

namespace kmt::cmd {
namespace {

using webhook::Json;

TEST_CASE("BearerToken reads the header as the API server's bearer-token authenticator") {
  struct Row {
    std::string header;
    std::optional<std::string> token;
  };
  auto row = GENERATE(values<Row>({
      {"Bearer abc", "abc"},
      {"bearer abc", "abc"},
      {"BEARER abc", "abc"},
      {"  Bearer abc  ", "abc"},
      {"Bearer abc extra", "abc"},
      {"", std::nullopt},
      {"Bearer", std::nullopt},
      {"Bearer ", std::nullopt},
      {"Bearer  abc", std::nullopt},  // empty token before the second space
      {"Basic dXNlcjpwYXNz", std::nullopt},
      {"Bearerabc", std::nullopt},
  }));
  CAPTURE(row.header);
  CHECK(BearerToken(row.header) == row.token);
}

// Authenticates "good-<user>" as <user>; anything else is rejected.
struct Tokens : webhook::TokenAuthenticator {
  int asked = 0;
  bool fail = false;
  webhook::TokenIdentity Authenticate(const std::string& token) override {
    ++asked;
    if (fail) throw std::runtime_error("connection refused");
    webhook::TokenIdentity id;
    if (token.starts_with("good-")) {
      id.authenticated = true;
      id.user.username = token.substr(5);
    }
    return id;
  }
};

TEST_CASE("AuthorizeScrape: 401 without an accepted token, 403 when not allowed, else serve") {
  Tokens tokens;
  webhook::testing::FakeAccessReviewer rbac;
  rbac.GrantPath("user:prometheus", "get", "/metrics");
  rbac.GrantPath("group:scrapers", "get", "/metrics");

  auto none = AuthorizeScrape("", "GET", "/metrics", tokens, rbac);
  REQUIRE(none);
  CHECK(none->status == 401);
  CHECK(none->body == "Unauthorized\n");
  CHECK(tokens.asked == 0);  // no token, no review

  auto invalid = AuthorizeScrape("Bearer made-up", "GET", "/metrics", tokens, rbac);
  REQUIRE(invalid);
  CHECK(invalid->status == 401);
  CHECK(invalid->body == "Unauthorized\n");
  CHECK_FALSE(invalid->failure);
  CHECK(rbac.calls == 0);  // an unauthenticated request is never authorized

  auto denied = AuthorizeScrape("Bearer good-intruder", "GET", "/metrics", tokens, rbac);
  REQUIRE(denied);
  CHECK(denied->status == 403);
  CHECK(denied->body == "Authorization denied for user intruder\n");
  CHECK(denied->user == "intruder");

  CHECK_FALSE(AuthorizeScrape("Bearer good-prometheus", "GET", "/metrics", tokens, rbac));
  // The verb is the method in lower case and the path is the request's: a grant on /metrics
  // is not one on another path.
  auto other_path = AuthorizeScrape("Bearer good-prometheus", "GET", "/debug", tokens, rbac);
  REQUIRE(other_path);
  CHECK(other_path->status == 403);

  // system:authenticated is added when the TokenReview's answer lacks it, so a grant to that
  // group reaches every authenticated user (as on the API server).
  rbac.GrantPath("group:system:authenticated", "get", "/healthy-group");
  CHECK_FALSE(AuthorizeScrape("Bearer good-anyone", "GET", "/healthy-group", tokens, rbac));

  tokens.fail = true;
  auto authn_down = AuthorizeScrape("Bearer good-prometheus", "GET", "/metrics", tokens, rbac);
  REQUIRE(authn_down);
  CHECK(authn_down->status == 500);
  CHECK(authn_down->body == "Authentication failed\n");
  CHECK(authn_down->failure);
  CHECK(authn_down->error == "connection refused");

  tokens.fail = false;
  rbac.error = "the API server is unavailable";
  auto authz_down = AuthorizeScrape("Bearer good-prometheus", "GET", "/metrics", tokens, rbac);
  REQUIRE(authz_down);
  CHECK(authz_down->status == 500);
  CHECK(authz_down->body == "Authorization for user prometheus failed\n");
  CHECK(authz_down->failure);
}

// The API server's side of both reviews: known tokens, and RBAC on non-resource URLs.
struct ApiServer {
  kube::FakeClient client;
  std::map<std::string, std::string> users;               // token -> user name
  std::set<std::pair<std::string, std::string>> may_get;  // (user, path)
  int token_reviews = 0, access_reviews = 0;
  std::optional<Json> last_access_review;

  ApiServer() {
    client.SetCreateHandler(kube::kTokenReviews, [this](const Json& review) {
      ++token_reviews;
      Json answer = review;
      auto it = users.find(review["spec"]["token"].get<std::string>());
      answer["status"] =
          it == users.end()
              ? Json{{"authenticated", false}}
              : Json{{"authenticated", true},
                     {"user",
                      {{"username", it->second},
                       {"uid", "uid-" + it->second},
                       {"groups", {"system:serviceaccounts", "system:authenticated"}}}}};
      return answer;
    });
    client.SetCreateHandler(kube::kSubjectAccessReviews, [this](const Json& review) {
      ++access_reviews;
      last_access_review = review;
      Json answer = review;
      const Json& spec = review["spec"];
      const bool allowed =
          spec.contains("nonResourceAttributes") &&
          spec["nonResourceAttributes"]["verb"] == "get" &&
          may_get.count({spec["user"].get<std::string>(),
                         spec["nonResourceAttributes"]["path"].get<std::string>()}) > 0;
      answer["status"] = {{"allowed", allowed}};
      return answer;
    });
  }
};

TEST_CASE("The HTTPS metrics server answers 401, 403 and 200 with the real review clients") {
  ApiServer api;
  api.users["prometheus-token"] = "system:serviceaccount:monitoring:prometheus";
  api.users["nosy-token"] = "system:serviceaccount:default:nosy";
  api.may_get.insert({"system:serviceaccount:monitoring:prometheus", "/metrics"});

  http::testing::TestAuthority ca;
  const std::string dir = http::testing::MakeTempDir();
  auto pair = ca.Issue(7);
  http::testing::WriteFileAtomically(dir + "/tls.key", pair.key);
  http::testing::WriteFileAtomically(dir + "/tls.crt", pair.cert);
  http::testing::WriteFileAtomically(dir + "/ca.crt", ca.ca_pem());
  webhook::ServingCertificate cert(dir + "/tls.crt", dir + "/tls.key");
  REQUIRE(cert.Reload().outcome == webhook::ReloadOutcome::kLoaded);

  webhook::TokenReviewer token_reviewer(api.client);
  webhook::CachingTokenAuthenticator tokens(token_reviewer);
  webhook::SubjectAccessReviewer access_reviewer(api.client);
  webhook::CachingAccessReviewer access(access_reviewer);

  base::Registry registry;
  registry.AddCounter("kmt_test_total", "A counter").WithLabels({}).Inc();
  ProbeServerOptions options;
  options.configure_tls = [&cert](SSL_CTX* ctx) { return webhook::ConfigureServingTls(ctx, cert); };
  options.gate = [&](std::string_view method, std::string_view path,
                     std::string_view authorization) -> std::optional<HttpAnswer> {
    auto refusal = AuthorizeScrape(authorization, method, path, tokens, access);
    if (!refusal) return std::nullopt;
    return HttpAnswer{refusal->status, "text/plain; charset=utf-8", refusal->body};
  };
  ProbeServer server("127.0.0.1", 0,
                     {{"/metrics", [&registry](bool) { return AnswerMetrics(registry); }}},
                     options);
  server.Start();

  httplib::SSLClient cli("127.0.0.1", server.port());
  cli.set_ca_cert_path((dir + "/ca.crt").c_str());
  cli.enable_server_certificate_verification(true);
  cli.set_connection_timeout(5, 0);
  cli.set_read_timeout(10, 0);

  auto anonymous = cli.Get("/metrics");
  REQUIRE(anonymous);
  CHECK(anonymous->status == 401);
  CHECK(anonymous->body == "Unauthorized\n");

  auto invalid = cli.Get("/metrics", {{"Authorization", "Bearer not-a-token"}});
  REQUIRE(invalid);
  CHECK(invalid->status == 401);
  CHECK(api.access_reviews == 0);

  auto nosy = cli.Get("/metrics", {{"Authorization", "Bearer nosy-token"}});
  REQUIRE(nosy);
  CHECK(nosy->status == 403);
  CHECK(nosy->body == "Authorization denied for user system:serviceaccount:default:nosy\n");
  CHECK(nosy->body.find("kmt_test_total") == std::string::npos);

  auto scrape = cli.Get("/metrics", {{"Authorization", "Bearer prometheus-token"}});
  REQUIRE(scrape);
  CHECK(scrape->status == 200);
  CHECK(scrape->body.find("kmt_test_total 1") != std::string::npos);
  REQUIRE(api.last_access_review);
  CHECK((*api.last_access_review)["spec"] == Json::parse(R"({
      "user": "system:serviceaccount:monitoring:prometheus",
      "uid": "uid-system:serviceaccount:monitoring:prometheus",
      "groups": ["system:serviceaccounts", "system:authenticated"],
      "nonResourceAttributes": {"path": "/metrics", "verb": "get"}})"));

  // The next scrape within the TTLs costs no review at all.
  const int token_reviews = api.token_reviews, access_reviews = api.access_reviews;
  auto again = cli.Get("/metrics", {{"Authorization", "Bearer prometheus-token"}});
  REQUIRE(again);
  CHECK(again->status == 200);
  CHECK(api.token_reviews == token_reviews);
  CHECK(api.access_reviews == access_reviews);

  // The API server cannot be reached for a token not seen yet: 500, nothing served.
  api.client.FailNext(kube::Verb::kCreate, 1, kube::ErrorKind::kUnavailable);
  auto down = cli.Get("/metrics", {{"Authorization", "Bearer another-token"}});
  REQUIRE(down);
  CHECK(down->status == 500);
  CHECK(down->body == "Authentication failed\n");

  // Plain HTTP on the HTTPS port gets no page.
  httplib::Client plain("127.0.0.1", server.port());
  plain.set_connection_timeout(2, 0);
  plain.set_read_timeout(3, 0);
  auto p = plain.Get("/metrics", {{"Authorization", "Bearer prometheus-token"}});
  CHECK((!p || p->body.find("kmt_test_total") == std::string::npos));
  server.Stop();
}

}  // namespace
}  // namespace kmt::cmd
