// Webhook latency and server CPU against two floors measured in the same run (DESIGN.md §6;
// the budget: p99 ≤ 0.5 ms at 3,000 req/s and ≤ 1 ms at 5,000 req/s on 2 cores, TLS
// keep-alive, no errors, p99 ≤ 1.3× floor (a)).
//
// Three servers, each in a child process of its own (bench/server_process.h: its CPU is
// read apart from the load generator's), on 127.0.0.1 with a throwaway certificate:
//   real       the operator's webhook::AdmissionServer with AdmissionRoutes
//              (SubjectAccessReview, VMIM, VMI and node reads answered by an in-memory
//              kube::FakeClient, nodes from the controller's informer, VMIs' nodes from
//              the webhook's VMI cache);
//   floor (a)  bench::AsioTlsFloor: minimal Boost.Asio TLS + Beast HTTP answering a
//              constant AdmissionReview on --floor-threads threads (default: the cores);
//   before (b) bench::HttplibAdmissionServer: the httplib server the operator had before
//              the Boost.Asio one, serving the same AdmissionRoutes.
// An open-loop load generator (this process) sends a 50/50 mix of VMIM CREATE
// (→ /validate-vmim) and target pod CREATE (→ /mutate-pod) AdmissionReviews over keep-alive
// TLS at each rate, to each server in turn.
//
//   bazel-bin/bench/webhook_benchmark [--quick] [--rates=1000,3000,5000] [--seconds=5]
//       [--connections=4] [--nodes=100] [--node-source=informer|list] [--floor-threads=N]
//       [--report=FILE]
#include <fmt/format.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "base/clock.h"
#include "bench/asio_tls_floor.h"
#include "bench/httplib_admission_server.h"
#include "bench/report.h"
#include "bench/server_process.h"
#include "bench/throwaway_cert.h"
#include "bench/webhook_fixture.h"
#include "controller/informer_view.h"
#include "webhook/kube_cluster_view.h"
#include "webhook/routes.h"
#include "webhook/vmi_node_cache.h"

