// cmd/operator/probes_test.cc
#include "cmd/operator/probes.h"

#include <httplib.h>

#include <atomic>
#include <catch2/catch.hpp>

namespace kmt::cmd {
namespace {

TEST_CASE("Checks answer as controller-runtime's healthz does") {
  bool synced = false;
  std::vector<HealthCheck> checks = {{"webhook-cert", [] { return true; }},
                                     {"informers-synced", [&] { return synced; }}};
  HttpAnswer a = AnswerChecks(checks, false);
  CHECK(a.status == 500);
  CHECK(a.body ==
        "[-]informers-synced failed: reason withheld\n[+]webhook-cert ok\nhealthz check failed\n");
  synced = true;
  a = AnswerChecks(checks, false);
  CHECK(a.status == 200);
  CHECK(a.body == "ok");
  a = AnswerChecks(checks, true);
  CHECK(a.status == 200);
  CHECK(a.body == "[+]informers-synced ok\n[+]webhook-cert ok\nhealthz check passed\n");
  CHECK(AnswerChecks({}, true).body == "[+]ping ok\nhealthz check passed\n");
  CHECK(AnswerChecks({{"boom", []() -> bool { throw std::runtime_error("x"); }}}, false).status ==
        500);
}

TEST_CASE("Bind addresses parse as controller-runtime's flags") {
  struct Row {
    std::string text;
    bool enabled;
    std::string host;
    int port;
  };
  auto row = GENERATE(values<Row>({
      {":8081", true, "0.0.0.0", 8081},
      {"127.0.0.1:8080", true, "127.0.0.1", 8080},
      {"[::1]:9000", true, "::1", 9000},
      {"0", false, "", -1},
      {"", false, "", -1},
  }));
  CAPTURE(row.text);
  std::string host;
  int port = 0;
  REQUIRE(ParseBindAddress(row.text, &host, &port) == row.enabled);
  CHECK(host == row.host);
  CHECK(port == row.port);
}

TEST_CASE("Malformed bind addresses are rejected with the text") {
  std::string host;
  int port;
  CHECK_THROWS_WITH(ParseBindAddress("8080", &host, &port),
                    "bind address \"8080\" must be host:port or :port");
  CHECK_THROWS_WITH(ParseBindAddress(":http", &host, &port),
                    "bind address \":http\" has an invalid port");
  CHECK_THROWS_WITH(ParseBindAddress(":70000", &host, &port),
                    "bind address \":70000\" has an invalid port");
}

TEST_CASE("The server serves /healthz, /readyz and /metrics over HTTP") {
  base::Registry registry;
  registry.AddCounter("x_total", "X").WithLabels({}).Inc();
  std::atomic<bool> ready{false};
  ProbeServer server("127.0.0.1", 0,
                     {{"/healthz", [](bool v) { return AnswerChecks({}, v); }},
                      {"/readyz",
                       [&](bool v) {
                         return AnswerChecks({{"synced", [&] { return ready.load(); }}}, v);
                       }},
                      {"/metrics", [&](bool) { return AnswerMetrics(registry); }}});
  server.Start();
  REQUIRE(server.port() > 0);
  httplib::Client client("127.0.0.1", server.port());
  auto h = client.Get("/healthz");
  REQUIRE(h);
  CHECK(h->status == 200);
  CHECK(h->body == "ok");
  auto r = client.Get("/readyz");
  REQUIRE(r);
  CHECK(r->status == 500);
  ready = true;
  r = client.Get("/readyz?verbose");
  REQUIRE(r);
  CHECK(r->status == 200);
  CHECK(r->body == "[+]synced ok\nhealthz check passed\n");
  auto m = client.Get("/metrics");
  REQUIRE(m);
  CHECK(m->get_header_value("Content-Type") == "text/plain; version=0.0.4; charset=utf-8");
  CHECK(m->body == "# HELP x_total X\n# TYPE x_total counter\nx_total 1\n");
  auto missing = client.Get("/nope");
  REQUIRE(missing);
  CHECK(missing->status == 404);
  server.Stop();
}

}  // namespace
}  // namespace kmt::cmd
