// cmd/operator/main.cc — the operator binary: flags, API config, signals, run.
//
// API server configuration, as controller-runtime's GetConfig: --kubeconfig,
// then $KUBECONFIG, then the in-cluster service account, then ~/.kube/config.
// SIGTERM/SIGINT stop gracefully (exit 0); a second one exits at once (1).
#include <pthread.h>
#include <sys/resource.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <thread>

#include "base/clock.h"
#include "base/heap.h"
#include "base/log.h"
#include "cmd/operator/flags.h"
#include "cmd/operator/operator.h"
#include "kube/error.h"
#include "kube/kubeconfig.h"
#include "kube/rest_client.h"
#include "webhook/server.h"

namespace {

using kmt::base::Logger;

kmt::kube::ClientConfig LoadConfig(const kmt::cmd::OperatorFlags& flags) {
  kmt::kube::KubeconfigOptions ko;
  ko.explicit_path = flags.kubeconfig;
  ko.context = flags.context;
  return kmt::kube::LoadClientConfig(
      ko);  // kubectl's order: flag, $KUBECONFIG, in-cluster, ~/.kube
}

// Raises the soft limit on open files to the hard one, as Go programs do at start (since Go
// 1.19): every open connection of the webhook costs a descriptor, and a flood must meet the
// connection bound (http/connection_table.h), not EMFILE. Returns the soft limit in force.
rlim_t RaiseOpenFileLimit() {
  rlimit lim{};
  if (getrlimit(RLIMIT_NOFILE, &lim) != 0) return 0;
  if (lim.rlim_cur < lim.rlim_max) {
    rlimit raised = lim;
    raised.rlim_cur = lim.rlim_max;
    if (setrlimit(RLIMIT_NOFILE, &raised) == 0) return raised.rlim_cur;
  }
  return lim.rlim_cur;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  kmt::cmd::OperatorFlags flags;
  kmt::cmd::FlagParse parsed = kmt::cmd::ParseOperatorFlags(args, &flags);
  if (parsed.exit_code >= 0) {
    (parsed.exit_code == 0 ? std::cout : std::cerr) << parsed.output << '\n';
    return parsed.exit_code;
  }

  // Before any other thread: two malloc arenas, large buffers mapped and unmapped
  // (base/heap.h). It asks for 50m of CPU (manifests/default): more arenas would only
  // keep more freed memory resident.
  const bool heap_tuned = kmt::base::TuneHeap(2);

  // Signals go to one thread only: block them before any other thread starts.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGUSR1);  // internal: wakes the signal thread at exit
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  kmt::base::RealClock clock;
  kmt::base::LogLevel level = kmt::base::LogLevel::kInfo;
  kmt::base::LogFormat format = kmt::base::LogFormat::kText;
  kmt::base::ParseLogLevel(flags.log_level, &level);
  kmt::base::ParseLogFormat(flags.log_format, &format);
  Logger log(clock, level, format);
  const rlim_t open_files = RaiseOpenFileLimit();
  log.Info("Set open file limit", {{"limit", std::to_string(open_files)}});
  if (!heap_tuned) log.Info("Left the allocator's settings as they are (no glibc mallopt)");

  // One client per kind of traffic, each with its own --kube-api-qps/--kube-api-burst
  // bucket and connections (see OperatorClients).
  std::unique_ptr<kmt::kube::RestClient> controller_client, webhook_client, events_client,
      election_client, metrics_client, access_client;
  try {
    kmt::kube::ClientConfig config = LoadConfig(flags);
    log.Info("Loaded API server configuration",
             {{"server", config.server}, {"source", config.source}});
    kmt::kube::TransportOptions transport;
    transport.qps = flags.kube_api_qps;
    transport.burst = flags.kube_api_burst;
    controller_client = std::make_unique<kmt::kube::RestClient>(config, transport);
    webhook_client = std::make_unique<kmt::kube::RestClient>(config, transport);
    events_client = std::make_unique<kmt::kube::RestClient>(config, transport);
    election_client = std::make_unique<kmt::kube::RestClient>(config, transport);
    // Admission reviews' SubjectAccessReviews: no client-side limit (see OperatorClients), and
    // a connection for each webhook worker, so none waits for another's.
    kmt::kube::TransportOptions access_transport = transport;
    access_transport.qps = 0;
    access_transport.max_connections = kmt::webhook::ServerOptions{}.workers;
    access_client = std::make_unique<kmt::kube::RestClient>(config, access_transport);
    // Scrapers' reviews: a small bucket of their own, so requests with made-up tokens on the
    // metrics port (each a TokenReview) can neither delay admission reviews nor load the API
    // server; a scraper costs one review per cache TTL.
    kmt::kube::TransportOptions metrics_transport = transport;
    metrics_transport.qps = 5;
    metrics_transport.burst = 10;
    metrics_transport.max_connections = 2;
    metrics_transport.read_timeout = std::chrono::milliseconds(10'000);
    metrics_client = std::make_unique<kmt::kube::RestClient>(std::move(config), metrics_transport);
  } catch (const std::exception& e) {
    log.Error("Failed to load the API server configuration", {{"error", e.what()}});
    return 1;
  }

  kmt::cmd::Operator op(flags,
                        {*controller_client, *webhook_client, *events_client, *election_client,
                         *metrics_client, *access_client},
                        log, kmt::cmd::DefaultIdentity());
  std::thread signal_thread([&] {
    int received = 0;
    for (;;) {
      int sig = 0;
      if (sigwait(&signals, &sig) != 0) continue;
      if (sig == SIGUSR1) return;
      if (++received > 1) {
        log.Error("Received a second signal, exiting now");
        std::_Exit(1);
      }
      log.Info("Received signal, stopping", {{"signal", sig == SIGTERM ? "SIGTERM" : "SIGINT"}});
      op.RequestStop();
    }
  });

  int code = 0;
  try {
    op.Start();
    code = op.Run();
  } catch (const std::exception& e) {
    log.Error("Failed to run", {{"error", e.what()}});
    code = 1;
  }
  pthread_kill(signal_thread.native_handle(), SIGUSR1);
  signal_thread.join();
  return code;
}
