// kube/client.h — the one seam between this project and the Kubernetes API.
//
// Everything that talks to the API server (operator, webhook, kubectl plugin)
// does so through KubeClient. The real implementation (kube/rest_client.h)
// speaks HTTPS to kube-apiserver; kube/fake_client.h keeps objects in memory
// with resourceVersions, conflicts and watches, for component tests.
//
// Errors: every failed call throws kmt::kube::KubeError (kube/error.h), whose
// kind says what the caller should do next. No other exception type escapes a
// KubeClient method.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "base/json_filter.h"

namespace kmt::kube {

using Json = nlohmann::json;

// A REST resource: group/version/resource plus whether it lives in a namespace.
// The core group is the empty string (path prefix /api/v1, otherwise /apis/G/V).
struct Resource {
  std::string group;
  std::string version;
  std::string resource;  // plural, lower case: "pods", "virtualmachineinstancemigrations"
  bool namespaced = true;
  std::string kind;  // for objects the client builds itself (e.g. "Pod"); informational
};

// Options of a LIST call (one page). An empty namespace lists across all namespaces.
struct ListOptions {
  std::string label_selector;
  std::string field_selector;
  int64_t limit = 0;           // 0 = server default (no paging)
  std::string continue_token;  // from the previous page's metadata.continue
  std::string resource_version;
  std::string resource_version_match;  // "", "NotOlderThan" or "Exact"
  // Leave metadata.managedFields out of the returned items (what informers want: it is
  // large and nothing here reads it). Dropped while parsing, never materialised.
  bool omit_managed_fields = false;
  // Keep each item's labels within this many bytes (kube/managed_fields.h has the rule and
  // the member that counts the labels left out); 0 keeps them all. Also never materialised.
  size_t max_label_bytes = 0;
  // Keep only these members of each item (an informer's projection and the informer's own
  // reads: kube/managed_fields.h has the rule); nullptr keeps them all. Never materialised.
  // Not owned: it outlives the call.
  const base::ObjectReads* reads = nullptr;
};

// Options shared by create, update and patch.
struct WriteOptions {
  bool dry_run = false;          // dryRun=All
  std::string field_validation;  // "", "Ignore", "Warn" or "Strict"
  std::string field_manager;     // defaults to the client's user agent
};

// Options of a DELETE call; preconditions make it safe against replacement races.
struct DeleteOptions {
  std::optional<std::string> precondition_uid;
  std::optional<std::string> precondition_resource_version;
  std::optional<int64_t> grace_period_seconds;
  bool dry_run = false;
};

enum class PatchType {
  kJsonPatch,   // application/json-patch+json (RFC 6902)
  kMergePatch,  // application/merge-patch+json (RFC 7386)
};

struct WatchOptions {
  std::string label_selector;
  std::string field_selector;
  std::string resource_version;  // resume point; "" = start from the most recent
  bool allow_bookmarks = true;
  std::chrono::seconds timeout{300};         // server-side timeoutSeconds
  bool omit_managed_fields = false;          // as ListOptions::omit_managed_fields, per event
  size_t max_label_bytes = 0;                // as ListOptions::max_label_bytes, per event
  const base::ObjectReads* reads = nullptr;  // as ListOptions::reads, per event (outlives it)
};

// One event of a watch stream: ADDED, MODIFIED, DELETED, BOOKMARK or ERROR.
// For ERROR the object is a metav1.Status (e.g. 410 Gone when the
// resourceVersion is too old).
struct WatchEvent {
  std::string type;
  Json object;
};

// An open watch. Next() blocks until an event arrives, returns nullopt when the
// server ends the stream cleanly (timeout) or after Cancel(), and throws
// KubeError on a broken or malformed stream. Cancel() may be called from any
// thread and makes a blocked Next() return promptly.
class WatchStream {
 public:
  virtual ~WatchStream() = default;
  virtual std::optional<WatchEvent> Next() = 0;
  virtual void Cancel() = 0;
};

class KubeClient {
 public:
  virtual ~KubeClient() = default;

  // GET one object (or its subresource, e.g. "status").
  virtual Json Get(const Resource& r, std::string_view ns, std::string_view name,
                   std::string_view subresource = {}) = 0;

  // LIST one page; the result is the List object (items, metadata.continue,
  // metadata.resourceVersion).
  virtual Json List(const Resource& r, std::string_view ns, const ListOptions& opts = {}) = 0;

  // POST; returns the object the server stored (or would store, on dry run).
  virtual Json Create(const Resource& r, std::string_view ns, const Json& object,
                      const WriteOptions& opts = {}) = 0;

  // PUT; the object's metadata.resourceVersion makes it a compare-and-swap.
  virtual Json Update(const Resource& r, std::string_view ns, const Json& object,
                      std::string_view subresource = {}, const WriteOptions& opts = {}) = 0;

  // PATCH with a JSON Patch (an array of operations) or a merge patch.
  virtual Json Patch(const Resource& r, std::string_view ns, std::string_view name, PatchType type,
                     const Json& patch, std::string_view subresource = {},
                     const WriteOptions& opts = {}) = 0;

  // DELETE; returns the server's answer (the object being deleted, or a Status).
  virtual Json Delete(const Resource& r, std::string_view ns, std::string_view name,
                      const DeleteOptions& opts = {}) = 0;

  // WATCH from opts.resource_version.
  virtual std::unique_ptr<WatchStream> Watch(const Resource& r, std::string_view ns,
                                             const WatchOptions& opts) = 0;
};

}  // namespace kmt::kube
