// kube/fake_client.h — an in-memory KubeClient that keeps state the way
// kube-apiserver does, for component tests of the webhook and the controller.
//
// What it promises (and tests in fake_client_test.cc check):
//  - Objects get uid, resourceVersion (one global counter, as etcd's revision),
//    generation (bumped when anything outside metadata/status changes) and
//    creationTimestamp (from the injected clock). generateName works.
//  - Create: 409 AlreadyExists. Get/Update/Patch/Delete: 404 NotFound.
//    Update/Patch with a stale metadata.resourceVersion: 409 Conflict. An
//    update that changes nothing stores nothing and emits no event.
//  - List: label selectors (=, ==, !=, in, notin, key, !key, >, <), field
//    selectors (metadata.name, metadata.namespace, plus per-kind fields such as
//    pods' spec.nodeName), limit/continue paging, resourceVersion semantics.
//  - Patch: JSON Patch (RFC 6902; a failed `test` op or a missing path gives
//    the API server's exact generic 422, which ErrorFromResponse maps to
//    kConflict) and merge patch (RFC 7386).
//  - Resources with a status subresource: writes to "status" change only
//    .status; main writes keep the stored .status. Create drops .status for
//    pods (phase Pending) and custom resources, keeps it for nodes.
//  - Delete: uid / resourceVersion preconditions (409); finalizers keep the
//    object with deletionTimestamp until an update empties them.
//  - Dry run: the answer is computed, nothing is stored, no event.
//  - Watch: live events to open streams (selector transitions become
//    ADDED/DELETED like the watch cache does), resume from a resourceVersion
//    out of a bounded history; an older resourceVersion yields an ERROR event
//    with a 410 Expired Status. BOOKMARKs on demand (SendBookmarks).
//  - Fault injection (FailNext) and a call hook that runs before each call,
//    outside the lock, so it may itself call the client (to stage races).
// Every error is a KubeError built by ErrorFromResponse from the Status body
// the real server would send, so callers see the same kinds and messages.
// All methods are thread-safe.
#pragma once

#include <chrono>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "base/clock.h"
#include "kube/client.h"
#include "kube/error.h"

namespace kmt::kube {

enum class Verb { kGet, kList, kCreate, kUpdate, kPatch, kDelete, kWatch };
const char* VerbName(Verb verb);  // "get", "list", ...

// One observed call, as given to the call hook and kept in Calls().
struct FakeCall {
  Verb verb;
  std::string
      resource;  // GroupResourceName: "pods", "virtualmachineinstancemigrations.kubevirt.io"
  std::string ns;
  std::string name;  // for create: the requested name (may be empty with generateName)
  std::string subresource;
  bool dry_run = false;
  Json body;  // create/update: the object; patch: the patch; otherwise null
  // list/watch: the selectors asked for
  std::string label_selector = {};
  std::string field_selector = {};
};

class FakeClient : public KubeClient {
 public:
  struct Options {
    // Watch events kept for resuming; older resourceVersions get 410 Gone.
    size_t watch_history = 10000;
    // Source of creationTimestamp / deletionTimestamp (its wall time); null: always
    // 2026-01-01T00:00:00Z.
    const base::Clock* clock = nullptr;
    // Keep every call for Calls(). Benchmarks that serve from the fake turn this off: the
    // log grows without bound, and its reallocations would show up as latency.
    bool record_calls = true;
  };

  FakeClient();
  explicit FakeClient(Options options);
  ~FakeClient() override;

  Json Get(const Resource& r, std::string_view ns, std::string_view name,
           std::string_view subresource = {}) override;
  Json List(const Resource& r, std::string_view ns, const ListOptions& opts = {}) override;
  Json Create(const Resource& r, std::string_view ns, const Json& object,
              const WriteOptions& opts = {}) override;
  Json Update(const Resource& r, std::string_view ns, const Json& object,
              std::string_view subresource = {}, const WriteOptions& opts = {}) override;
  Json Patch(const Resource& r, std::string_view ns, std::string_view name, PatchType type,
             const Json& patch, std::string_view subresource = {},
             const WriteOptions& opts = {}) override;
  Json Delete(const Resource& r, std::string_view ns, std::string_view name,
              const DeleteOptions& opts = {}) override;
  std::unique_ptr<WatchStream> Watch(const Resource& r, std::string_view ns,
                                     const WatchOptions& opts) override;

