// The webhook benchmark's parts: request scheduling, the bodies (which the real routes must
// allow, else the benchmark would measure denials), a short real run, and the rows.
#include "bench/webhook_fixture.h"

#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <mutex>
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
  std::mutex mu;  // the connection threads call the check at once
  std::vector<std::string> bodies;
  LoadResult r = RunOpenLoop(o, load, [&](const std::string& body) {
    {
      std::scoped_lock lock(mu);
      bodies.push_back(body);  // order irrelevant
    }
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
    if (b.find(R"("patchType":"JSONPatch")") != std::string::npos) ++gated;
  }
  CHECK(gated == 10);  // every target pod review adds the gate
}

TEST_CASE("WebhookRows judges p99 against floor (a) and the absolute budget, and errors") {
  WebhookPhase p;
  p.rate = 3000;
  for (int i = 1; i <= 100; ++i) {
    p.real.load.service_seconds.push_back(i * 4e-6);     // p99 = 396 µs
    p.floor.load.service_seconds.push_back(i * 3.2e-6);  // p99 = 317 µs
    p.before.load.service_seconds.push_back(i * 1e-5);   // p99 = 990 µs
  }
  p.real.load.response_seconds = p.real.load.service_seconds;
  p.floor.load.response_seconds = p.floor.load.service_seconds;
  p.real.load.sent = p.floor.load.sent = p.before.load.sent = 100;
  p.real.cpu_seconds = 0.02;  // 100 reviews → 2 s per 10,000
  p.floor.cpu_seconds = 0.01;
  p.before.cpu_seconds = 0.04;
  std::vector<Row> rows = WebhookRows(p);
  REQUIRE(rows.size() == 10);
  CHECK(rows[1].figure == "p99 at 3000 req/s");
  CHECK(rows[1].value == "396 µs");
  CHECK(rows[1].floor == "317 µs");
  CHECK(rows[1].ratio == "1.25×");
  CHECK(rows[1].budget == "≤ 500 µs, ≤ 1.3× floor");
  CHECK(rows[1].pass == true);
  CHECK(rows[4].value == "2.00 s");
  CHECK(rows[4].floor == "1.00 s");
  CHECK(rows[4].ratio == "2.00×");
  CHECK(rows[5].value == "0 / 100");
  CHECK(rows[5].pass == true);
  CHECK(rows[6].value == "990 µs");
  CHECK(rows[7].value == "4.00 s");

  p.real.load.errors = 1;
  CHECK(WebhookRows(p)[5].pass == false);
  p.real.load.errors = 0;
  p.floor.load.service_seconds.assign(100, 2e-4);  // ratio 1.98 > 1.3
  CHECK(WebhookRows(p)[1].pass == false);
  p.floor.load.service_seconds.assign(100, 3.5e-4);
  p.rate = 5000;  // 396 µs ≤ 1 ms and ≤ 1.3× 350 µs
  CHECK(WebhookRows(p)[1].budget == "≤ 1.00 ms, ≤ 1.3× floor");
  CHECK(WebhookRows(p)[1].pass == true);
  p.rate = 1000;
  CHECK(WebhookRows(p)[1].budget == "≤ 1.3× floor");
}

TEST_CASE("CpuPer10k divides by the answered reviews") {
  ServerRun r;
  CHECK(CpuPer10k(r) == 0);
  r.load.service_seconds.assign(5000, 1e-4);
  r.cpu_seconds = 1.5;
  CHECK(CpuPer10k(r) == Approx(3.0));
}

}  // namespace
}  // namespace kmt::bench
