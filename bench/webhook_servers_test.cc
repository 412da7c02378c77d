// The webhook benchmark's servers answer what the load generator sends: floor (a) its
// constant review, floor (b) (the httplib copy) the real routes' decisions; and a server in
// a child process reports the CPU it spent.
#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <cstdlib>
#include <mutex>
#include <string>

#include "bench/asio_tls_floor.h"
#include "bench/httplib_admission_server.h"
#include "bench/server_process.h"
#include "bench/throwaway_cert.h"
#include "bench/webhook_fixture.h"
#include "webhook/kube_cluster_view.h"
#include "webhook/routes.h"

namespace kmt::bench {
namespace {

CertFiles TestCertificate() {
  const char* tmp = std::getenv("TEST_TMPDIR");  // Bazel's, removed with the test's sandbox
  std::string dir_template = std::string(tmp != nullptr ? tmp : "/tmp") + "/kmt-bench-test-XXXXXX";
  const char* dir = mkdtemp(dir_template.data());
  REQUIRE(dir != nullptr);
  return WriteThrowawayCertificate(dir);
}

LoadOptions ShortRun(int port, const CertFiles& cert) {
  LoadOptions o;
  o.port = port;
  o.ca_file = cert.ca_file;
  o.rate = 200;
  o.duration = std::chrono::milliseconds(100);
  o.connections = 2;
  return o;
}

TEST_CASE("Floor (a) answers every request with its constant review") {
  const CertFiles cert = TestCertificate();
  AsioTlsFloor floor(cert.cert_file, cert.key_file, 2);
  floor.Start();
  REQUIRE(floor.port() > 0);
  FakeApi api(4, 3);
  MixedLoad load(api, 4);
  std::atomic<size_t> constant{0};  // the connection threads call the check at once
  LoadResult r = RunOpenLoop(ShortRun(floor.port(), cert), load, [&](const std::string& body) {
    if (body == AsioTlsFloor::Answer()) ++constant;
    return Allows(body);
  });
  floor.Stop();
  CHECK(r.first_error == "");
  CHECK(r.errors == 0);
  CHECK(r.service_seconds.size() == 20);
  CHECK(constant == 20);  // the floor's one answer, to every request
}

TEST_CASE("Floor (b), the httplib copy, serves the real routes") {
  const CertFiles cert = TestCertificate();
  FakeApi api(4, 3);
  MixedLoad load(api, 4);
  webhook::SubjectAccessReviewer access(api.client());
  webhook::KubeClusterView cluster(api.client());
  HttplibServerOptions o;
  o.cert_file = cert.cert_file;
  o.key_file = cert.key_file;
  HttplibAdmissionServer server(o, webhook::AdmissionRoutes(access, cluster));
  server.Start();
  REQUIRE(server.port() > 0);
  std::mutex mu;  // the connection threads call the check at once
  std::vector<std::string> bodies;
  LoadResult r = RunOpenLoop(ShortRun(server.port(), cert), load, [&](const std::string& body) {
    {
      std::scoped_lock lock(mu);
      bodies.push_back(body);
    }
    return Allows(body);
  });
  server.Stop();
  CHECK(r.first_error == "");
  CHECK(r.errors == 0);
  REQUIRE(bodies.size() == 20);
  size_t gated = 0;
  for (const std::string& b : bodies) {
    if (b.find(R"("patchType":"JSONPatch")") != std::string::npos) ++gated;
  }
  CHECK(gated == 10);  // every target pod review adds the gate
}

TEST_CASE("A server in a child process reports its CPU and its errors") {
  const CertFiles cert = TestCertificate();
  {
    ServerProcess child([&]() -> ChildServer {
      auto floor = std::make_shared<AsioTlsFloor>(cert.cert_file, cert.key_file, 1);
      floor->Start();
      return {floor->port(),
              [] {
                return std::vector<double>{1e-3, 2e-3};
              },
              [floor] { floor->Stop(); }};
    });
    REQUIRE(child.port() > 0);
    const ServerUsage before = child.Snapshot();
    FakeApi api(4, 3);
    MixedLoad load(api, 4);
    LoadResult r = RunOpenLoop(ShortRun(child.port(), cert), load, Allows);
    const ServerUsage after = child.Snapshot();
    CHECK(r.errors == 0);
    CHECK(after.cpu_seconds > before.cpu_seconds);  // TLS handshakes and 20 answers
    CHECK(after.admit_count == 2);
    CHECK(after.admit_p99 == Approx(2e-3));
  }
  CHECK_THROWS_WITH(ServerProcess([]() -> ChildServer { throw std::runtime_error("no port"); }),
                    "error no port");
}

}  // namespace
}  // namespace kmt::bench
