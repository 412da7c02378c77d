// cmd/operator/operator.cc
#include "cmd/operator/operator.h"

#include <fmt/format.h>
#include <unistd.h>

#include <atomic>
#include <optional>
#include <random>
#include <stdexcept>
#include <string_view>
#include <thread>
#include <utility>

#include "base/clock.h"
#include "base/metrics.h"
#include "cmd/operator/component_logs.h"
#include "cmd/operator/metrics_auth.h"
#include "cmd/operator/probes.h"
#include "cmd/operator/webhook_metrics.h"
#include "controller/controller.h"
#include "controller/events.h"
#include "controller/informer_view.h"
#include "controller/leader_election.h"
#include "controller/operator_metrics.h"
#include "controller/policy_status.h"
#include "controller/waiting_metrics.h"
#include "webhook/access_review.h"
#include "webhook/certs/bootstrap.h"
#include "webhook/kube_cluster_view.h"
#include "webhook/routes.h"
#include "webhook/server.h"
#include "webhook/serving_cert.h"
#include "webhook/token_review.h"
#include "webhook/vmi_node_cache.h"

namespace kmt::cmd {

OperatorIdentity DefaultIdentity() {
  char host[256] = {0};
  if (gethostname(host, sizeof host - 1) != 0) host[0] = 0;
  std::random_device rd;
  uint64_t r = (static_cast<uint64_t>(rd()) << 32) ^ rd();
  OperatorIdentity id;
  id.id = fmt::format("{}_{:016x}", host[0] ? host : "operator", r);
  // In a pod, the service account's namespace file says where we run.
  if (FILE* f = std::fopen("/var/run/secrets/kubernetes.io/serviceaccount/namespace", "r")) {
    char buf[256] = {0};
    size_t n = std::fread(buf, 1, sizeof buf - 1, f);
    std::fclose(f);
    id.pod_namespace.assign(buf, n);
    while (!id.pod_namespace.empty() &&
           std::isspace(static_cast<unsigned char>(id.pod_namespace.back()))) {
      id.pod_namespace.pop_back();
    }
  }
  return id;
}

struct Operator::Impl {
  OperatorFlags flags;
  OperatorClients clients;
  base::Logger& log;
  OperatorIdentity identity;

  base::RealClock clock;           // queue timers, timestamps
  base::RealClock election_clock;  // lease attempts make blocking API calls: own thread
  base::Registry registry;
  controller::OperatorMetrics metrics{registry, "vmim"};
  controller::WaitingMetrics waiting{registry, flags.leader_election_id};
  // Objects in each cache, and bound pods whose labels the cache cut (api/names.h's
  // kBoundPodLabelBytes): what the replica's memory grows with.
  base::GaugeFamily& cached = registry.AddGauge(
      "kmt_cached_objects", "Objects in the operator's caches, by kind.", {"kind"});
  base::Gauge& cut_label_pods =
      registry
          .AddGauge("kmt_cached_bound_pods_labels_cut",
                    "Cached bound pods carrying more labels than the cache keeps per pod.")
          .WithLabels({});
  std::unique_ptr<controller::KubeEventRecorder> events;
  std::unique_ptr<controller::AsyncEventRecorder>
      async_events;  // what the controller records through
  std::unique_ptr<controller::InformerView> view;
  std::unique_ptr<controller::Controller> controller;
  std::unique_ptr<controller::PolicyStatusWriter> policy_status;  // the leader's, on policy_clock
  std::unique_ptr<controller::LeaderElector> elector;
  std::unique_ptr<webhook::SubjectAccessReviewer> access;
  std::unique_ptr<webhook::CachingAccessReviewer> access_cache;  // in front of `access`
  std::unique_ptr<webhook::KubeClusterView> cluster;
  // Where each VMI runs, for the placement warnings (on every replica serving the webhook).
  std::unique_ptr<webhook::VmiNodeCache> vmi_nodes;
  std::unique_ptr<WebhookMetrics> webhook_metrics;
  std::unique_ptr<webhook::AdmissionServer> webhook;
  std::unique_ptr<webhook::certs::CertBootstrap> certs;
  std::unique_ptr<ProbeServer> health;
  std::unique_ptr<ProbeServer> metrics_server;
  // --metrics-secure: the serving pair of the metrics port, and who may scrape it.
  std::unique_ptr<webhook::ServingCertificate> metrics_cert;
  std::unique_ptr<webhook::TokenReviewer> metrics_tokens;
  std::unique_ptr<webhook::CachingTokenAuthenticator> metrics_token_cache;
  std::unique_ptr<webhook::SubjectAccessReviewer> metrics_access;
  std::unique_ptr<webhook::CachingAccessReviewer> metrics_access_cache;
  std::optional<base::TimerId> metrics_cert_timer;  // guarded by mu
  std::string metrics_cert_failure;                 // the last failure logged (once each)
  std::thread starter;                              // waits for the caches, then starts the workers

