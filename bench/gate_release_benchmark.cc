// Gate release latency on the real control plane against a floor measured in the same run
// (DESIGN.md §6: p99 ≤ 2 × the floor at 200 concurrent migrations).
//
// For each N: N VMIs (virt-api refuses a VMIM whose VMI does not exist), N VMIMs with a
// node term, then N gated virt-launcher target pods created at once (as the mutating
// webhook leaves them); per pod, the time from its create call returning to a watch seeing
// the gate gone with the term ANDed into its affinity. Only the pods are timed.
//   operator: //cmd/operator:operator out of cluster (--disable-webhook, no leader election,
//             its default client QPS and workers) does the release;
//   floor:    a minimal client in this process: one watch on the namespace's pods and, per
//             gated pod seen, one guarded JSON Patch (api::AndTermIntoPod: the AND + the gate
//             removal) from as many threads as the operator has workers (its --workers as
//             the operator parses the flags it is given), no QPS limit.
// The two never run at once. Needs a cluster without anything else acting on VMIs and
// VMIMs (bench/run.sh stops virt-controller, which would start the VMIs, render target pods
// of its own and fail the VMIMs of VMIs that are not running).
//
//   gate_release_benchmark --kubeconfig=K --operator=bazel-bin/cmd/operator/operator
//       [--sizes=1,50,200] [--rounds=5] [--report=FILE] [--log-dir=DIR (created)] [--timeout=120]
//       [--port-base=30780 (the operator's metrics port; health is the next one)]
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <httplib.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <deque>
#include <functional>
#include <mutex>
#include <set>
#include <thread>

#include "api/added_term.h"
#include "api/names.h"
#include "api/term_and.h"
#include "bench/cluster_ops.h"
#include "bench/gate_tracker.h"
#include "bench/kubevirt_objects.h"
#include "bench/operator_process.h"
#include "cmd/operator/flags.h"
#include "kube/error.h"
#include "kube/resources.h"

namespace kmt::bench {
namespace {

using Clock = std::chrono::steady_clock;
constexpr const char* kTermNode = "node-a";  // an e2e fake node

api::NodeSelectorTerm TheTerm() {
  api::AddedTermParse p = api::ParseAddedTerm(NodeTerm(kTermNode));
  if (!p.term) throw std::runtime_error("bad benchmark term");
  return *p.term;
}

// The floor: patch every gated pod the watch shows, once, from `workers` threads.
class FloorReleaser {
 public:
  FloorReleaser(kube::KubeClient& client, std::string ns, api::NodeSelectorTerm term, int workers)
      : client_(client), ns_(std::move(ns)), term_(std::move(term)) {
    for (int i = 0; i < workers; ++i) threads_.emplace_back([this] { Work(); });
  }
  ~FloorReleaser() {
    {
      std::scoped_lock lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    for (auto& t : threads_) t.join();
  }
  void OnPod(const Json& pod) {
    if (Released(pod, term_)) return;
    std::scoped_lock lock(mu_);
    if (!seen_.insert(pod["metadata"].value("name", "")).second) return;
    queue_.push_back(pod);
    cv_.notify_one();
  }
  int failures() const { return failures_.load(); }

 private:
  void Work() {
    for (;;) {
      Json pod;
      {
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait(lock, [this] { return stop_ || !queue_.empty(); });
        if (stop_) return;
        pod = std::move(queue_.front());
        queue_.pop_front();
      }
      const std::string name = pod["metadata"].value("name", "");
      for (int attempt = 0; attempt < 5; ++attempt) {
        try {
          std::vector<Json> ops = api::AndTermIntoPod(pod, term_, api::kSchedulingGate);
          if (ops.empty()) break;
          client_.Patch(kube::kPods, ns_, name, kube::PatchType::kJsonPatch, Json(ops));
          break;
        } catch (const kube::KubeError& e) {
          if (e.kind() != kube::ErrorKind::kConflict) {
            ++failures_;
            break;
          }
          pod = client_.Get(kube::kPods, ns_, name);  // a guard failed: re-read
        }
      }
    }
  }

  kube::KubeClient& client_;
  const std::string ns_;
  const api::NodeSelectorTerm term_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Json> queue_;
  std::set<std::string> seen_;
  bool stop_ = false;
  std::atomic<int> failures_{0};
  std::vector<std::thread> threads_;
};

// Watches the namespace's target pods until cancelled, handing each object to `fn`.
class PodWatch {
 public:
  PodWatch(kube::KubeClient& client, const std::string& ns, std::function<void(const Json&)> fn) {
    kube::ListOptions lo;
    lo.label_selector = "kubevirt.io=virt-launcher";
    Json list = client.List(kube::kPods, ns, lo);
    kube::WatchOptions wo;
    wo.label_selector = "kubevirt.io=virt-launcher";
    wo.resource_version = list["metadata"].value("resourceVersion", "");
    stream_ = client.Watch(kube::kPods, ns, wo);
    thread_ = std::thread([this, fn = std::move(fn)] {
      try {
        while (auto ev = stream_->Next()) {
          if (ev->type == "ADDED" || ev->type == "MODIFIED") fn(ev->object);
        }
      } catch (const std::exception& e) {
        if (!cancelled_) std::fprintf(stderr, "watch ended: %s\n", e.what());
      }
    });
  }
  ~PodWatch() {
    cancelled_ = true;
    stream_->Cancel();
    thread_.join();
  }

