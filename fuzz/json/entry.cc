// fuzz/json/entry.cc — arbitrary JSON through the lenient reader (base/json.h) and the
// projections that read API objects with it (api/projections.h, api/pod_volumes.h).
//
// Input: byte 0 picks where the parsed rest is grafted into an otherwise empty object (the
// root itself, metadata, spec, status, spec.affinity, a container, a condition, the
// annotations), so arbitrary shapes reach the projections' deeper reads. Text that is not
// JSON is grafted as a string.
//
// Checks (besides "nothing throws", which fuzz/entry.cc reports):
//   - on every object path of the document up to depth 4, and one missing key below each:
//     Find agrees with nlohmann's own JSON Pointer lookup; its reason is the one the first
//     failing step gives (missing member, null, not an object); Member, At and StringAt are
//     Find and String with "absent" collapsed; String, Bool, Int, Object and Array are Find
//     plus a type check (kWrongType), Int says kOutOfRange above INT64_MAX; a braced path
//     reads like the same path built at run time;
//   - the projections' FromJson, PodRequests and the volume reads return; TargetPod keeps a
//     patch basis exactly when it has the gate, and the basis parses back to an object; the
//     names the projections keep are what the reader reads at the same paths.
#include "fuzz/entry.h"

#include <fmt/format.h>

#include <cstdint>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "api/pod_volumes.h"
#include "api/projections.h"
#include "base/json.h"
#include "base/json_patch.h"

