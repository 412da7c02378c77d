// bench/webhook_fixture.h — what the webhook latency benchmark serves and sends.
//
// The measured stack is the operator's own: AdmissionServer (TLS, worker pool, shell) with
// AdmissionRoutes, whose SubjectAccessReviewer and KubeClusterView talk to a
// kube::FakeClient in the same process. The SubjectAccessReview is therefore in the
// measured path but answered in memory: the figures exclude the API server round trips
// (one SAR per VMIM review, a VMIM GET per target pod review, a node LIST and a VMI GET per
// VMIM review for the placement warnings, each answered from a cache where the operator has one).
//
// The floors (bench/webhook_benchmark.cc) are (a) a minimal Boost.Asio TLS server answering a
// constant review (bench/asio_tls_floor.h) and (b) the httplib server the operator had before
// the Boost.Asio one (bench/httplib_admission_server.h) serving the same routes.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "bench/admission_reviews.h"
#include "bench/kubevirt_objects.h"
#include "bench/load_generator.h"
#include "bench/report.h"
#include "bench/stats.h"
#include "kube/fake_client.h"
#include "webhook/server.h"

namespace kmt::bench {

// The in-memory API the routes read: `vmims` VMIMs "mig-<i>" with a node term in namespace
// "vms", their VMIs "vm-<i>" running on node (i + 1) % `nodes` (the placement warning reads
// where; not the node the term names, so no warning fires), `nodes` KWOK-like nodes, and a
// SubjectAccessReview answer that allows user "admin" to `use`
// addednodeselectorterms.migration-target.kubevirt.io.
class FakeApi {
 public:
  FakeApi(int vmims, int nodes);
  kube::FakeClient& client() { return client_; }
  const Json& vmim(int i) const { return vmims_[static_cast<size_t>(i)]; }
  int vmim_count() const { return static_cast<int>(vmims_.size()); }

 private:
  kube::FakeClient client_{kube::FakeClient::Options{.record_calls = false}};
  std::vector<Json> vmims_;  // as stored (with uid)
};

// AdmissionReview bodies as kube-apiserver sends them (bench/admission_reviews.h), in
// namespace "vms".
// VMIM CREATE by "admin" carrying a node term (→ /validate-vmim).
std::string VmimCreateReview(int i, const std::string& uid);
// Target pod CREATE by virt-controller for `vmim` (→ /mutate-pod).
std::string TargetPodCreateReview(int i, const Json& vmim, const std::string& uid);

// Request k of the mixed load: even k validate a VMIM, odd k mutate a target pod.
// Bodies are pre-rendered (`count` of each, cycled) so the client spends no time on JSON.
class MixedLoad {
 public:
  MixedLoad(const FakeApi& api, int count);
  LoadRequest operator()(uint64_t k) const;

 private:
  std::vector<std::string> vmim_bodies_, pod_bodies_;
};

// The operator's AdmissionServer options (only address, port 0 and the certificate set),
// with logging off.
webhook::ServerOptions BenchServerOptions(const std::string& cert_file,
                                          const std::string& key_file);

// Routes answering a constant "allowed" on both paths.
std::vector<webhook::Route> ConstantRoutes();

// Wraps each route's admitter to record its duration (the in-server part of the latency
// that excludes TLS and HTTP parsing). Thread-safe.
class AdmitTimer {
 public:
  std::vector<webhook::Route> Wrap(std::vector<webhook::Route> routes);
  std::vector<double> Take();  // the durations recorded since the last Take()

 private:
  struct State;
  std::shared_ptr<State> state_ = MakeState();
  static std::shared_ptr<State> MakeState();
};

// DESIGN.md §6: p99 ≤ 0.5 ms at 3,000 req/s and ≤ 1 ms at 5,000 req/s, no errors, and
// (the budget) p99 ≤ 1.3× floor (a) at every rate.
inline constexpr double kFloorRatioBudget = 1.3;
// The absolute p99 budget at `rate`, or nullopt where DESIGN.md sets none.
std::optional<double> WebhookP99Budget(double rate);

// One server's run at one rate.
struct ServerRun {
  LoadResult load;
  double cpu_seconds = 0;  // the server's process over the run (ServerProcess::Snapshot)
  size_t admit_count = 0;  // admitter runs (AdmitTimer) over the run
  double admit_p99 = 0;
};

// Server CPU seconds per 10,000 answered reviews; 0 when none was answered.
double CpuPer10k(const ServerRun& run);

struct WebhookPhase {
  double rate = 0;
  ServerRun real;    // the operator's webhook::AdmissionServer with AdmissionRoutes
  ServerRun floor;   // (a) bench::AsioTlsFloor: a constant answer
  ServerRun before;  // (b) bench::HttplibAdmissionServer with AdmissionRoutes
};

// Rows of one rate: client-measured p50/p99/max of the real stack against floor (a), p99
// from the due time, server CPU per 10,000 reviews, errors; then the httplib server's p99,
// CPU and errors against the same floor; then the admitters' own p99. The p99 row carries
// the budget (≤ 1.3× floor (a), and the absolute one at 3,000 and 5,000 req/s), the errors
// row "0".
std::vector<Row> WebhookRows(const WebhookPhase& phase);

}  // namespace kmt::bench