 private:
  std::unique_ptr<kube::WatchStream> stream_;
  std::atomic<bool> cancelled_{false};
  std::thread thread_;
};

GateRun RunOnce(kube::KubeClient& client, const std::string& kubeconfig, const std::string& mode,
                size_t n, int round, int floor_threads, std::chrono::seconds timeout,
                const std::function<void()>& after_release = {}) {
  const std::string ns = fmt::format("bench-gate-{}-{}-{}-{}", mode, n, round, getpid());
  EnsureNamespace(client, ns);
  const api::NodeSelectorTerm term = TheTerm();
  ParallelFor(n, 16, [&](size_t i) {
    client.Create(kube::kVirtualMachineInstances, ns, Vmi(static_cast<int>(i), ns));
  });
  std::vector<Json> vmims(n);
  ParallelFor(n, 16, [&](size_t i) {
    vmims[i] = client.Create(kube::kVirtualMachineInstanceMigrations, ns,
                             Vmim(static_cast<int>(i), ns, NodeTerm(kTermNode)));
  });
  GateTracker tracker(term, n);
  std::unique_ptr<kube::KubeClient> floor_client;
  std::unique_ptr<FloorReleaser> releaser;
  std::unique_ptr<PodWatch> floor_watch;
  if (mode == "floor") {
    floor_client = MakeUnthrottledClient(kubeconfig);
    releaser = std::make_unique<FloorReleaser>(*floor_client, ns, term, floor_threads);
    floor_watch = std::make_unique<PodWatch>(*floor_client, ns,
                                             [&](const Json& pod) { releaser->OnPod(pod); });
  }
  PodWatch measure(client, ns, [&](const Json& pod) { tracker.Observe(pod, Clock::now()); });
  // Every pod at once: one creating thread per pod, up to 64.
  ParallelFor(n, std::min<size_t>(n, 64), [&](size_t i) {
    const Json& v = vmims[i];
    Json pod = TargetPod(static_cast<int>(i), ns, v["metadata"]["name"], v["metadata"]["uid"],
                         "node-b", /*gated=*/true);
    Json created = client.Create(kube::kPods, ns, pod);
    tracker.Created(created["metadata"]["name"], Clock::now());
  });
  const bool done = tracker.WaitDone(Clock::now() + timeout);
  if (!done) {
    std::fprintf(stderr, "%s N=%zu: only %zu of %zu pods released within %llds\n", mode.c_str(), n,
                 tracker.released(), n, static_cast<long long>(timeout.count()));
  }
  floor_watch.reset();
  releaser.reset();
  if (after_release) after_release();  // before the deletion's work
  GateRun run;
  run.n = n;
  run.latency = Summarize(tracker.Latencies());
  run.throughput = tracker.Throughput();
  run.released = tracker.released();
  const auto [creating, tail] = tracker.Spans();
  std::fprintf(stderr, "%s N=%zu: created over %.0f ms, last release %.0f ms after the last\n",
               mode.c_str(), n, creating * 1e3, tail * 1e3);
  DeleteNamespace(client, ns);
  // The namespace controller deletes the pods, VMIMs and VMIs: not during the next run.
  WaitNamespaceGone(client, ns, std::chrono::seconds(180));
  return run;
}

// How the figures were taken from the rounds, for the table's note.
std::string RoundsText(int rounds) {
  if (rounds == 1) return "One round: the operator at every size, then the floor.";
  return fmt::format(
      "{} rounds, interleaved (the operator at every size with a fresh process, then the floor "
      "at every size, and again), so that a change of the machine's load moves both sides: each "
      "figure is the median of its rounds, released the least of them, the ratios those of the "
      "medians; the row per round gives each round's own p99 and throughput ratios.",
      rounds);
}

// How the operator was tuned in this run, for the table's note.
std::string OperatorFlagsText(const std::vector<std::string>& extra) {
  std::string text = "the default --workers, --kube-api-qps and --kube-api-burst";
  if (!extra.empty()) text += " and " + fmt::format("{}", fmt::join(extra, " "));
  return text;
}

int Main(int argc, char** argv) {
  std::string kubeconfig, operator_bin, report, log_dir = "/tmp";
  std::vector<size_t> sizes = {1, 50, 200};
  int timeout = 120;
  int port_base = 30780;
  int rounds = 5;
  std::vector<std::string> operator_args;  // --operator-arg=FLAG, repeatable: tuning trials
  CLI::App app{"Gate release latency of the operator against a floor", "gate_release_benchmark"};
  app.add_option("--kubeconfig", kubeconfig, "The cluster's admin kubeconfig")->required();
  app.add_option("--operator", operator_bin, "The operator binary")->required();
  app.add_option("--report", report, "Write the result table to this file");
  app.add_option("--log-dir", log_dir, "Where the operator's log goes")->capture_default_str();
  app.add_option("--operator-arg", operator_args,
                 "A flag passed to the operator (repeatable): tuning trials")
      ->allow_extra_args(false);
  app.add_option("--timeout", timeout, "Seconds a run may take")->capture_default_str();
  app.add_option("--port-base", port_base, "The operator's metrics port (health: the next one)")
      ->capture_default_str();
  app.add_option("--rounds", rounds,
                 "Rounds, each every size with a fresh operator and then with the floor; the "
                 "table gives the medians")
      ->check(CLI::Range(1, 20))
      ->capture_default_str();
  app.add_option("--sizes", sizes, "Migrations per run, comma-separated (default 1,50,200)")
      ->delimiter(',')
      ->allow_extra_args(false);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  const int metrics_port = port_base, health_port = port_base + 1;
  CheckListenPorts(metrics_port, health_port);
  EnsureLogDir(log_dir);
  auto client = MakeUnthrottledClient(kubeconfig);
  // Per size, one run per round of each side.
  std::vector<std::vector<GateRun>> op_runs(sizes.size()), floor_runs(sizes.size());
  std::vector<OperatorWork> op_work(sizes.size());   // summed over the rounds
  std::vector<size_t> op_released(sizes.size(), 0);  // the same
  // The operator's own figures (work queue, reconciles) from its /metrics.
  auto scrape = [metrics_port] {
    httplib::Client cli("127.0.0.1", metrics_port);
    cli.set_read_timeout(10, 0);
    httplib::Result res = cli.Get("/metrics");
    if (!res || res->status != 200) {
      throw std::runtime_error(
          fmt::format("cannot scrape the operator's /metrics on port {}: {}", metrics_port,
                      res ? std::to_string(res->status) : httplib::to_string(res.error())));
    }
    return OperatorWorkOf(res->body);
  };
  std::vector<std::string> args = {
      "--kubeconfig=" + kubeconfig,
      "--leader-elect=false",
      "--disable-webhook",
      fmt::format("--health-probe-bind-address=127.0.0.1:{}", health_port),
      fmt::format("--metrics-bind-address=127.0.0.1:{}", metrics_port),
      "--metrics-secure=false"};
  args.insert(args.end(), operator_args.begin(), operator_args.end());
  // The floor patches from as many threads as the operator reconciles with.
  cmd::OperatorFlags parsed;
  if (cmd::FlagParse p = cmd::ParseOperatorFlags(args, &parsed); p.exit_code >= 0) {
    std::fprintf(stderr, "the operator would refuse these flags: %s\n", p.output.c_str());
    return 2;
  }
  const int floor_threads = parsed.workers;
  // Round after round: every size with a fresh operator, then every size with the floor (the
  // two never run at once: both would release the same pods).
  for (int round = 1; round <= rounds; ++round) {
    {
      const std::string log = fmt::format("{}/gate-release-operator-{}.log", log_dir, round);
      OperatorProcess op(operator_bin, args, log);
      if (!op.WaitReady(health_port, std::chrono::seconds(60))) {
        std::fprintf(stderr, "the operator did not become ready; see %s\n", log.c_str());
        return 1;
      }
      for (size_t i = 0; i < sizes.size(); ++i) {
        const OperatorWork before = scrape();
        op_runs[i].push_back(RunOnce(*client, kubeconfig, "operator", sizes[i], round,
                                     floor_threads, std::chrono::seconds(timeout)));
        op_work[i] = op_work[i] + (scrape() - before);
        op_released[i] += op_runs[i].back().released;
        std::fprintf(stderr, "round %d, operator N=%zu: p99 %s\n", round, sizes[i],
                     FormatSeconds(op_runs[i].back().latency.p99).c_str());
      }
    }
    for (size_t i = 0; i < sizes.size(); ++i) {
      floor_runs[i].push_back(RunOnce(*client, kubeconfig, "floor", sizes[i], round, floor_threads,
                                      std::chrono::seconds(timeout)));
      std::fprintf(stderr, "round %d, floor N=%zu: p99 %s\n", round, sizes[i],
                   FormatSeconds(floor_runs[i].back().latency.p99).c_str());
    }
  }
  std::vector<Row> rows;
  bool ok = true;
  for (size_t i = 0; i < sizes.size(); ++i) {
    const GateRun op = MedianRun(op_runs[i]), floor = MedianRun(floor_runs[i]);
    for (Row& r : GateRows(op, floor)) rows.push_back(std::move(r));
    for (Row& r : RoundRows(op_runs[i], floor_runs[i])) rows.push_back(std::move(r));
    for (Row& r : WorkRows(sizes[i], op_released[i], op_work[i])) rows.push_back(std::move(r));
    ok = ok && op.released == sizes[i] && floor.released == sizes[i];
  }
  const std::string table = MarkdownTable(
      "Gate release latency (real control plane)", rows,
      {"Per target pod: create call returned → a watch sees the gate gone and the term ANDed "
       "into its required node affinity. N VMIs and N VMIMs with a node term (both through "
       "KubeVirt's virt-api webhooks, not timed), then N gated virt-launcher target pods "
       "created at once (64 creating threads at most), fresh namespace per run, deleted and "
       "gone before the next run starts. " +
           RoundsText(rounds) +
           " "
           "Operator: //cmd/operator:operator out of cluster, --disable-webhook, "
           "--leader-elect=false, " +
           OperatorFlagsText(operator_args) +
           fmt::format(". Floor: one watch and one guarded JSON Patch per gated pod "
                       "(api::AndTermIntoPod) from {} patching threads (the operator's workers), "
                       "no client QPS limit; same cluster, run after the operator stopped. ",
                       floor_threads) +
           "Throughput ratio = floor ÷ operator. virt-controller is stopped during this benchmark "
           "(it would start the VMIs, render target pods of its own and fail the VMIMs of VMIs "
           "that are not running; the operator leaves final VMIMs alone), so the VMIs stay "
           "Pending.",
       "\"operator:\" rows: where the operator's time went, from its /metrics scraped before "
       "and after each run: reconciles per released pod (controller_runtime_reconcile_total), "
       "the mean wait from a key's add to a worker picking it up "
       "(workqueue_queue_duration_seconds), the mean reconcile "
       "(workqueue_work_duration_seconds: observe, plan, the gate PATCH, the conditions read "
       "and write), and work-queue retries, over every round together. Budgets: p99 ≤ 1.3× floor "
       "at N = 200 (DESIGN.md "
       "§6), ≤ 1.2× at N = 50, throughput within 10 % of the floor's at both (issue 41)."});
  std::printf("\n%s", table.c_str());
  AppendToFile(report, table);
  return ok ? 0 : 1;
}

}  // namespace
}  // namespace kmt::bench

int main(int argc, char** argv) {
  try {
    return kmt::bench::Main(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gate_release_benchmark: %s\n", e.what());
    return 1;
  }
}