  std::mutex mu;
  std::condition_variable cv;
  bool stop_requested = false;
  bool leadership_lost = false;
  std::atomic<bool> leading{false};
  std::atomic<bool> stopping{false};
  std::atomic<bool> draining{false};  // after SIGTERM, during --shutdown-delay
  std::optional<base::TimerId> cert_timer;
  // Certificate passes make blocking API calls too (up to the client's read timeout): a
  // thread of their own, so a slow certificate check never delays a Lease renewal. Last
  // member: destroyed (its thread joined) before anything a pass in flight touches.
  base::RealClock cert_clock;
  base::RealClock policy_clock;  // policy status passes LIST and PATCH: a thread of their own
  // The metrics certificate's reloads, their own thread too: destroyed before metrics_cert.
  base::RealClock metrics_cert_clock;

  Impl(OperatorFlags f, OperatorClients c, base::Logger& l, OperatorIdentity id)
      : flags(std::move(f)), clients(c), log(l), identity(std::move(id)) {}

  // What /readyz checks: the caches synced (controller), a certificate loaded (webhook).
  std::vector<HealthCheck> ReadinessChecks() const {
    std::vector<HealthCheck> checks;
    if (!flags.disable_controller) {
      checks.push_back({"informers-synced", [this] { return view->HasSynced(); }});
    }
    if (!flags.disable_webhook) {
      checks.push_back({"webhook-certificate", [this] { return webhook->Ready(); }});
    }
    if (flags.shutdown_delay_ms > 0) {
      // Fails from SIGTERM on, while the replica drains (--shutdown-delay).
      checks.push_back({"not-shutting-down", [this] { return !draining.load(); }});
    }
    return checks;
  }

  bool Ready() const {
    for (const HealthCheck& c : ReadinessChecks()) {
      if (!c.ok()) return false;
    }
    return true;
  }

  // /metrics: the gauges read from state at scrape time, then the page.
  HttpAnswer Metrics() {
    waiting.SetReady(Ready());
    if (view) {
      waiting.SetWaiting(controller::SummarizeWaiting(
          view->GatedTargetPodsSeenAt(), view->MigrationList(), clock.Now(), clock.WallNow()));
      const controller::InformerView::Sizes sizes = view->sizes();
      cached.WithLabels({"vmims"}).Set(static_cast<double>(sizes.vmims));
      cached.WithLabels({"targetPods"}).Set(static_cast<double>(sizes.target_pods));
      cached.WithLabels({"nodes"}).Set(static_cast<double>(sizes.nodes));
      cached.WithLabels({"boundPods"}).Set(static_cast<double>(sizes.bound_pods));
      cut_label_pods.Set(static_cast<double>(view->BoundPodsLabelsCut()));
    }
    if (vmi_nodes) cached.WithLabels({"vmis"}).Set(static_cast<double>(vmi_nodes->Size()));
    return AnswerMetrics(registry);
  }

  // Called from the election thread; Shutdown takes the thread under the same lock.
  void StartWorkersWhenSynced() {
    std::scoped_lock lock(mu);
    if (stopping.load() || starter.joinable()) return;
    starter = std::thread([this] {
      while (!stopping.load()) {
        if (view->WaitForSync(std::chrono::milliseconds(500))) {
          // Readiness first: the largest cache, the explainer's, only once the others are in
          // (until it has synced, plans that need it wait; gates are released at once).
          if (!stopping.load()) view->StartBoundPods();
          const controller::InformerView::Sizes sizes = view->sizes();
          log.Info("Synced caches", {{"vmims", std::to_string(sizes.vmims)},
                                     {"targetPods", std::to_string(sizes.target_pods)},
                                     {"nodes", std::to_string(sizes.nodes)},
                                     {"boundPods", std::to_string(sizes.bound_pods)}});
          if (!stopping.load()) {
            controller->Start();
            policy_status->Start();
          }
          return;
        }
      }
    });
  }

