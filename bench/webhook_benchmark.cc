// Webhook latency against a floor measured in the same run (DESIGN.md §6: p99 ≤ 1 ms
// server-side at 1,000 req/s on 2 cores, no errors).
//
// Two AdmissionServers run in this process on 127.0.0.1 with a throwaway certificate: the
// operator's routes (SubjectAccessReview, VMIM and node reads answered by an in-memory
// kube::FakeClient) and the floor (same server, a constant "allowed"). An open-loop load
// generator sends a 50/50 mix of VMIM CREATE (→ /validate-vmim) and target pod CREATE
// (→ /mutate-pod) AdmissionReviews over keep-alive TLS at each rate, to the real stack then
// to the floor.
//
//   bazel-bin/bench/webhook_benchmark [--quick] [--rates=200,1000,3000] [--seconds=5]
//       [--connections=4] [--nodes=100] [--report=FILE]
#include <fmt/format.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "bench/throwaway_cert.h"
#include "bench/webhook_fixture.h"
#include "controller/clock.h"
#include "controller/informer_view.h"
#include "webhook/kube_cluster_view.h"
#include "webhook/routes.h"

namespace kmt::bench {
namespace {

std::vector<double> ParseRates(const std::string& s) {
  std::vector<double> out;
  size_t pos = 0;
  while (pos <= s.size()) {
    size_t comma = s.find(',', pos);
    if (comma == std::string::npos) comma = s.size();
    out.push_back(std::atof(s.substr(pos, comma - pos).c_str()));
    pos = comma + 1;
  }
  return out;
}

int Main(int argc, char** argv) {
  std::vector<double> rates = {200, 1000, 3000};
  int seconds_ms = 5000;
  int connections = 4;
  int nodes = 100;
  // Where the validator's placement warnings read nodes: "informer" (the operator's wiring:
  // its controller's node cache) or "list" (--disable-controller: a LIST reused for 2 s).
  std::string node_source = "informer";
  std::string report;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--quick") {
      seconds_ms = 1000;
    } else if (a.rfind("--rates=", 0) == 0) {
      rates = ParseRates(a.substr(8));
    } else if (a.rfind("--seconds=", 0) == 0) {
      seconds_ms = static_cast<int>(std::atof(a.substr(10).c_str()) * 1000);
    } else if (a.rfind("--connections=", 0) == 0) {
      connections = std::atoi(a.substr(14).c_str());
    } else if (a.rfind("--nodes=", 0) == 0) {
      nodes = std::atoi(a.substr(8).c_str());
    } else if (a.rfind("--node-source=", 0) == 0) {
      node_source = a.substr(14);
      if (node_source != "informer" && node_source != "list") {
        std::fprintf(stderr, "--node-source: informer or list\n");
        return 2;
      }
    } else if (a.rfind("--report=", 0) == 0) {
      report = a.substr(9);
    } else {
      std::fprintf(stderr, "unknown argument %s\n", a.c_str());
      return 2;
    }
  }

  char dir_template[] = "/tmp/kmt-bench-webhook-XXXXXX";
  const char* dir = mkdtemp(dir_template);
  if (dir == nullptr) {
    std::perror("mkdtemp");
    return 1;
  }
  const CertFiles cert = WriteThrowawayCertificate(dir);
  // The throwaway certificate's directory goes when the run ends, however it ends.
  struct RemoveDir {
    std::string path;
    ~RemoveDir() {
      std::error_code ignored;
      std::filesystem::remove_all(path, ignored);
    }
  } remove_dir{dir};

  FakeApi api(/*vmims=*/1000, nodes);
  webhook::SubjectAccessReviewer access(api.client());
  webhook::KubeClusterView cluster(api.client());
  controller::RealClock clock;
  controller::InformerView view(api.client(), clock);
  if (node_source == "informer") {
    view.Start();
    if (!view.WaitForSync(std::chrono::seconds(60))) {
      std::fprintf(stderr, "the informer caches did not sync\n");
      return 1;
    }
    cluster.SetCachedNodes([&view] { return view.NodeList(); });
  }
  AdmitTimer real_timer, floor_timer;
  webhook::AdmissionServer real(BenchServerOptions(cert.cert_file, cert.key_file),
                                real_timer.Wrap(webhook::AdmissionRoutes(access, cluster)));
  webhook::AdmissionServer floor(BenchServerOptions(cert.cert_file, cert.key_file),
                                 floor_timer.Wrap(ConstantRoutes()));
  real.Start();
  floor.Start();
  if (!real.Ready() || !floor.Ready()) {
    std::fprintf(stderr, "webhook servers did not load the certificate\n");
    return 1;
  }
  const MixedLoad load(api, 1000);

  std::vector<Row> rows;
  bool all_ok = true;
  for (double rate : rates) {
    LoadOptions o;
    o.ca_file = cert.ca_file;
    o.rate = rate;
    o.duration = std::chrono::milliseconds(seconds_ms);
    o.connections = connections;
    WebhookPhase phase;
    phase.rate = rate;
    o.port = real.port();
    phase.real = RunOpenLoop(o, load, Allows);
    phase.real_admit = real_timer.Take();
    o.port = floor.port();
    phase.floor = RunOpenLoop(o, load, Allows);
    phase.floor_admit = floor_timer.Take();
    std::fprintf(stderr, "rate %.0f: real %zu answered, %llu errors%s%s; floor %zu answered, %llu errors\n",
                 rate, phase.real.service_seconds.size(),
                 static_cast<unsigned long long>(phase.real.errors),
                 phase.real.first_error.empty() ? "" : " first: ",
                 phase.real.first_error.c_str(), phase.floor.service_seconds.size(),
                 static_cast<unsigned long long>(phase.floor.errors));
    all_ok = all_ok && phase.real.errors == 0 && phase.floor.errors == 0;
    for (Row& r : WebhookRows(phase)) rows.push_back(std::move(r));
  }
  real.Stop();
  floor.Stop();
  view.Stop();

  const std::string table = MarkdownTable(
      "Webhook latency (open loop, TLS keep-alive)", rows,
      {fmt::format(
           "{} s per rate per server, {} client connections, a 50/50 mix of VMIM CREATE with a "
           "term (→ /validate-vmim) and virt-launcher target pod CREATE (→ /mutate-pod). "
           "Latency is measured by the client, from writing the request to reading the "
           "response, over TLS on 127.0.0.1 (the server exposes no per-request hook; the "
           "admitter-only row times the route handlers inside the server). The client shares "
           "the 2 cores with the server, so these are upper bounds of the server-side time.",
           seconds_ms / 1000.0, connections),
       fmt::format(
           "The SubjectAccessReview is in the measured path, answered in memory by "
           "kube::FakeClient in the same process, as is the VMIM GET (mutator): the figures "
           "exclude the API server round trips. The validator's placement warnings read {} "
           "KWOK-like nodes {}. Server: the operator's AdmissionServer defaults (8 workers, "
           "keep-alive 100 requests per connection, then a new TLS handshake). Floor: the same "
           "AdmissionServer answering a constant \"allowed\" on both paths.",
           nodes,
           node_source == "informer"
               ? "from the controller's node informer (controller::InformerView over the same "
                 "fake), as the operator wires it"
               : "through a LIST reused for 2 s (the operator with --disable-controller)")});
  std::printf("\n%s", table.c_str());
  AppendToFile(report, table);
  return all_ok ? 0 : 1;
}

}  // namespace
}  // namespace kmt::bench

int main(int argc, char** argv) { return kmt::bench::Main(argc, argv); }
