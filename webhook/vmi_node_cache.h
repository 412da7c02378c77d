// webhook/vmi_node_cache.h — where each VMI runs, kept in memory for the validator's
// placement warning.
//
// The warning "the added node selector term matches only node X, where VMI Y runs now"
// (webhook/vmim_validator.cc) needs the VMI's status.nodeName. Read with a GET, that is an
// API round trip, so the admission server decides the review on a worker instead of the I/O
// thread (base/blocking.h). This cache is a VMI informer (kube/informer.h) that builds only
// what it reads of each VMI — metadata.namespace, metadata.name, metadata.resourceVersion and
// status.nodeName (VmiPlacement::Reads; the informer adds what it reads itself) — so a VMI,
// whose spec and status run to kilobytes, costs its key and its node name.
//
// NodeName() answers only from memory and never waits: nullopt until the first list is in,
// and for a VMI the cache does not hold (created a moment ago, its event not yet here). The
// caller then reads the VMI from the API server (KubeClusterView::SetCachedVmiNodes), so an
// answer is never less current than a GET would have been, except by the watch's lag.
//
// The operator runs it on every replica that serves the webhook; readiness does not wait for
// it (it only saves API reads).
#pragma once

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "base/clock.h"
#include "base/json_filter.h"
#include "kube/client.h"
#include "kube/error.h"
#include "kube/informer.h"

namespace kmt::webhook {

using Json = nlohmann::json;

// What the cache keeps of a VMI.
struct VmiPlacement {
  std::string node_name;  // status.nodeName; "" while it has none

  static VmiPlacement FromJson(const Json& vmi);
  // The members FromJson reads (the informer adds the key's and the watch's).
  static const base::ObjectReads& Reads();
  bool operator==(const VmiPlacement&) const = default;
};

struct VmiNodeCacheOptions {
  int64_t page_size = 250;  // VMIs per LIST page (bounds the sync's transient memory)
  // Called (on the informer's thread) with every error the watch handled.
  std::function<void(const kube::KubeError&)> on_error;
  // Called once (on the informer's thread) when the first LIST is in, with the VMIs cached:
  // the proof that the cache can list and watch (a refused grant only ever reaches on_error).
  std::function<void(size_t vmis)> on_synced;
};

class VmiNodeCache {
 public:
  explicit VmiNodeCache(kube::KubeClient& client, const VmiNodeCacheOptions& options = {},
                        base::Clock& clock = base::SystemClock());
  ~VmiNodeCache();  // Stop()
  VmiNodeCache(const VmiNodeCache&) = delete;
  VmiNodeCache& operator=(const VmiNodeCache&) = delete;

  void Start();  // lists, then watches, on a thread of its own
  void Stop();   // idempotent
  // Drives the informer by one step on the calling thread (tests; do not mix with Start()).
  void StepForTest();

  bool HasSynced() const;
  bool WaitForSync(std::chrono::milliseconds timeout) const;

  // status.nodeName of VMI ns/name ("" while it has none); nullopt when the cache has not
  // synced or does not hold the VMI (ask the API server). Never blocks.
  std::optional<std::string> NodeName(std::string_view ns, std::string_view name) const;
  size_t Size() const;  // cached VMIs

  // The options the cache's informer lists and watches with (tests: what is built).
  static kube::InformerOptions InformerOptionsFor(const VmiNodeCacheOptions& options);

 private:
  kube::Informer<VmiPlacement> informer_;
};

}  // namespace kmt::webhook