  void EnsureCerts() {
    try {
      auto r = certs->Ensure();
      if (r.secret_created || r.secret_renewed || r.files_written || r.webhooks_patched > 0) {
        log.Info("Ensured webhook certificate",
                 {{"secretCreated", r.secret_created ? "true" : "false"},
                  {"secretRenewed", r.secret_renewed ? "true" : "false"},
                  {"filesWritten", r.files_written ? "true" : "false"},
                  {"webhooksPatched", std::to_string(r.webhooks_patched)}});
        if (r.files_written && webhook && !stopping.load()) webhook->ReloadCertificate();
      }
      ScheduleCerts(std::chrono::hours(1));
    } catch (const std::exception& e) {
      log.Error("Failed to ensure webhook certificate", {{"error", e.what()}});
      ScheduleCerts(std::chrono::seconds(10));
    }
  }

  void ScheduleCerts(base::Duration d) {
    if (stopping.load()) return;
    std::scoped_lock lock(mu);
    cert_timer = cert_clock.RunAfter(d, [this] { EnsureCerts(); });
  }

  // The metrics server's certificate, checked every second as the webhook's is (a rotated
  // Secret, or the first pair written by the certificate bootstrap).
  void ReloadMetricsCert() {
    webhook::ReloadResult r = metrics_cert->Reload();
    if (r.outcome == webhook::ReloadOutcome::kLoaded) {
      metrics_cert_failure.clear();
      log.Info("Loaded metrics serving certificate", {{"certificate", r.message}});
    } else if (r.outcome == webhook::ReloadOutcome::kFailed && r.message != metrics_cert_failure) {
      metrics_cert_failure = r.message;
      log.Error("Failed to load metrics serving certificate", {{"error", r.message}});
    }
    std::scoped_lock lock(mu);
    if (stopping.load()) return;  // under mu: Shutdown cancels what was scheduled before
    metrics_cert_timer =
        metrics_cert_clock.RunAfter(std::chrono::seconds(1), [this] { ReloadMetricsCert(); });
  }

  // What the metrics port answers instead of the page, if anything (metrics_auth.h).
  std::optional<HttpAnswer> GateScrape(std::string_view method, std::string_view path,
                                       std::string_view authorization) {
    std::optional<ScrapeRefusal> refusal =
        AuthorizeScrape(authorization, method, path, *metrics_token_cache, *metrics_access_cache);
    if (!refusal) return std::nullopt;
    if (refusal->failure) {
      log.Error("Failed to check a scrape of /metrics",
                {{"status", std::to_string(refusal->status)},
                 {"user", refusal->user},
                 {"error", refusal->error}});
    } else {
      log.Debug("Refused a scrape of /metrics", {{"status", std::to_string(refusal->status)},
                                                 {"user", refusal->user},
                                                 {"reason", refusal->error}});
    }
    return HttpAnswer{refusal->status, "text/plain; charset=utf-8", std::move(refusal->body)};
  }

  // The probe server (/healthz, /readyz); liveness answers while the rest starts.
  void BuildHealth() {
    std::string host;
    int port;
    if (ParseBindAddress(flags.health_probe_bind_address, &host, &port)) {
      ProbeServerOptions ho;
      ho.log = ServerLog(log, "probes");
      health = std::make_unique<ProbeServer>(
          host, port,
          std::vector<ProbeServer::Route>{
              {"/healthz", [](bool v) { return AnswerChecks({}, v); }},
              {"/readyz", [this](bool v) { return AnswerChecks(ReadinessChecks(), v); }}},
          std::move(ho));
    }
  }

  // The metrics server; with --metrics-secure, TLS and a scrape gate (SecureMetrics).
  void BuildMetricsServer() {
    std::string host;
    int port;
    if (ParseBindAddress(flags.metrics_bind_address, &host, &port)) {
      ProbeServerOptions mo;
      if (flags.metrics_secure) mo = SecureMetrics();
      mo.log = ServerLog(log, "metrics");
      metrics_server = std::make_unique<ProbeServer>(
          host, port,
          std::vector<ProbeServer::Route>{{"/metrics", [this](bool) { return Metrics(); }}},
          std::move(mo));
    }
  }