namespace kmt::bench {
namespace {

// The operator's admission routes and what they read, as the operator wires them (the
// SubjectAccessReview answers remembered for the default 10 s / 2 s, the webhook's VMI cache).
struct OperatorRoutes {
  explicit OperatorRoutes(kube::FakeClient& client)
      : review(client), access(review), cluster(client), view(client, clock), vmis(client) {}
  webhook::SubjectAccessReviewer review;
  webhook::CachingAccessReviewer access;
  webhook::KubeClusterView cluster;
  base::RealClock clock;
  controller::InformerView view;
  webhook::VmiNodeCache vmis;
  AdmitTimer timer;
};

int Main(int argc, char** argv) {
  std::vector<double> rates = {1000, 3000, 5000};
  int seconds_ms = 5000;
  int connections = 4;
  int nodes = 100;
  // Where the validator's placement warnings read nodes: "informer" (the operator's wiring:
  // its controller's node cache) or "list" (--disable-controller: a LIST reused for 2 s).
  std::string node_source = "informer";
  int floor_threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  std::string report;
  CLI::App app{"Webhook latency and server CPU against two floors", "webhook_benchmark"};
  app.add_flag_callback(
      "--quick", [&] { seconds_ms = 1000; }, "One second per rate");
  AddRatesOption(app, rates, "Request rates per second, comma-separated (default 1000,3000,5000)");
  app.add_option_function<double>(
      "--seconds", [&](double v) { seconds_ms = static_cast<int>(v * 1000); },
      "Seconds per rate (default 5)");
  app.add_option("--connections", connections, "Keep-alive TLS connections")->capture_default_str();
  app.add_option("--nodes", nodes, "Nodes in the fake API server")->capture_default_str();
  app.add_option("--node-source", node_source,
                 "Where the validator reads nodes: informer (the operator's wiring) or list")
      ->check(CLI::IsMember({"informer", "list"}));
  app.add_option("--floor-threads", floor_threads, "Threads of floor (a) (default: the cores)");
  app.add_option("--report", report, "Write the result table to this file");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
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

  // A dead child's pipe must not kill the harness; it reports the error instead.
  signal(SIGPIPE, SIG_IGN);
  // Prepared before any thread exists: the server processes fork from here and inherit it.
  FakeApi api(/*vmims=*/1000, nodes);
  const MixedLoad load(api, 1000);

  // What the real and the before server serve, built in their own process: the routes over
  // the fake API, nodes from the controller's informer unless --node-source=list.
  auto operator_routes = [&] {
    auto r = std::make_shared<OperatorRoutes>(api.client());
    // The webhook's VMI cache runs wherever the webhook does (cmd/operator/operator.cc).
    r->vmis.Start();
    if (!r->vmis.WaitForSync(std::chrono::seconds(60))) {
      throw std::runtime_error("the VMI cache did not sync");
    }
    r->cluster.SetCachedVmiNodes([r = r.get()](std::string_view ns, std::string_view name) {
      return r->vmis.NodeName(ns, name);
    });
    if (node_source == "informer") {
      r->view.Start();
      if (!r->view.WaitForSync(std::chrono::seconds(60))) {
        throw std::runtime_error("the informer caches did not sync");
      }
      r->cluster.SetCachedNodes([r = r.get()] { return r->view.NodeList(); });
      r->cluster.SetCachedMigrations([r = r.get()](std::string_view ns, std::string_view name)
                                         -> std::optional<webhook::MigrationRef> {
        std::optional<api::MigrationInfo> m = r->view.Migration(std::string(ns), std::string(name));
        if (!m) return std::nullopt;
        return webhook::MigrationRefOf(*m);
      });
    }
    return r;
  };
  auto real_server = [&]() -> ChildServer {
    auto routes = operator_routes();
    auto server = std::make_shared<webhook::AdmissionServer>(
        BenchServerOptions(cert.cert_file, cert.key_file),
        routes->timer.Wrap(webhook::AdmissionRoutes(routes->access, routes->cluster)));
    server->Start();
    if (!server->Ready()) throw std::runtime_error("the real server did not load the certificate");
    return {server->port(), [routes] { return routes->timer.Take(); },
            [server, routes] {
              std::fprintf(stderr,
                           "real server: %zu reviews answered on the I/O thread, %zu deferred "
                           "to the workers\n",
                           server->answered_inline(), server->deferred_to_workers());
              server->Stop();
              routes->view.Stop();
              routes->vmis.Stop();
            }};
  };
  auto floor_server = [&]() -> ChildServer {
    auto server = std::make_shared<AsioTlsFloor>(cert.cert_file, cert.key_file, floor_threads);
    server->Start();
    return {server->port(), nullptr, [server] { server->Stop(); }};
  };
  auto before_server = [&]() -> ChildServer {
    auto routes = operator_routes();
    HttplibServerOptions o;
    o.cert_file = cert.cert_file;
    o.key_file = cert.key_file;
    auto server = std::make_shared<HttplibAdmissionServer>(
        o, routes->timer.Wrap(webhook::AdmissionRoutes(routes->access, routes->cluster)));
    server->Start();
    return {server->port(), [routes] { return routes->timer.Take(); },
            [server, routes] {
              server->Stop();
              routes->view.Stop();
              routes->vmis.Stop();
            }};
  };
  ServerProcess real(real_server);
  ServerProcess floor(floor_server);
  ServerProcess before(before_server);

  // One run against one server: the load, and the server's CPU and admitters over it.
  auto measure = [&](ServerProcess& server, double rate) {
    LoadOptions o;
    o.ca_file = cert.ca_file;
    o.rate = rate;
    o.duration = std::chrono::milliseconds(seconds_ms);
    o.connections = connections;
    o.port = server.port();
    const ServerUsage start = server.Snapshot();
    ServerRun run;
    run.load = RunOpenLoop(o, load, Allows);
    const ServerUsage end = server.Snapshot();
    run.cpu_seconds = end.cpu_seconds - start.cpu_seconds;
    run.admit_count = end.admit_count;
    run.admit_p99 = end.admit_p99;
    return run;
  };
  auto describe = [](const char* name, const ServerRun& r) {
    return fmt::format("{} {} answered, {} errors{}{}, {:.3f} CPU s", name,
                       r.load.service_seconds.size(), r.load.errors,
                       r.load.first_error.empty() ? "" : " first: ", r.load.first_error,
                       r.cpu_seconds);
  };

  std::vector<Row> rows;
  bool all_ok = true;
  for (double rate : rates) {
    WebhookPhase phase;
    phase.rate = rate;
    phase.floor = measure(floor, rate);
    phase.real = measure(real, rate);
    phase.before = measure(before, rate);
    std::fprintf(stderr, "rate %.0f: %s; %s; %s\n", rate, describe("real", phase.real).c_str(),
                 describe("floor (a)", phase.floor).c_str(),
                 describe("before (b)", phase.before).c_str());
    all_ok = all_ok && phase.real.load.errors == 0 && phase.floor.load.errors == 0;
    for (Row& r : WebhookRows(phase)) rows.push_back(std::move(r));
  }

  const std::string table = MarkdownTable(
      "Webhook latency and server CPU (open loop, TLS keep-alive)", rows,
      {fmt::format(
           "{} s per rate per server, {} client connections, a 50/50 mix of VMIM CREATE with a "
           "term (→ /validate-vmim) and virt-launcher target pod CREATE (→ /mutate-pod), open "
           "loop. Latency is measured by the client, from writing the request to reading the "
           "response, over TLS keep-alive on 127.0.0.1; the client shares the 2 cores with the "
           "server, so these are upper bounds of the server-side time.",
           seconds_ms / 1000.0, connections),
       "Each server runs in a child process of its own; server CPU = getrusage(RUSAGE_SELF) "
       "user + system time of that process (every thread, microseconds) read by the child "
       "before and after each run, divided by the reviews answered. The load generator's "
       "CPU is not in it.",
       fmt::format(
           "value: the operator's webhook::AdmissionServer (its defaults) with AdmissionRoutes. "
           "The SubjectAccessReview goes through the operator's answer cache (10 s allowed; "
           "one admin sends every VMIM, so nearly every review is a hit) to kube::FakeClient "
           "in the same process; the mutator reads the VMIM from the controller's informer as the "
           "operator does (a GET only on a miss): the figures exclude the API server round "
           "trips. The validator's placement warnings read {} "
           "KWOK-like nodes {}, and where the VMI runs from the webhook's VMI cache "
           "(webhook::VmiNodeCache over the same fake; a GET only on a miss), as the operator "
           "does.",
           nodes,
           node_source == "informer"
               ? "from the controller's node informer (controller::InformerView over the same "
                 "fake), as the operator wires it"
               : "through a LIST reused for 2 s (the operator with --disable-controller)"),
       fmt::format(
           "floor (a): bench::AsioTlsFloor, a minimal Boost.Asio TLS server (same TLS settings "
           "and certificate, Beast's HTTP parser) answering a constant AdmissionReview on {} "
           "threads: the least a TLS admission server costs on this machine. Ratio = figure ÷ "
           "floor (a). \"before (httplib server)\" rows: bench::HttplibAdmissionServer, the "
           "operator's httplib server before the Boost.Asio one (8 workers, keep-alive 100 "
           "requests then "
           "a new handshake) with the same routes, against the same floor (a).",
           floor_threads)});
  std::printf("\n%s", table.c_str());
  AppendToFile(report, table);
  return all_ok ? 0 : 1;
}

}  // namespace
}  // namespace kmt::bench

int main(int argc, char** argv) { return kmt::bench::Main(argc, argv); }
