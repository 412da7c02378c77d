#include "bench/webhook_fixture.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <mutex>

#include "base/poll.h"
#include "bench/admission_reviews.h"
#include "bench/kubevirt_objects.h"
#include "kube/resources.h"
#include "webhook/admission.h"

namespace kmt::bench {

FakeApi::FakeApi(int vmims, int nodes) {
  client_.SetCreateHandler(kube::kSubjectAccessReviews, [](const Json& sar) {
    const Json& spec = sar["spec"];
    const Json& a = spec["resourceAttributes"];
    const bool allowed = spec.value("user", "") == "admin" && a.value("verb", "") == "use" &&
                         a.value("group", "") == "migration-target.kubevirt.io" &&
                         a.value("resource", "") == "addednodeselectorterms";
    Json answer = sar;
    answer["status"] = {{"allowed", allowed}};
    return answer;
  });
  for (int i = 0; i < nodes; ++i) client_.Create(kube::kNodes, "", KwokNode(i));
  for (int i = 0; i < vmims; ++i) {
    vmims_.push_back(client_.Create(kube::kVirtualMachineInstanceMigrations, "vms",
                                    Vmim(i, "vms", NodeTerm(NodeName(i % std::max(nodes, 1))))));
    Json vmi = client_.Create(kube::kVirtualMachineInstances, "vms", Vmi(i, "vms"));
    vmi["status"] = {{"phase", "Running"}, {"nodeName", NodeName((i + 1) % std::max(nodes, 1))}};
    client_.Update(kube::kVirtualMachineInstances, "vms", vmi, "status");
  }
}

std::string VmimCreateReview(int i, const std::string& uid) {
  return VmimCreateReview(i, uid, "vms", NodeTerm(NodeName(i % 100)),
                          {"admin", {"system:masters", "system:authenticated"}});
}

std::string TargetPodCreateReview(int i, const Json& vmim, const std::string& uid) {
  return TargetPodCreateReview(i, vmim, uid, "vms", NodeName(i % 100));
}

MixedLoad::MixedLoad(const FakeApi& api, int count) {
  for (int i = 0; i < count; ++i) {
    vmim_bodies_.push_back(VmimCreateReview(i, fmt::format("req-vmim-{}", i)));
    pod_bodies_.push_back(
        TargetPodCreateReview(i, api.vmim(i % api.vmim_count()), fmt::format("req-pod-{}", i)));
  }
}

LoadRequest MixedLoad::operator()(uint64_t k) const {
  const size_t i = static_cast<size_t>(k / 2) % vmim_bodies_.size();
  if (k % 2 == 0) return {"/validate-vmim", vmim_bodies_[i]};
  return {"/mutate-pod", pod_bodies_[i]};
}

webhook::ServerOptions BenchServerOptions(const std::string& cert_file,
                                          const std::string& key_file) {
  webhook::ServerOptions o;
  o.address = "127.0.0.1";
  o.port = 0;
  o.cert_file = cert_file;
  o.key_file = key_file;
  o.log = [](const auto&) {};  // whatever record type the server logs
  return o;
}

std::vector<webhook::Route> ConstantRoutes() {
  auto allow = [](const webhook::AdmissionRequest&) { return webhook::Allowed(); };
  return {{"/validate-vmim", allow}, {"/mutate-pod", allow}};
}

struct AdmitTimer::State {
  std::mutex mu;
  std::vector<double> durations;
};

std::shared_ptr<AdmitTimer::State> AdmitTimer::MakeState() { return std::make_shared<State>(); }

std::vector<webhook::Route> AdmitTimer::Wrap(std::vector<webhook::Route> routes) {
  for (webhook::Route& r : routes) {
    r.admit = [state = state_, inner = std::move(r.admit)](const webhook::AdmissionRequest& req) {
      const base::Stopwatch start;
      webhook::AdmissionResponse resp = inner(req);
      const double d = start.ElapsedSeconds();
      std::scoped_lock lock(state->mu);
      state->durations.push_back(d);
      return resp;
    };
  }
  return routes;
}

std::vector<double> AdmitTimer::Take() {
  std::scoped_lock lock(state_->mu);
  std::vector<double> out;
  out.swap(state_->durations);
  return out;
}

std::optional<double> WebhookP99Budget(double rate) {
  if (rate == 3000) return 0.5e-3;
  if (rate == 5000) return 1e-3;
  return std::nullopt;
}

double CpuPer10k(const ServerRun& run) {
  const size_t answered = run.load.service_seconds.size();
  return answered == 0 ? 0 : run.cpu_seconds / static_cast<double>(answered) * 1e4;
}

std::vector<Row> WebhookRows(const WebhookPhase& p) {
  const Summary real = Summarize(p.real.load.service_seconds);
  const Summary floor = Summarize(p.floor.load.service_seconds);
  const Summary before = Summarize(p.before.load.service_seconds);
  const Summary real_resp = Summarize(p.real.load.response_seconds);
  const Summary floor_resp = Summarize(p.floor.load.response_seconds);
  const std::string at = fmt::format(" at {:.0f} req/s", p.rate);
  const std::optional<double> absolute = WebhookP99Budget(p.rate);
  const double p99_ratio = Ratio(real.p99, floor.p99);
  const bool p99_ok = real.count > 0 && floor.count > 0 && p99_ratio <= kFloorRatioBudget &&
                      (!absolute || real.p99 <= *absolute);
  const std::string p99_budget =
      (absolute ? "≤ " + FormatSeconds(*absolute) + ", " : std::string()) +
      fmt::format("≤ {:.1f}× floor", kFloorRatioBudget);
  const auto errors = [](const ServerRun& r) {
    return fmt::format("{} / {}", r.load.errors, r.load.sent);
  };
  const std::string httplib = "before (httplib server): ";
  return {
      {"p50" + at, FormatSeconds(real.p50), FormatSeconds(floor.p50),
       FormatRatio(Ratio(real.p50, floor.p50)), "", std::nullopt},
      {"p99" + at, FormatSeconds(real.p99), FormatSeconds(floor.p99), FormatRatio(p99_ratio),
       p99_budget, p99_ok},
      {"max" + at, FormatSeconds(real.max), FormatSeconds(floor.max),
       FormatRatio(Ratio(real.max, floor.max)), "", std::nullopt},
      {"p99 from due time (incl. waiting for a connection)" + at, FormatSeconds(real_resp.p99),
       FormatSeconds(floor_resp.p99), FormatRatio(Ratio(real_resp.p99, floor_resp.p99)), "",
       std::nullopt},
      {"server CPU per 10,000 reviews" + at, FormatSeconds(CpuPer10k(p.real)),
       FormatSeconds(CpuPer10k(p.floor)), FormatRatio(Ratio(CpuPer10k(p.real), CpuPer10k(p.floor))),
       "", std::nullopt},
      {"errors / sent" + at, errors(p.real), errors(p.floor), "", "0", p.real.load.errors == 0},
      {httplib + "p99" + at, FormatSeconds(before.p99), FormatSeconds(floor.p99),
       FormatRatio(Ratio(before.p99, floor.p99)), "", std::nullopt},
      {httplib + "server CPU per 10,000 reviews" + at, FormatSeconds(CpuPer10k(p.before)),
       FormatSeconds(CpuPer10k(p.floor)),
       FormatRatio(Ratio(CpuPer10k(p.before), CpuPer10k(p.floor))), "", std::nullopt},
      {httplib + "errors / sent" + at, errors(p.before), errors(p.floor), "", "", std::nullopt},
      {"admitter only p99 (in server, excl. TLS/HTTP; real / before)" + at,
       FormatSeconds(p.real.admit_p99), FormatSeconds(p.before.admit_p99), "", "", std::nullopt},
  };
}

}  // namespace kmt::bench