  // --metrics-secure: the metrics port's serving pair and who may scrape it.
  ProbeServerOptions SecureMetrics() {
    ProbeServerOptions mo;
    const std::string dir =
        flags.metrics_cert_path.empty() ? flags.webhook_cert_dir : flags.metrics_cert_path;
    metrics_cert =
        std::make_unique<webhook::ServingCertificate>(dir + "/tls.crt", dir + "/tls.key");
    metrics_tokens = std::make_unique<webhook::TokenReviewer>(clients.metrics);
    webhook::TokenCacheOptions token_options;
    token_options.authenticated_ttl =
        std::chrono::milliseconds(flags.authorization_cache_authorized_ttl_ms);
    token_options.rejected_ttl =
        std::chrono::milliseconds(flags.authorization_cache_unauthorized_ttl_ms);
    metrics_token_cache =
        std::make_unique<webhook::CachingTokenAuthenticator>(*metrics_tokens, token_options, clock);
    metrics_access = std::make_unique<webhook::SubjectAccessReviewer>(clients.metrics);
    webhook::AccessCacheOptions access_options;
    access_options.allowed_ttl =
        std::chrono::milliseconds(flags.authorization_cache_authorized_ttl_ms);
    access_options.denied_ttl =
        std::chrono::milliseconds(flags.authorization_cache_unauthorized_ttl_ms);
    access_options.capacity = 1024;
    metrics_access_cache =
        std::make_unique<webhook::CachingAccessReviewer>(*metrics_access, access_options, clock);
    mo.configure_tls = [this](SSL_CTX* ctx) {
      return webhook::ConfigureServingTls(ctx, *metrics_cert);
    };
    mo.gate = [this](std::string_view method, std::string_view path,
                     std::string_view authorization) {
      return GateScrape(method, path, authorization);
    };
    return mo;
  }

  // The webhook side, on every replica: access reviews, the cluster view, the server.
  void BuildWebhook() {
    access = std::make_unique<webhook::SubjectAccessReviewer>(clients.access);
    webhook::AccessCacheOptions cache_options;
    cache_options.allowed_ttl =
        std::chrono::milliseconds(flags.authorization_cache_authorized_ttl_ms);
    cache_options.denied_ttl =
        std::chrono::milliseconds(flags.authorization_cache_unauthorized_ttl_ms);
    access_cache = std::make_unique<webhook::CachingAccessReviewer>(*access, cache_options, clock);
    cluster = std::make_unique<webhook::KubeClusterView>(clients.webhook);
    // The VMI's node from memory (a GET until the cache has synced, or on a miss): a review
    // with a term matching one node is then decided without waiting. Readiness does not wait
    // for it.
    webhook::VmiNodeCacheOptions vmi_options;
    vmi_options.on_error = WatchErrorLog(log);
    vmi_options.on_synced = [this](size_t vmis) {
      log.Info("Synced VMI cache", {{"vmis", std::to_string(vmis)}});
    };
    vmi_nodes = std::make_unique<webhook::VmiNodeCache>(clients.webhook, vmi_options);
    cluster->SetCachedVmiNodes([this](std::string_view ns, std::string_view name) {
      return vmi_nodes->NodeName(ns, name);
    });
    webhook::ServerOptions wo;
    wo.port = flags.webhook_port;
    wo.cert_file = flags.webhook_cert_dir + "/tls.crt";
    wo.key_file = flags.webhook_cert_dir + "/tls.key";
    wo.client_ca_file = flags.webhook_client_ca;
    webhook_metrics = std::make_unique<WebhookMetrics>(
        registry, std::vector<std::string>{std::string(webhook::kValidateVmimPath),
                                           std::string(webhook::kMutatePodPath)});
    wo.observer = webhook_metrics.get();
    wo.log = ServerLog(log, "webhook");
    webhook = std::make_unique<webhook::AdmissionServer>(
        wo, webhook::AdmissionRoutes(
                *access_cache, *cluster,
                {.check_kubevirt_added_node_selector = flags.check_kubevirt_added_node_selector,
                 .virt_api_username = flags.virt_api_username,
                 .trust_virt_api_added_node_selector = flags.trust_virt_api_added_node_selector,
                 .virt_controller_username = flags.virt_controller_username}));
    if (flags.webhook_cert_mode == "self") BuildCertBootstrap();
  }

