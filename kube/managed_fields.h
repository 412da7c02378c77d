// kube/managed_fields.h — parse an API response while leaving out what no reader here uses:
// metadata.managedFields, and the labels beyond a byte budget.
//
// Server-side apply bookkeeping is often the largest part of an object (a virt-launcher
// pod's managedFields is about half its JSON) and no reader in this project uses it.
// Informers ask for it to be left out (ListOptions/WatchOptions::omit_managed_fields);
// dropping it while parsing, instead of erasing it afterwards, means it is never built
// as a DOM, which is what bounds an initial LIST page's memory. The parse is the project's
// one filtered parser (base/json_filter.h): what is left out is lexed, never built. LIST
// pages (RestClient) and watch lines (ParseWatchEvent) both come through here.
//
// Labels are what a tenant controls on its own pods, without a limit on their number (an
// object may reach the API server's ~1.5 MB). Caches of every pod in the cluster ask for a
// label budget (ListOptions/WatchOptions::max_label_bytes): labels are kept in the order
// the server sends them (sorted by key) while each one's key plus the longest value a label
// may have (63 bytes) fits what is left of the budget; the rest are never built, and the
// object's metadata gets a member kLabelsDropped holding how many were left out.
//
// An informer keeps a projection of each object, which reads a few of its members: the
// informer asks for only those to be built (ListOptions/WatchOptions::reads, a
// base::ObjectReads next to each projection in api/projections.h, with the informer's own
// reads added: kube/informer.h). A node's images, a pod's containers' env, command and
// volumeMounts are then lexed, never built. The members of a metav1.Status an ERROR watch
// event carries (kStatusMembers) are kept at the top of every object besides the reads.
#pragma once

#include <cstddef>
#include <string_view>

#include "api/names.h"
#include "base/json_filter.h"
#include "kube/client.h"

namespace kmt::kube {

// Where the objects sit in a body.
enum class ObjectsAt {
  kTop,         // the body is one object (GET, and the objects of a List's items via kListItems)
  kListItems,   // {"items": [object, ...]}
  kWatchEvent,  // {"type": ..., "object": object}
};

// What to leave out of each object.
struct ObjectTrim {
  bool managed_fields = false;  // metadata.managedFields
  size_t max_label_bytes = 0;   // 0: every label
  // Only these members (and kStatusMembers at the top); nullptr: every member. The label
  // budget applies to metadata.labels when they are read. Not owned.
  const base::ObjectReads* reads = nullptr;
  bool any() const { return managed_fields || max_label_bytes > 0 || reads != nullptr; }
};

// The trim an informer's lists and watches ask for.
inline ObjectTrim TrimOf(const ListOptions& o) {
  return {.managed_fields = o.omit_managed_fields,
          .max_label_bytes = o.max_label_bytes,
          .reads = o.reads};
}
inline ObjectTrim TrimOf(const WatchOptions& o) {
  return {.managed_fields = o.omit_managed_fields,
          .max_label_bytes = o.max_label_bytes,
          .reads = o.reads};
}

// The members of a metav1.Status kept at the top of an object trimmed to its reads: a watch
// event's object is one when its type is ERROR (kube/error.h reads them), and the objects read
// through ObjectReads have none of them but kind and apiVersion.
inline constexpr std::string_view kStatusMembers[] = {"kind",   "apiVersion", "code",
                                                      "reason", "message",    "details"};

// The member of metadata that says how many labels a trim left out (a number); absent when
// none was (api/names.h).
inline constexpr std::string_view kLabelsDropped = api::kMetadataLabelsDropped;
// The longest value a label may have (Kubernetes' validation): the budget a kept label takes
// beyond its key, decided before its value is read.
inline constexpr size_t kMaxLabelValueBytes = 63;

// Json::parse(text) without allow_exceptions, except that the objects at `at` are trimmed
// as `trim` says. Members named "managedFields" or "labels" elsewhere (a spec field, an
// annotation key) are kept. Returns a discarded value when the text is not JSON.
Json ParseTrimmed(std::string_view text, ObjectsAt at, const ObjectTrim& trim);

// The same trim on an object already parsed (for fakes and tests): equal to what
// ParseTrimmed gives for the object's text at kTop when its label keys come sorted (as the
// API server and Json::dump write them).
void TrimObject(Json& object, const ObjectTrim& trim);

// ParseTrimmed with only managedFields left out.
inline Json ParseOmittingManagedFields(std::string_view text, ObjectsAt at) {
  return ParseTrimmed(text, at, ObjectTrim{.managed_fields = true});
}

}  // namespace kmt::kube