  // ---- test controls ----

  // The next `times` calls of `verb` (on any resource, or only on `resource`
  // when given as a GroupResourceName) throw a KubeError of `kind`, built from
  // the Status the API server would send for the matching HTTP code.
  void FailNext(Verb verb, int times, ErrorKind kind, std::string resource = {});
  // Same, with an exact error.
  void FailNextWith(Verb verb, int times, KubeError error, std::string resource = {});

  // Runs before every call (after fault injection is decided), outside the lock.
  void SetCallHook(std::function<void(const FakeCall&)> hook);
  std::vector<FakeCall> Calls() const;
  void ClearCalls();

  // Answers creates of a resource that the server computes rather than stores
  // (SubjectAccessReview, TokenReview): the handler gets the posted object and
  // returns the answer; nothing is stored.
  void SetCreateHandler(const Resource& r, std::function<Json(const Json&)> handler);

  // Overrides whether a resource has a status subresource (default: every
  // resource except events, leases and subjectaccessreviews).
  void SetStatusSubresource(const Resource& r, bool enabled);

  // Sends a BOOKMARK carrying the current resourceVersion to every open watch
  // that asked for bookmarks.
  void SendBookmarks();
  // Forgets all watch history (like an etcd compaction): resuming from any
  // resourceVersion older than the current one gets 410 Gone.
  void Compact();
  // Ends every open watch cleanly (Next() returns nullopt), as the server does
  // at timeoutSeconds or when it restarts.
  void CloseWatches();
  // Breaks every open watch (Next() throws KubeError kTransport).
  void BreakWatches();
  size_t OpenWatchCount() const;

  // Current global resourceVersion.
  int64_t ResourceVersion() const;
  // Number of stored objects of a resource (all namespaces).
  size_t Count(const Resource& r) const;

 private:
  struct Stream;
  class FakeWatch;
  struct Fault {
    Verb verb;
    int remaining;
    std::optional<KubeError> error;  // exact error, or one built from kind at call time
    ErrorKind kind;
    std::string resource;
  };
  struct HistoryEntry {
    int64_t rv;
    std::string resource;
    std::string type;
    Json old_object;  // for MODIFIED/DELETED: the previous state (selector transitions)
    Json object;
  };
  using Key = std::pair<std::string, std::string>;  // namespace, name
  using Store = std::map<Key, Json>;

  void Before(const FakeCall& call);
  bool HasStatus(const Resource& r) const;
  std::string Now() const;
  std::string NextUid();
  std::string GenerateName(const std::string& prefix);
  Json Commit(const Resource& r, const std::string& type, const Json& old_obj, Json obj,
              bool dry_run);
  Json WriteLocked(const Resource& r, std::string_view ns, Json obj, std::string_view sub,
                   bool dry_run, const std::string& what);
  void Publish(const HistoryEntry& e);

  Options options_;
  mutable std::mutex mu_;
  std::map<std::string, Store> stores_;  // by GroupResourceName
  std::map<std::string, bool> status_subresource_;
  std::map<std::string, std::function<Json(const Json&)>> create_handlers_;
  int64_t rv_ = 0;
  int64_t compacted_rv_ = 0;  // events with rv <= this are gone from history
  uint64_t uid_counter_ = 0;
  uint64_t name_counter_ = 0;
  std::deque<HistoryEntry> history_;
  std::vector<std::weak_ptr<Stream>> streams_;
  std::vector<Fault> faults_;
  std::function<void(const FakeCall&)> hook_;
  std::vector<FakeCall> calls_;
};

}  // namespace kmt::kube