  // --webhook-cert-mode=self: the certificates the operator makes and renews itself.
  void BuildCertBootstrap() {
    webhook::certs::BootstrapOptions bo;
    if (!identity.pod_namespace.empty()) bo.ns = identity.pod_namespace;
    bo.cert_dir = flags.webhook_cert_dir;
    if (!flags.webhook_cert_hosts.empty()) bo.hosts = flags.webhook_cert_hosts;
    certs = std::make_unique<webhook::certs::CertBootstrap>(clients.webhook, bo, clock);
  }

  // The leader side's objects: Events, the informer view, the controller, policy status.
  void BuildController() {
    events =
        std::make_unique<controller::KubeEventRecorder>(clients.events, clock, log, identity.id);
    async_events = std::make_unique<controller::AsyncEventRecorder>(*events, clock, log);
    controller::InformerViewOptions vo;
    vo.on_error = WatchErrorLog(log);
    // Standbys keep no bound pods (every running pod of the cluster, for the explainer: the
    // largest cache), and readiness never waits for them: the leader (every replica with
    // --leader-elect=false) lists them once it leads and its other caches have synced.
    vo.bound_pods_on_demand = true;
    view = std::make_unique<controller::InformerView>(clients.controller, clock, vo);
    // The webhook's placement warnings read the node cache instead of listing nodes.
    if (cluster) {
      cluster->SetCachedNodes([this] { return view->NodeList(); });
      // The mutator reads a target pod's VMIM from the informer; a miss (not synced yet,
      // or another VMIM of that name) is a GET.
      cluster->SetCachedMigrations([this](std::string_view ns, std::string_view name)
                                       -> std::optional<webhook::MigrationRef> {
        std::optional<api::MigrationInfo> m = view->Migration(std::string(ns), std::string(name));
        if (!m) return std::nullopt;
        return webhook::MigrationRefOf(*m);
      });
    }
    controller::ControllerOptions co;
    co.workers = flags.workers;
    co.fail_fast_unschedulable = flags.fail_fast_unschedulable;
    controller = std::make_unique<controller::Controller>(*view, clients.controller, clock, log,
                                                          metrics, *async_events, co);
    view->Connect(*controller);
    policy_status = std::make_unique<controller::PolicyStatusWriter>(
        clients.controller, policy_clock, log, [this] { return view->PolicyMigrations(); });
    view->OnPolicyMigration([this](const std::string&) { policy_status->Notify(); });
  }

  // Starts what serves on every replica, then the first certificate pass.
  void StartServing() {
    if (health) health->Start();
    if (metrics_cert) ReloadMetricsCert();  // then every second
    if (metrics_server) {
      metrics_server->Start();
      log.Info("Started metrics server", {{"port", std::to_string(metrics_server->port())},
                                          {"secure", flags.metrics_secure ? "true" : "false"}});
    }
    if (vmi_nodes) vmi_nodes->Start();
    if (webhook) {
      webhook->Start();
      log.Info("Started webhook", {{"port", std::to_string(webhook->port())}});
    }
    // The first pass too runs on the certificate thread: until it has written the files,
    // /readyz reports the webhook certificate missing.
    if (certs) ScheduleCerts(base::Duration::zero());
  }