namespace kmt::fuzz {
namespace {

using base::Json;
using base::JsonPath;
using base::Lookup;
using Keys = std::vector<std::string_view>;

constexpr size_t kMaxDepth = 4;
constexpr size_t kMaxPaths = 400;

std::string Shown(const Keys& keys) {
  std::string out;
  for (auto k : keys) out += "/" + base::PointerToken(k);
  return out;
}

Json::json_pointer PointerOf(const Keys& keys) { return Json::json_pointer(Shown(keys)); }

// Object paths of `v` (the keys of nested objects), depth first, at most kMaxPaths.
void CollectPaths(const Json& v, Keys& prefix, std::vector<Keys>& out) {
  if (out.size() >= kMaxPaths || prefix.size() >= kMaxDepth || !v.is_object()) return;
  for (const auto& [key, child] : v.items()) {
    prefix.push_back(key);
    out.push_back(prefix);
    CollectPaths(child, prefix, out);
    prefix.pop_back();
    if (out.size() >= kMaxPaths) return;
  }
}

// The reason Find must give for `keys`: found, or what the first failing step is.
std::string CheckFind(const Json& root, const Keys& keys) {
  const auto got = base::Find(root, JsonPath(std::span(keys)));
  // The longest prefix Find resolves, and what stops the next step.
  size_t j = 0;
  const Json* at = &root;
  while (j < keys.size()) {
    const Keys prefix(keys.begin(), keys.begin() + static_cast<ptrdiff_t>(j) + 1);
    const auto step = base::Find(root, JsonPath(std::span(prefix)));
    if (!step) break;
    at = *step;
    ++j;
  }
  Lookup want = Lookup::kPresent;
  if (at->is_null()) {
    want = Lookup::kNull;  // only the root can be null here
  } else if (j < keys.size()) {
    if (!at->is_object()) {
      want = Lookup::kWrongType;
    } else if (!at->contains(keys[j])) {
      want = Lookup::kMissing;
    } else if ((*at)[keys[j]].is_null()) {
      want = Lookup::kNull;
    } else {
      return fmt::format("{}: Find stops at step {} although the member is there", Shown(keys), j);
    }
  }
  if (got.status() != want) {
    return fmt::format("{}: Find says {}, the first failing step says {}", Shown(keys),
                       base::ToString(got.status()), base::ToString(want));
  }
  if (got && &root.at(PointerOf(keys)) != *got) {
    return fmt::format("{}: Find and the JSON Pointer name different values", Shown(keys));
  }
  if (got.status() == Lookup::kMissing && root.contains(PointerOf(keys))) {
    return fmt::format("{}: missing, but the JSON Pointer resolves", Shown(keys));
  }
  return {};
}

template <typename T>
std::string CheckTyped(const Keys& keys, const char* name, const base::JsonField<const Json*>& any,
                       const base::JsonField<T>& got, bool type_ok) {
  const Lookup want = !any ? any.status() : type_ok ? Lookup::kPresent : Lookup::kWrongType;
  if (got.status() != want && !(got.status() == Lookup::kOutOfRange && any && type_ok)) {
    return fmt::format("{}: {} says {}, Find and the type say {}", Shown(keys), name,
                       base::ToString(got.status()), base::ToString(want));
  }
  if (got.ok() != got.optional().has_value()) {
    return fmt::format("{}: {} ok() and its value disagree", Shown(keys), name);
  }
  return {};
}

std::string CheckReads(const Json& root, const Keys& keys) {
  if (auto b = CheckFind(root, keys); !b.empty()) return b;
  const JsonPath path{std::span(keys)};
  const auto any = base::Find(root, path);
  if (base::ToString(any.status()).empty()) return "ToString of a reason is empty";

  const Json* member = base::Member(root, path);
  if (member != any.value_or(nullptr)) return Shown(keys) + ": Member is not Find";
  const Json& at = base::At(root, path);
  if (member != nullptr ? &at != member : !at.is_null()) return Shown(keys) + ": At is not Member";

  const Json* v = any.value_or(nullptr);
  const auto str = base::String(root, path);
  if (auto b = CheckTyped(keys, "String", any, str, v && v->is_string()); !b.empty()) return b;
  if (str && *str != v->get<std::string>()) return Shown(keys) + ": String reads another text";
  if (base::StringAt(root, path) != str.value_or("")) return Shown(keys) + ": StringAt";

  const auto b = base::Bool(root, path);
  if (auto e = CheckTyped(keys, "Bool", any, b, v && v->is_boolean()); !e.empty()) return e;
  if (b && *b != v->get<bool>()) return Shown(keys) + ": Bool reads another value";

  const auto n = base::Int(root, path);
  if (auto e = CheckTyped(keys, "Int", any, n, v && v->is_number_integer()); !e.empty()) return e;
  const bool too_big =
      v && v->is_number_unsigned() && v->get<uint64_t>() > static_cast<uint64_t>(INT64_MAX);
  if ((n.status() == Lookup::kOutOfRange) != too_big) {
    return Shown(keys) + ": Int out of range exactly above INT64_MAX";
  }
  if (n && *n != v->get<int64_t>()) return Shown(keys) + ": Int reads another value";

  if (auto e = CheckTyped(keys, "Object", any, base::Object(root, path), v && v->is_object());
      !e.empty()) {
    return e;
  }
  if (auto e = CheckTyped(keys, "Array", any, base::Array(root, path), v && v->is_array());
      !e.empty()) {
    return e;
  }

  // The braced forms the callers write read the same.
  const Json* braced = nullptr;
  switch (keys.size()) {
    case 1:
      braced = base::Member(root, keys[0]);
      break;
    case 2:
      braced = base::Member(root, {keys[0], keys[1]});
      break;
    case 3:
      braced = base::Member(root, {keys[0], keys[1], keys[2]});
      break;
    default:
      braced = member;
  }
  if (braced != member) return Shown(keys) + ": a braced path reads another member";
  return {};
}

std::string CheckProjections(const Json& doc) {
  const auto pod = api::TargetPod::FromJson(doc);
  const Json basis = pod.PatchBasis();
  if (pod.has_gate != !basis.is_null()) return "TargetPod: a patch basis without the gate";
  if (pod.has_gate && !basis.is_object()) return "TargetPod: the patch basis is not an object";
  if (pod.name != base::StringAt(doc, {"metadata", "name"}) ||
      pod.node_name != base::StringAt(doc, {"spec", "nodeName"}) ||
      pod.phase != base::StringAt(doc, {"status", "phase"})) {
    return "TargetPod: a name, node or phase the reader does not read";
  }
  const auto bound = api::BoundPod::FromJson(doc);
  if (bound.node_name != pod.node_name) return "BoundPod: another node than TargetPod";
  const auto node = api::NodeInfo::FromJson(doc);
  if (node.name != pod.name) return "NodeInfo: another name than TargetPod";
  const auto ns = api::NamespaceInfo::FromJson(doc);
  const auto vmim = api::MigrationInfo::FromJson(doc);
  if (vmim.uid != base::StringAt(doc, {"metadata", "uid"}) ||
      vmim.vmi_name != base::StringAt(doc, {"spec", "vmiName"})) {
    return "MigrationInfo: a uid or VMI name the reader does not read";
  }
  (void)vmim.Final();
  (void)ns;
  const auto requests = api::PodRequests(doc);
  if (requests.pods != 1) return "PodRequests: pods is not 1";
  (void)api::PodClaimsFromJson(doc);
  (void)api::StorageClassToRead(doc);
  (void)api::VolumeToRead(doc);
  (void)api::ResolveClaim(&doc, &doc, &doc);
  (void)api::ResolveClaim(&doc, nullptr, nullptr);
  return {};
}

Json Graft(uint8_t where, Json v) {
  switch (where % 8) {
    case 1:
      return {{"metadata", std::move(v)}};
    case 2:
      return {{"spec", std::move(v)}};
    case 3:
      return {{"status", std::move(v)}};
    case 4:
      return {{"spec", {{"affinity", std::move(v)}}}};
    case 5:
      return {{"spec", {{"containers", Json::array({std::move(v)})}}}};
    case 6:
      return {{"status", {{"conditions", Json::array({std::move(v)})}}}};
    case 7:
      return {{"metadata", {{"annotations", std::move(v)}}}};
    default:
      return v;
  }
}

std::string Check(std::string_view input) {
  if (input.empty()) return {};
  const std::string_view text = input.substr(1);
  Json parsed = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (parsed.is_discarded()) parsed = Json(std::string(text));
  const Json doc = Graft(static_cast<uint8_t>(input[0]), std::move(parsed));

  std::vector<Keys> paths;
  Keys prefix;
  CollectPaths(doc, prefix, paths);
  const size_t found = paths.size();
  for (size_t i = 0; i < found; ++i) {
    Keys below = paths[i];
    below.emplace_back("no such member");
    paths.push_back(std::move(below));
  }
  paths.emplace_back();
  paths.push_back({"metadata", "name"});
  for (const Keys& keys : paths) {
    if (auto b = CheckReads(doc, keys); !b.empty()) return b;
  }
  return CheckProjections(doc);
}

}  // namespace

std::string CheckTarget(std::string_view input) { return Check(input); }

}  // namespace kmt::fuzz
