// webhook/admission.h — AdmissionReview (admission.k8s.io/v1): the request an admitter
// reads and the response it returns, and their JSON codec.
//
// The decoder takes untrusted bytes (anything that reaches the port) and never lets a
// nlohmann exception escape: a malformed review becomes a DecodeResult with an error
// message, and the request uid when it could still be read, so the shell can echo it.
// Shapes follow k8s.io/api/admission/v1/types.go (AdmissionRequest, AdmissionResponse);
// the status is a metav1.Status whose JSON member is "status".
#pragma once

#include <cstddef>
#include <functional>
#include <initializer_list>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "api/cause.h"
#include "base/json_filter.h"

namespace kmt::webhook {

using Json = nlohmann::json;

inline constexpr std::string_view kAdmissionApiVersion = "admission.k8s.io/v1";
inline constexpr std::string_view kAdmissionReviewKind = "AdmissionReview";

// Deeper JSON is refused before it is parsed: objects from the API server are never
// nested this deep, and the limit keeps recursive consumers (dump, ==) off a deep stack.
inline constexpr size_t kMaxJsonDepth = 512;
// A review counting more JSON nodes than this (objects, arrays, strings — member names
// included — and commas, so every number and literal after the first of its container) is
// refused before it is parsed. nlohmann's DOM costs at most ~60 bytes per node so counted
// (measured: `[{},{},…]` 89 bytes per element, two nodes) besides the strings' own bytes,
// so a review's DOM is at most ~1.2 × its body + 3 MiB, where `[{},{},…]` alone would
// expand 30×. A virt-launcher pod, a VMIM or a MigrationTargetPolicy counts a few thousand.
inline constexpr size_t kMaxJsonNodes = 50000;

struct GroupVersionKind {
  std::string group, version, kind;
  bool operator==(const GroupVersionKind&) const = default;
};

struct GroupVersionResource {
  std::string group, version, resource;
  bool operator==(const GroupVersionResource&) const = default;
};

// authentication.k8s.io/v1 UserInfo of the requester.
struct UserInfo {
  std::string username;
  std::string uid;
  std::vector<std::string> groups;
  std::map<std::string, std::vector<std::string>> extra;
  bool operator==(const UserInfo&) const = default;
};

struct AdmissionRequest {
  std::string uid;
  GroupVersionKind kind;
  GroupVersionResource resource;
  std::string sub_resource;  // "subResource"
  std::string name;          // may be empty on CREATE with generateName
  std::string ns;            // "namespace"
  std::string operation;     // CREATE, UPDATE, DELETE, CONNECT
  UserInfo user_info;
  Json object;      // null when absent (DELETE)
  Json old_object;  // null when absent (CREATE)
  bool dry_run = false;
  Json options;  // CreateOptions / UpdateOptions, null when absent
};

// metav1.Status of a denial. `causes` go to details.causes[] as {reason: type, field,
// message}; the API server passes them on to the client unchanged.
struct AdmissionStatus {
  int code = 0;
  std::string reason;   // metav1.StatusReason: "Invalid", "Forbidden", "InternalError", ...
  std::string message;  // what kubectl prints after "admission webhook ... denied the request:"
  std::vector<api::Cause> causes;
  bool operator==(const AdmissionStatus&) const = default;
};

struct AdmissionResponse {
  std::string uid;  // the shell overwrites it with the request's uid
  bool allowed = false;
  std::optional<AdmissionStatus> status;  // set on denials and errors
  std::vector<std::string> warnings;
  std::optional<Json>
      patch;  // JSON Patch operations (an array); sent base64 as patchType JSONPatch
};

// Constructors of the usual answers.
AdmissionResponse Allowed();
AdmissionResponse Denied(int code, std::string reason, std::string message,
                         std::vector<api::Cause> causes = {});
// 422 Invalid carrying every cause. The message renders them as Kubernetes renders a
// field.ErrorList aggregate: "<field>: <message>" alone, or "[<a>, <b>]" for several.
AdmissionResponse Invalid(std::vector<api::Cause> causes);
// An error of the webhook itself (cannot decide): not allowed, with the code given.
AdmissionResponse Errored(int code, std::string message);

struct DecodeResult {
  std::optional<AdmissionRequest> request;  // set on success
  std::string error;                        // set on failure
  std::string uid;        // request.uid whenever it could be read (also on failure)
  size_t json_nodes = 0;  // the body's JSON nodes as kMaxJsonNodes counts them (MeasureJson)
};

// The members of request.object and request.oldObject an admitter reads (base/json_filter.h:
// the shape the informers' projections use too). Decoded with one, a review's object holds only
// those; every other member is skipped while the body is parsed, never built. The rest of the
// review is decoded as always. So a large pod costs the pod mutator no DOM of its containers,
// volumes or status (bench/RESULTS.md: parsing was a fifth of the server's CPU per review).
using ObjectReads = base::ObjectReads;

// Decodes an AdmissionReview body. Fails (with a message naming the member) on bytes that
// are not a JSON object, on a wrong apiVersion or kind, a missing request or uid, and on a
// member of the wrong JSON type. Unknown members are ignored, as the API server may add some.
// With `reads`, request.object and request.oldObject hold only those members.
DecodeResult DecodeAdmissionReview(std::string_view body, const ObjectReads* reads = nullptr);

// The AdmissionReview JSON carrying `response`.
Json EncodeAdmissionReview(const AdmissionResponse& response);
// EncodeAdmissionReview(response) as the text the server sends: the bytes of its dump(-1, ' ',
// false, replace), written without building the DOM first.
std::string EncodeAdmissionReviewText(const AdmissionResponse& response);

// Nesting depth of a JSON text (brackets outside strings); stops counting at `limit` + 1.
size_t JsonNestingDepth(std::string_view text, size_t limit);

struct JsonShape {
  size_t depth = 0;  // deepest nesting of brackets outside strings
  size_t nodes = 0;  // objects, arrays, strings and commas (see kMaxJsonNodes)
};
// One pass over a JSON text; stops as soon as depth passes `depth_limit` or nodes pass
// `node_limit` (the value returned is then just over the limit).
JsonShape MeasureJson(std::string_view text, size_t depth_limit, size_t node_limit);

}  // namespace kmt::webhook
