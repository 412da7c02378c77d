// The webhook benchmark's parts: request scheduling, the bodies (which the real routes must
// allow, else the benchmark would measure denials), a short real run, and the rows.
#include "bench/webhook_fixture.h"

#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <string>

#include "bench/throwaway_cert.h"
#include "webhook/kube_cluster_view.h"
#include "webhook/routes.h"

namespace kmt::bench {
namespace {

TEST_CASE("Open-loop schedule") {
  auto [rate, ms, count] = GENERATE(table<double, int, uint64_t>(
      {{200, 1000, 200}, {1000, 5000, 5000}, {3000, 1000, 3000}, {200, 100, 20}, {3, 1000, 3}}));
  CAPTURE(rate, ms);
  CHECK(RequestCount(rate, std::chrono::milliseconds(ms)) == count);
  CHECK(DueOffset(0, rate) == std::chrono::nanoseconds(0));
  CHECK(DueOffset(count, rate) == std::chrono::milliseconds(ms));
}

TEST_CASE("The mixed load alternates paths and is allowed by the real routes") {
  FakeApi api(4, 3);
  MixedLoad load(api, 4);
  CHECK(load(0).path == "/validate-vmim");
  CHECK(load(1).path == "/mutate-pod");
  CHECK(load(8).body == load(0).body);  // cycles through `count` bodies

  const char* tmp = std::getenv("TEST_TMPDIR");  // Bazel's, removed with the test's sandbox
  std::string dir_template = std::string(tmp != nullptr ? tmp : "/tmp") + "/kmt-bench-test-XXXXXX";
  const char* dir = mkdtemp(dir_template.data());
  REQUIRE(dir != nullptr);
  const CertFiles cert = WriteThrowawayCertificate(dir);
  webhook::SubjectAccessReviewer access(api.client());
  webhook::KubeClusterView cluster(api.client());
  AdmitTimer timer;
  webhook::AdmissionServer server(BenchServerOptions(cert.cert_file, cert.key_file),
                                  timer.Wrap(webhook::AdmissionRoutes(access, cluster)));
  server.Start();
  REQUIRE(server.Ready());

  LoadOptions o;
  o.port = server.port();
  o.ca_file = cert.ca_file;
  o.rate = 200;
  o.duration = std::chrono::milliseconds(100);
  o.connections = 2;
  std::vector<std::string> bodies;
  LoadResult r = RunOpenLoop(o, load, [&](const std::string& body) {
    bodies.push_back(body);  // only the two connection threads; order irrelevant
    return Allows(body);
  });
  server.Stop();
  CHECK(r.first_error == "");
  CHECK(r.errors == 0);
  CHECK(r.sent == 20);
  CHECK(r.service_seconds.size() == 20);
  CHECK(r.response_seconds.size() == 20);
  CHECK(timer.Take().size() == 20);
  CHECK(timer.Take().empty());
  size_t gated = 0;
  for (const std::string& b : bodies) {
    if (b.find("\"patchType\":\"JSONPatch\"") != std::string::npos) ++gated;
  }
  CHECK(gated == 10);  // every target pod review adds the gate
}

TEST_CASE("WebhookRows judges p99 and errors at 1,000 req/s only") {
  WebhookPhase p;
  p.rate = 1000;
  for (int i = 1; i <= 100; ++i) {
    p.real.service_seconds.push_back(i * 1e-5);   // p99 = 990 µs
    p.floor.service_seconds.push_back(i * 5e-6);  // p99 = 495 µs
  }
  p.real.response_seconds = p.real.service_seconds;
  p.floor.response_seconds = p.floor.service_seconds;
  p.real.sent = p.floor.sent = 100;
  p.real_admit = {1e-4};
  p.floor_admit = {1e-6};
  std::vector<Row> rows = WebhookRows(p);
  REQUIRE(rows.size() == 6);
  CHECK(rows[1].figure == "p99 at 1000 req/s");
  CHECK(rows[1].value == "990 µs");
  CHECK(rows[1].floor == "495 µs");
  CHECK(rows[1].ratio == "2.00×");
  CHECK(rows[1].pass == true);
  CHECK(rows[5].value == "0 / 100");
  CHECK(rows[5].pass == true);

  p.real.errors = 1;
  CHECK(WebhookRows(p)[1].pass == false);
  CHECK(WebhookRows(p)[5].pass == false);
  p.rate = 3000;
  CHECK(WebhookRows(p)[1].pass == std::nullopt);
}

}  // namespace
}  // namespace kmt::bench