  // Starts the caches, then the workers: when leading (--leader-elect) or at once.
  void StartLeaderSide() {
    view->Start();
    if (flags.leader_elect) {
      std::string ns = flags.leader_election_namespace.empty() ? identity.pod_namespace
                                                               : flags.leader_election_namespace;
      if (ns.empty()) {
        throw std::runtime_error(
            "leader election needs a namespace: not running in a pod, so pass "
            "--leader-election-namespace (or --leader-elect=false)");
      }
      controller::LeaderElectionConfig lc;
      lc.lease_namespace = ns;
      lc.lease_name = flags.leader_election_id;
      lc.identity = identity.id;
      lc.on_started_leading = [this] {
        leading = true;
        waiting.SetLeading(true);
        log.Info("Acquired lease",
                 {{"lease", flags.leader_election_id}, {"identity", identity.id}});
        StartWorkersWhenSynced();
      };
      lc.on_stopped_leading = [this] {
        leading = false;
        waiting.SetLeading(false);
        log.Error("Lost lease", {{"lease", flags.leader_election_id}});
        std::scoped_lock lock(mu);
        leadership_lost = true;
        cv.notify_all();
      };
      lc.on_new_leader = [this](const std::string& holder) {
        if (holder != identity.id) log.Info("Observed new leader", {{"holder", holder}});
      };
      lc.on_error = LeaseErrorLog(log, flags.leader_election_id);
      elector = std::make_unique<controller::LeaderElector>(clients.election, election_clock, lc);
      log.Info("Started leader election",
               {{"lease", ns + "/" + flags.leader_election_id}, {"identity", identity.id}});
      elector->Start();
    } else {
      leading = true;
      waiting.SetLeading(true);
      StartWorkersWhenSynced();
    }
  }

  void RequestStop() {
    std::scoped_lock lock(mu);
    stop_requested = true;
    cv.notify_all();
  }

  // Idempotent; the order matters: no new work, drain, release, close.
  void Shutdown() {
    if (stopping.exchange(true)) return;
    std::thread starting;
    {
      std::scoped_lock lock(mu);
      if (cert_timer) cert_clock.Cancel(*cert_timer);
      if (metrics_cert_timer) metrics_cert_clock.Cancel(*metrics_cert_timer);
      starting = std::move(starter);
    }
    if (starting.joinable()) starting.join();
    if (controller) controller->Stop();  // drain keys in progress
    if (policy_status) policy_status->Stop();
    if (async_events) async_events->Stop();  // their Events, for at most 5 s
    if (elector) elector->Stop();            // releases the lease when leading
    if (webhook) webhook->Stop();
    if (vmi_nodes) vmi_nodes->Stop();
    if (view) view->Stop();
    if (metrics_server) metrics_server->Stop();
    if (health) health->Stop();
  }

  ~Impl() { Shutdown(); }
};

Operator::Operator(const OperatorFlags& flags, OperatorClients clients, base::Logger& log,
                   OperatorIdentity identity)
    : impl_(std::make_unique<Impl>(flags, clients, log, std::move(identity))) {}

Operator::~Operator() = default;

void Operator::Start() {
  Impl& s = *impl_;
  s.BuildHealth();  // first: liveness must answer while the rest starts
  s.BuildMetricsServer();
  if (!s.flags.disable_webhook) s.BuildWebhook();
  if (!s.flags.disable_controller) s.BuildController();
  s.StartServing();
  if (!s.flags.disable_controller) s.StartLeaderSide();
}

void Operator::RequestStop() { impl_->RequestStop(); }

int Operator::Run() {
  Impl& s = *impl_;
  bool lost;
  {
    std::unique_lock<std::mutex> lock(s.mu);
    s.cv.wait(lock, [&s] { return s.stop_requested || s.leadership_lost; });
    lost = s.leadership_lost && !s.stop_requested;
  }
  if (!lost && s.flags.shutdown_delay_ms > 0) {
    // Still leading and serving meanwhile; only admission answers change (Connection: close).
    s.draining = true;
    if (s.webhook) s.webhook->Drain();
    s.log.Info("Draining before stopping",
               {{"delay", fmt::format("{}ms", s.flags.shutdown_delay_ms)}});
    std::unique_lock<std::mutex> lock(s.mu);
    s.clock.WaitFor(std::chrono::milliseconds(s.flags.shutdown_delay_ms), s.cv, lock,
                    [&s] { return s.leadership_lost; });
  }
  s.log.Info(lost ? "Stopping after losing the lease" : "Stopping");
  s.Shutdown();
  s.log.Info("Stopped");
  return lost ? 1 : 0;
}

bool Operator::Ready() const { return impl_->Ready(); }
bool Operator::Leading() const { return impl_->leading.load(); }
int Operator::health_port() const { return impl_->health ? impl_->health->port() : 0; }
int Operator::metrics_port() const {
  return impl_->metrics_server ? impl_->metrics_server->port() : 0;
}
int Operator::webhook_port() const { return impl_->webhook ? impl_->webhook->port() : 0; }

}  // namespace kmt::cmd
