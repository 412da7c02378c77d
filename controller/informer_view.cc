// controller/informer_view.cc
#include "controller/informer_view.h"

#include <algorithm>

#include "api/names.h"
#include "base/json.h"
#include "controller/reconcile.h"
#include "kube/paging.h"
#include "kube/resources.h"

namespace kmt::controller {

namespace {

constexpr const char* kJobIndex = "migrationJobUID";

// An informer of `r` whose objects are read by the projection T: only its reads are built.
template <typename T>
kube::InformerOptions Options(const kube::Resource& r, std::string label_selector,
                              std::string field_selector, std::chrono::milliseconds resync,
                              const InformerViewOptions& o) {
  kube::InformerOptions opts;
  opts.watch.resource = r;
  opts.watch.reads = &T::Reads();
  opts.watch.label_selector = std::move(label_selector);
  opts.watch.field_selector = std::move(field_selector);
  opts.watch.page_size = o.page_size;
  opts.resync_period = resync;
  opts.on_error = o.on_error;
  return opts;
}

// Every running pod of the cluster: a tenant decides how many labels its pods carry, so the
// cache keeps at most api::kBoundPodLabelBytes of them per pod, cut while parsing (the
// explainer says when a selector needed the rest: api::Explainer::LabelsNote).
kube::InformerOptions BoundPodOptions(const InformerViewOptions& o) {
  kube::InformerOptions opts = Options<api::BoundPod>(
      kube::kPods, "", std::string(api::kBoundPodsFieldSelector), std::chrono::milliseconds(0), o);
  opts.watch.max_label_bytes = api::kBoundPodLabelBytes;
  return opts;
}

template <typename T>
std::shared_ptr<const T> Projected(const nlohmann::json& j) {
  return std::make_shared<const T>(T::FromJson(j));
}

bool WantsReconcile(const api::MigrationInfo& v) {
  if (LacksFinalReport(v)) return true;
  return !v.Final() && (v.added_term_text.has_value() || !v.added_node_selector.empty());
}

}  // namespace

std::vector<std::string> MigrationJobIndexValues(const nlohmann::json& pod) {
  // Odd JSON (no metadata, labels of another type) indexes nothing.
  auto uid = base::String(pod, {"metadata", "labels", api::kLabelMigrationJobUID});
  if (!uid) return {};
  return {*uid};
}

bool NodeChangeMatters(const api::NodeInfo& a, const api::NodeInfo& b) {
  return !(a.labels == b.labels && a.unschedulable == b.unschedulable && a.taints == b.taints &&
           a.ready == b.ready && a.allocatable == b.allocatable);
}

InformerView::InformerView(kube::KubeClient& client, const base::Clock& clock,
                           const InformerViewOptions& options)
    : client_(client),
      clock_(clock),
      vmims_(client,
             Options<api::MigrationInfo>(kube::kVirtualMachineInstanceMigrations, "", "",
                                         options.vmim_resync, options),
             Projected<api::MigrationInfo>),
      targets_(client,
               Options<api::TargetPod>(kube::kPods,
                                       std::string(api::kLabelApp) + "=" +
                                           std::string(api::kLabelAppValue) + "," +
                                           std::string(api::kLabelMigrationJobUID),
                                       "", std::chrono::milliseconds(0), options),
               Projected<api::TargetPod>),
      nodes_(client,
             Options<api::NodeInfo>(kube::kNodes, "", "", std::chrono::milliseconds(0), options),
             Projected<api::NodeInfo>),
      bound_(client, BoundPodOptions(options), Projected<api::BoundPod>),
      bound_on_demand_(options.bound_pods_on_demand) {
  nodes_.AddHandlers({[this](const std::string&, const kube::Informer<api::NodeInfo>::Ptr&) {
                        node_generation_.fetch_add(1);
                      },
                      [this](const std::string&, const kube::Informer<api::NodeInfo>::Ptr& a,
                             const kube::Informer<api::NodeInfo>::Ptr& b) {
                        if (a != b && NodeChangeMatters(*a, *b)) node_generation_.fetch_add(1);
                      },
                      [this](const std::string&, const kube::Informer<api::NodeInfo>::Ptr&) {
                        node_generation_.fetch_add(1);
                      }});
  targets_.AddIndex(kJobIndex, MigrationJobIndexValues);
}

InformerView::~InformerView() { Stop(); }

void InformerView::Connect(Controller& controller) {
  using VmimPtr = kube::Informer<api::MigrationInfo>::Ptr;
  using PodPtr = kube::Informer<api::TargetPod>::Ptr;
  using NodePtr = kube::Informer<api::NodeInfo>::Ptr;
  // The initial lists' adds are collected (each VMIM's key once, whether its own add, its
  // pods' or both named it) and handed over when all three lists are in; listed nodes change
  // no verdict (the pods that wait are among the pods listed).
  auto initial_done = [this, &controller] { InitialListDone(controller); };
  vmims_.AddHandlers({[this, &controller](const std::string&, const VmimPtr& v) {
                        if (!WantsReconcile(*v)) return;
                        keys_handed_over_.fetch_add(1);
                        controller.OnMigration(*v);
                      },
                      [this, &controller](const std::string&, const VmimPtr&, const VmimPtr& v) {
                        if (!WantsReconcile(*v)) return;
                        keys_handed_over_.fetch_add(1);
                        controller.OnMigration(*v);
                      },
                      nullptr,
                      [this](const std::string&, const VmimPtr& v) {
                        if (WantsReconcile(*v)) AddInitialKey(KeyOf(v->ns, v->name));
                      },
                      initial_done});
  // A policy's migration reaching a final phase, or going, may free a node for its waiters.
  OnPolicyMigration(
      [&controller](const std::string& policy) { controller.OnPolicyMigration(policy); });
  targets_.AddHandlers(
      {[this, &controller](const std::string& key, const PodPtr& p) {
         {
           std::scoped_lock lock(seen_mu_);
           seen_.emplace(p->uid, clock_.Now());
         }
         TrackWaiting(key, p);
         HandOver(controller, *p);
       },
       [this, &controller](const std::string& key, const PodPtr&, const PodPtr& p) {
         TrackWaiting(key, p);
         HandOver(controller, *p);
       },
       [this, &controller](const std::string& key, const PodPtr& p) {
         {
           std::scoped_lock lock(seen_mu_);
           seen_.erase(p->uid);
         }
         TrackWaiting(key, nullptr);
         HandOver(controller, *p);
       },
       [this](const std::string& key, const PodPtr& p) {
         {
           std::scoped_lock lock(seen_mu_);
           seen_.emplace(p->uid, clock_.Now());
         }
         TrackWaiting(key, p);
         if (!p->migration_job_name.empty()) AddInitialKey(KeyOf(p->ns, p->migration_job_name));
       },
       initial_done});
  // Only the target pods that wait unschedulable can change verdict with a node: hand
  // those over, not the whole target-pod list (5,000 copies of it for the initial list
  // of 5,000 nodes).
  auto recheck = [this, &controller] {
    std::vector<PodPtr> waiting;
    {
      std::scoped_lock lock(waiting_mu_);
      waiting.reserve(waiting_.size());
      for (const auto& [key, p] : waiting_) waiting.push_back(p);
    }
    if (!waiting.empty()) controller.OnNodeChange(waiting);
    node_rechecks_.fetch_add(waiting.size());
    keys_handed_over_.fetch_add(waiting.size());
  };
  nodes_.AddHandlers({[recheck](const std::string&, const NodePtr&) { recheck(); },
                      [recheck](const std::string&, const NodePtr& old_node, const NodePtr& node) {
                        if (old_node != node && NodeChangeMatters(*old_node, *node)) recheck();
                      },
                      [recheck](const std::string&, const NodePtr&) { recheck(); },
                      [](const std::string&, const NodePtr&) {}, initial_done});
}

void InformerView::AddInitialKey(std::string key) {
  std::scoped_lock lock(initial_mu_);
  initial_keys_.insert(std::move(key));
}

void InformerView::InitialListDone(Controller& controller) {
  std::set<std::string> keys;
  {
    std::scoped_lock lock(initial_mu_);
    if (--initial_lists_left_ > 0) return;
    keys.swap(initial_keys_);
  }
  keys_handed_over_.fetch_add(keys.size());
  for (const std::string& key : keys) controller.Enqueue(key);
}

void InformerView::TrackWaiting(const std::string& key,
                                const kube::Informer<api::TargetPod>::Ptr& pod) {
  std::scoped_lock lock(waiting_mu_);
  if (pod && WaitsUnschedulable(*pod)) {
    waiting_[key] = pod;
  } else {
    waiting_.erase(key);
  }
}

uint64_t InformerView::node_rechecks() const { return node_rechecks_.load(); }

uint64_t InformerView::keys_handed_over() const { return keys_handed_over_.load(); }

void InformerView::HandOver(Controller& controller, const api::TargetPod& pod) {
  if (!pod.migration_job_name.empty()) keys_handed_over_.fetch_add(1);
  controller.OnTargetPod(pod);
}

void InformerView::Start() {
  vmims_.Start();
  targets_.Start();
  nodes_.Start();
  if (!bound_on_demand_) StartBoundPods();
}

void InformerView::StartBoundPods() {
  std::call_once(bound_started_, [this] { bound_.Start(); });
}

bool InformerView::BoundPodsReady() { return bound_.HasSynced(); }

void InformerView::Stop() {
  vmims_.Stop();
  targets_.Stop();
  nodes_.Stop();
  bound_.Stop();
}

bool InformerView::HasSynced() const {
  return vmims_.HasSynced() && targets_.HasSynced() && nodes_.HasSynced() &&
         (bound_on_demand_ || bound_.HasSynced());
}

bool InformerView::WaitForSync(std::chrono::milliseconds timeout) const {
  // Each informer gets what is left of the overall timeout.
  const auto deadline = clock_.Now() + timeout;
  auto left = [&] {
    return std::max(std::chrono::milliseconds(0),
                    std::chrono::duration_cast<std::chrono::milliseconds>(deadline - clock_.Now()));
  };
  return vmims_.WaitForSync(left()) && targets_.WaitForSync(left()) && nodes_.WaitForSync(left()) &&
         (bound_on_demand_ || bound_.WaitForSync(left()));
}

void InformerView::OnPolicyMigration(const std::function<void(const std::string& policy)>& fn) {
  using VmimPtr = kube::Informer<api::MigrationInfo>::Ptr;
  vmims_.AddHandlers({[fn](const std::string&, const VmimPtr& v) {
                        if (!v->policy.empty()) fn(v->policy);
                      },
                      [fn](const std::string&, const VmimPtr& a, const VmimPtr& b) {
                        if (!b->policy.empty() &&
                            (a->policy != b->policy || a->phase != b->phase)) {
                          fn(b->policy);
                        }
                      },
                      [fn](const std::string&, const VmimPtr& v) {
                        if (!v->policy.empty()) fn(v->policy);
                      }});
}

std::vector<api::MigrationInfo> InformerView::PolicyMigrations() const {
  std::vector<api::MigrationInfo> out;
  for (const auto& v : vmims_.List()) {
    if (!v->policy.empty()) out.push_back(*v);
  }
  return out;
}

std::optional<api::MigrationInfo> InformerView::Migration(const std::string& ns,
                                                          const std::string& name) {
  auto v = vmims_.Get(ns + "/" + name);
  if (!v) return std::nullopt;
  return *v;
}

std::vector<api::TargetPod> InformerView::TargetPods(const std::string& ns,
                                                     const std::string& vmim_uid) {
  std::vector<api::TargetPod> out;
  for (const auto& p : targets_.ByIndex(kJobIndex, vmim_uid)) {
    if (p->ns == ns) out.push_back(*p);
  }
  return out;
}

std::vector<api::NodeInfo> InformerView::Nodes() {
  std::vector<api::NodeInfo> out;
  for (const auto& n : nodes_.List()) out.push_back(*n);
  return out;
}

InformerView::NodeSnapshot InformerView::NodeList() {
  if (!nodes_.HasSynced()) return nullptr;
  // Read the generation before listing: a change racing with the list only makes the
  // snapshot newer than its tag, and the next call rebuilds it.
  const uint64_t generation = node_generation_.load();
  std::scoped_lock lock(snapshot_mu_);
  if (snapshot_ && snapshot_generation_ == generation) return snapshot_;
  snapshot_ =
      std::make_shared<const std::vector<std::shared_ptr<const api::NodeInfo>>>(nodes_.List());
  snapshot_generation_ = generation;
  return snapshot_;
}

std::vector<api::BoundPod> InformerView::BoundPods() {
  std::vector<api::BoundPod> out;
  for (const auto& p : bound_.List()) out.push_back(*p);
  return out;
}

std::vector<api::NamespaceInfo> InformerView::Namespaces() {
  kube::ListOptions opts;
  opts.omit_managed_fields = true;
  const nlohmann::json list = kube::ListAll(client_, kube::kNamespaces, "", opts);
  std::vector<api::NamespaceInfo> out;
  const auto items = base::Array(list, "items");
  if (!items) return out;
  for (const auto& n : **items) out.push_back(api::NamespaceInfo::FromJson(n));
  return out;
}

std::vector<api::TargetPod> InformerView::PolicyTargetPods(const std::string& policy,
                                                           const std::string& except_uid) {
  std::vector<api::TargetPod> out;
  for (const auto& v : vmims_.List()) {
    if (v->policy != policy || v->Final() || v->uid == except_uid) continue;
    const auto pods = targets_.ByIndex(kJobIndex, v->uid);
    std::vector<const api::TargetPod*> own;
    own.reserve(pods.size());
    for (const auto& p : pods) own.push_back(p.get());
    if (const api::TargetPod* p = InboundPodOf(*v, own)) out.push_back(*p);
  }
  return out;
}

void InformerView::ResolveClaims(api::TargetPod& pod) { ResolveClaimsFromApi(client_, pod); }

std::optional<base::SteadyTime> InformerView::TargetPodSeenAt(const std::string& pod_uid) {
  std::scoped_lock lock(seen_mu_);
  auto it = seen_.find(pod_uid);
  if (it == seen_.end()) return std::nullopt;
  return it->second;
}

std::vector<base::SteadyTime> InformerView::GatedTargetPodsSeenAt() const {
  std::vector<base::SteadyTime> out;
  const auto pods = targets_.List();
  std::scoped_lock lock(seen_mu_);
  for (const auto& p : pods) {
    if (!p->has_gate) continue;
    auto it = seen_.find(p->uid);
    out.push_back(it == seen_.end() ? clock_.Now() : it->second);
  }
  return out;
}

std::vector<std::shared_ptr<const api::MigrationInfo>> InformerView::MigrationList() const {
  const auto list = vmims_.List();
  return {list.begin(), list.end()};
}

InformerView::Sizes InformerView::sizes() const {
  return {vmims_.Size(), targets_.Size(), nodes_.Size(), bound_.Size()};
}

size_t InformerView::BoundPodsLabelsCut() const {
  const auto pods = bound_.List();
  return static_cast<size_t>(
      std::count_if(pods.begin(), pods.end(), [](const auto& p) { return p->labels_dropped > 0; }));
}

}  // namespace kmt::controller
