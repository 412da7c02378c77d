// controller/leader_election.cc
#include "controller/leader_election.h"

#include <random>

#include "base/json.h"
#include "kube/error.h"
#include "kube/resources.h"

namespace kmt::controller {

namespace {

base::Duration DefaultJitter(base::Duration retry) {
  // wait.JitterUntil(retry, 1.2): a uniform extra delay in [0, 1.2 x retry).
  thread_local std::mt19937_64 rng{std::random_device{}()};
  std::uniform_real_distribution<double> dist(0.0, 1.2);
  return std::chrono::duration_cast<base::Duration>(retry * dist(rng));
}

}  // namespace

LeaseRecord LeaseRecord::FromLease(const nlohmann::json& lease) {
  LeaseRecord r;
  const auto found = base::Object(lease, "spec");
  if (!found) return r;
  const nlohmann::json& spec = **found;
  r.holder_identity = base::StringAt(spec, "holderIdentity");
  r.lease_duration_seconds = base::Int(spec, "leaseDurationSeconds").value_or(0);
  r.acquire_time = base::StringAt(spec, "acquireTime");
  r.renew_time = base::StringAt(spec, "renewTime");
  r.lease_transitions = base::Int(spec, "leaseTransitions").value_or(0);
  return r;
}

nlohmann::json LeaseRecord::ToSpec() const {
  return {{"holderIdentity", holder_identity},
          {"leaseDurationSeconds", lease_duration_seconds},
          {"acquireTime", acquire_time},
          {"renewTime", renew_time},
          {"leaseTransitions", lease_transitions}};
}

LeaderElector::LeaderElector(kube::KubeClient& client, base::Clock& clock,
                             LeaderElectionConfig config)
    : client_(client), clock_(clock), config_(std::move(config)) {
  if (!config_.jitter) config_.jitter = DefaultJitter;
}

LeaderElector::~LeaderElector() {
  std::scoped_lock lock(mu_);
  state_ = State::kStopped;
  if (timer_) clock_.Cancel(*timer_);
}

void LeaderElector::Start() {
  std::scoped_lock lock(mu_);
  if (state_ != State::kIdle) return;
  state_ = State::kAcquiring;
  timer_ = clock_.RunAfter(base::Duration::zero(), [this] { Tick(); });
}

void LeaderElector::Schedule(base::Duration d) {
  std::scoped_lock lock(mu_);
  if (state_ == State::kStopped) return;
  timer_ = clock_.RunAfter(d, [this] { Tick(); });
}

bool LeaderElector::IsLeader() const {
  std::scoped_lock lock(mu_);
  return state_ == State::kLeading;
}

std::string LeaderElector::ObservedHolder() const {
  std::scoped_lock lock(mu_);
  return observed_ ? observed_->holder_identity : std::string();
}

void LeaderElector::Observe(const LeaseRecord& record) {
  std::string changed_to;
  {
    std::scoped_lock lock(mu_);
    observed_ = record;
    observed_time_ = clock_.Now();
    if (record.holder_identity != reported_holder_) {
      reported_holder_ = record.holder_identity;
      changed_to = record.holder_identity;
    }
  }
  if (!changed_to.empty() && config_.on_new_leader) config_.on_new_leader(changed_to);
}

void LeaderElector::Report(const char* what, const kube::KubeError& e) const {
  if (e.kind() == kube::ErrorKind::kConflict || !config_.on_error) return;
  config_.on_error(what, e.what());
}

bool LeaderElector::TryAcquireOrRenew() {
  const std::string now = base::FormatMicroTime(clock_.WallNow());
  LeaseRecord desired{
      config_.identity,
      std::chrono::duration_cast<std::chrono::seconds>(config_.lease_duration).count(), now, now,
      0};
  nlohmann::json lease;
  try {
    lease = client_.Get(kube::kLeases, config_.lease_namespace, config_.lease_name);
  } catch (const kube::KubeError& e) {
    if (e.kind() != kube::ErrorKind::kNotFound) {
      Report("get lease", e);
      return false;
    }
    nlohmann::json fresh = {
        {"apiVersion", "coordination.k8s.io/v1"},
        {"kind", "Lease"},
        {"metadata", {{"name", config_.lease_name}, {"namespace", config_.lease_namespace}}},
        {"spec", desired.ToSpec()}};
    try {
      client_.Create(kube::kLeases, config_.lease_namespace, fresh);
    } catch (const kube::KubeError& e) {
      Report("create lease", e);  // someone else created it first (409) or the API is down
      return false;
    }
    Observe(desired);
    return true;
  }

  LeaseRecord old = LeaseRecord::FromLease(lease);
  bool changed;
  {
    std::scoped_lock lock(mu_);
    changed = !observed_ || !(*observed_ == old);
  }
  if (changed) Observe(old);

  const bool we_hold = old.holder_identity == config_.identity;
  if (!old.holder_identity.empty() && !we_hold) {
    std::scoped_lock lock(mu_);
    if (observed_time_ + std::chrono::seconds(old.lease_duration_seconds) > clock_.Now()) {
      return false;  // held by another candidate, not expired on our clock
    }
  }
  if (we_hold) {
    desired.acquire_time = old.acquire_time;
    desired.lease_transitions = old.lease_transitions;
  } else {
    desired.lease_transitions = old.lease_transitions + 1;
  }
  lease["spec"] = desired.ToSpec();  // metadata.resourceVersion makes the PUT a compare-and-swap
  try {
    client_.Update(kube::kLeases, config_.lease_namespace, lease);
  } catch (const kube::KubeError& e) {
    Report("update lease", e);
    return false;
  }
  Observe(desired);
  return true;
}

void LeaderElector::Tick() {
  State state;
  {
    std::scoped_lock lock(mu_);
    timer_.reset();
    state = state_;
  }
  if (state == State::kAcquiring) {
    if (!TryAcquireOrRenew()) {
      Schedule(config_.retry_period + config_.jitter(config_.retry_period));
      return;
    }
    {
      std::scoped_lock lock(mu_);
      if (state_ != State::kAcquiring) return;  // stopped meanwhile
      state_ = State::kLeading;
      renew_round_start_ = clock_.Now() + config_.retry_period;
    }
    if (config_.on_started_leading) config_.on_started_leading();
    Schedule(config_.retry_period);
    return;
  }
  if (state != State::kLeading) return;
  {
    std::scoped_lock lock(mu_);
    if (clock_.Now() - renew_round_start_ >= config_.renew_deadline) {
      // No renewal within the deadline: stop before anyone may take over.
      state_ = State::kStopped;
    }
  }
  if (!IsLeader()) {
    if (config_.on_stopped_leading) config_.on_stopped_leading();
    return;
  }
  if (TryAcquireOrRenew()) {
    std::scoped_lock lock(mu_);
    renew_round_start_ = clock_.Now() + config_.retry_period;
  }
  Schedule(config_.retry_period);
}

bool LeaderElector::Release() {
  std::optional<LeaseRecord> observed;
  {
    std::scoped_lock lock(mu_);
    observed = observed_;
  }
  if (!observed || observed->holder_identity != config_.identity) return true;
  nlohmann::json lease;
  try {
    lease = client_.Get(kube::kLeases, config_.lease_namespace, config_.lease_name);
  } catch (const kube::KubeError& e) {
    Report("get lease to release it", e);
    return false;
  }
  if (LeaseRecord::FromLease(lease).holder_identity != config_.identity) return true;
  const std::string now = base::FormatMicroTime(clock_.WallNow());
  LeaseRecord released{"", 1, now, now, observed->lease_transitions};
  lease["spec"] = released.ToSpec();
  try {
    client_.Update(kube::kLeases, config_.lease_namespace, lease);
  } catch (const kube::KubeError& e) {
    Report("release lease", e);
    return false;
  }
  Observe(released);
  return true;
}

void LeaderElector::Stop() {
  bool was_leading;
  {
    std::scoped_lock lock(mu_);
    if (state_ == State::kStopped && !timer_) return;
    was_leading = state_ == State::kLeading;
    state_ = State::kStopped;
    if (timer_) clock_.Cancel(*timer_);
    timer_.reset();
  }
  if (was_leading && config_.release_on_cancel) Release();
}

}  // namespace kmt::controller
