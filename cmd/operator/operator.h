// cmd/operator/operator.h — the operator process minus main(): everything the
// binary runs, wired together over its API clients.
//
//   every replica: /healthz, /readyz, /metrics (HTTPS for authenticated and authorized
//                  scrapers, the webhook's certificate, reloaded as it rotates; plain with
//                  --metrics-secure=false); the admission webhook (unless
//                  --disable-webhook); the informer caches (warm standby, so a
//                  new leader starts at once); with --webhook-cert-mode=self
//                  the certificate bootstrap (now and every hour, on a thread of its
//                  own: its API calls never delay a Lease renewal);
//   the leader:    the reconcile workers (--leader-elect; without it, at once).
//
// /readyz is ready when the VMIM, target-pod and node caches are synced (if the
// controller runs) and the webhook has a certificate loaded (if it runs). The
// bound-pod cache (every running pod, the explainer's) is the leader's alone and
// no part of readiness: it is listed once the leader's other caches have synced.
//
// Stop (SIGTERM): workers drain, the lease is released, the webhook and
// servers stop; exit code 0. Losing leadership ends the process with exit
// code 1, as controller-runtime's manager does (a restart re-joins the
// election with empty state, which is safe because the loop is level-based).
#pragma once

#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>

#include "base/log.h"
#include "cmd/operator/flags.h"
#include "kube/client.h"

namespace kmt::cmd {

struct OperatorIdentity {
  std::string id;             // unique per process: "<hostname>_<random hex>"
  std::string pod_namespace;  // the namespace we run in ("" out of cluster)
};

// "<hostname>_<16 random hex digits>", as client-go's leader election ids.
OperatorIdentity DefaultIdentity();

// The API clients, one per kind of traffic. main() gives each its own connections and
// client-side rate limiter (as controller-runtime builds separate clients for leader election
// and events), so a burst of reconciles never delays an admission review or a lease renewal.
// The admission reviews' SubjectAccessReviews have no client-side limit at all: each answers
// a request the API server itself is waiting on (kube-apiserver's API Priority and Fairness
// already decided to admit that request, and protects itself from the reviews in turn), at
// most one per webhook worker is in flight, and a token bucket would only turn a burst of
// admissions into queueing inside the webhook's timeout. Tests may pass one client for all.
struct OperatorClients {
  kube::KubeClient& controller;  // informers, pod patches and deletions, VMIM status
  kube::KubeClient& webhook;     // the webhook's reads (VMIMs, VMIs, policies), certificates
  kube::KubeClient& events;      // Events
  kube::KubeClient& election;    // the Lease
  kube::KubeClient& metrics;     // TokenReviews and SubjectAccessReviews of scrapers
  kube::KubeClient& access;      // SubjectAccessReviews of admission reviews (no QPS limit)
};

class Operator {
 public:
  Operator(const OperatorFlags& flags, OperatorClients clients, base::Logger& log,
           OperatorIdentity identity);
  Operator(const OperatorFlags& flags, kube::KubeClient& client, base::Logger& log,
           OperatorIdentity identity)
      : Operator(flags, OperatorClients{client, client, client, client, client, client}, log,
                 std::move(identity)) {}
  ~Operator();

  // Starts everything; throws std::runtime_error with a clear message when a
  // listener cannot bind or the configuration is unusable.
  void Start();
  // Blocks until RequestStop() or a lost leadership; shuts down; returns the
  // exit code (0 stopped, 1 leadership lost).
  int Run();
  // Thread-safe; called from the signal thread.
  void RequestStop();

  // For tests: readiness as /readyz reports it.
  bool Ready() const;
  bool Leading() const;
  int health_port() const;
  int metrics_port() const;
  int webhook_port() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace kmt::cmd
