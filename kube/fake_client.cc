// kube/fake_client.cc
#include "kube/fake_client.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <condition_variable>
#include <ctime>
#include <stdexcept>
#include <utility>

#include "base/blocking.h"
#include "kube/internal/fake_support.h"
#include "kube/paths.h"
#include "kube/selector.h"

namespace kmt::kube {

using fake_internal::BadRequest;
using fake_internal::CanonicalStatus;
using fake_internal::Conflict;
using fake_internal::Details;
using fake_internal::ExtraSelectableFields;
using fake_internal::MetaString;
using fake_internal::NotFound;
using fake_internal::StatusError;

namespace {

Json WithoutVolatile(const Json& obj) {
  Json copy = obj;
  if (copy.contains("metadata") && copy["metadata"].is_object()) {
    copy["metadata"].erase("resourceVersion");
  }
  return copy;
}

Json SpecPart(const Json& obj, bool has_status) {
  Json copy = obj;
  if (!copy.is_object()) return copy;
  copy.erase("metadata");
  if (has_status) copy.erase("status");
  return copy;
}

}  // namespace

const char* VerbName(Verb verb) {
  switch (verb) {
    case Verb::kGet:
      return "get";
    case Verb::kList:
      return "list";
    case Verb::kCreate:
      return "create";
    case Verb::kUpdate:
      return "update";
    case Verb::kPatch:
      return "patch";
    case Verb::kDelete:
      return "delete";
    case Verb::kWatch:
      return "watch";
  }
  return "unknown";
}

// ---- client ----

FakeClient::FakeClient() : FakeClient(Options{}) {}
FakeClient::FakeClient(Options options) : options_(options) {}
FakeClient::~FakeClient() { CloseWatches(); }

void FakeClient::Before(const FakeCall& call) {
  base::MayBlock();  // as the real client: every call is a round trip to the API server
  std::function<void(const FakeCall&)> hook;
  std::optional<KubeError> error;
  const Verb verb = call.verb;
  const std::string resource = call.resource;
  const std::string what =
      fmt::format("{} {}{}{}", VerbName(verb), resource, call.name.empty() ? "" : " ",
                  call.ns.empty() || call.name.empty() ? call.name : call.ns + "/" + call.name);
  {
    std::scoped_lock lock(mu_);
    if (options_.record_calls) calls_.push_back(call);
    for (auto it = faults_.begin(); it != faults_.end(); ++it) {
      if (it->verb != verb || (!it->resource.empty() && it->resource != resource)) continue;
      if (it->error) {
        error = *it->error;
      } else {
        const ErrorKind kind = it->kind;
        auto [code, reason] = CanonicalStatus(kind);
        if (kind == ErrorKind::kTransport || kind == ErrorKind::kConfig ||
            kind == ErrorKind::kTooLarge) {
          error = KubeError(kind, fmt::format("{}: injected {} fault", what, ErrorKindName(kind)));
        } else {
          error = StatusError(code, reason, fmt::format("injected {} fault", ErrorKindName(kind)),
                              what);
        }
      }
      if (--it->remaining <= 0) faults_.erase(it);
      break;
    }
    hook = hook_;
  }
  if (hook) hook(call);
  if (error) throw *error;
}

bool FakeClient::HasStatus(const Resource& r) const {
  auto it = status_subresource_.find(GroupResourceName(r));
  if (it != status_subresource_.end()) return it->second;
  const std::string gr = GroupResourceName(r);
  return gr != "events" && gr != "leases.coordination.k8s.io" &&
         gr != "subjectaccessreviews.authorization.k8s.io" && gr != "events.events.k8s.io";
}

std::string FakeClient::Now() const {
  const std::time_t t = std::chrono::system_clock::to_time_t(
      options_.clock ? options_.clock->WallNow()
                     : base::WallTime(std::chrono::seconds(1767225600)));  // 2026-01-01
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::string FakeClient::NextUid() {
  ++uid_counter_;
  return fmt::format("00000000-0000-4000-8000-{:012x}", uid_counter_);
}

// Five characters from the API server's alphabet (no vowels, no look-alikes),
// deterministic so tests can predict them.
std::string FakeClient::GenerateName(const std::string& prefix) {
  static constexpr std::string_view kAlphabet = "bcdfghjklmnpqrstvwxz2456789";
  uint64_t n = ++name_counter_;
  std::string suffix;
  for (int i = 0; i < 5; ++i) {
    suffix += kAlphabet[n % kAlphabet.size()];
    n /= kAlphabet.size();
  }
  return prefix + suffix;
}

Json FakeClient::Commit(const Resource& r, const std::string& type, const Json& old_obj, Json obj,
                        bool dry_run) {
  if (dry_run) return obj;
  ++rv_;
  obj["metadata"]["resourceVersion"] = std::to_string(rv_);
  const std::string gr = GroupResourceName(r);
  Key key{r.namespaced ? MetaString(obj, "namespace") : "", MetaString(obj, "name")};
  // Copy old_obj before the store changes: it may point into the store.
  HistoryEntry e{rv_, gr, type, old_obj, obj};
  if (type == "DELETED") {
    stores_[gr].erase(key);
  } else {
    stores_[gr][key] = obj;
  }
  Publish(e);
  history_.push_back(std::move(e));
  while (history_.size() > options_.watch_history) {
    compacted_rv_ = history_.front().rv;
    history_.pop_front();
  }
  return obj;
}

Json FakeClient::Get(const Resource& r, std::string_view ns, std::string_view name,
                     std::string_view subresource) {
  Before({Verb::kGet, GroupResourceName(r), std::string(ns), std::string(name),
          std::string(subresource), false, nullptr});
  const std::string what = DescribeCall("get", r, ns, name, subresource);
  std::scoped_lock lock(mu_);
  if (!subresource.empty() && !(subresource == "status" && HasStatus(r))) {
    throw StatusError(404, "NotFound", "the server could not find the requested resource", what);
  }
  const Store& store = stores_[GroupResourceName(r)];
  auto it = store.find(Key{r.namespaced ? std::string(ns) : "", std::string(name)});
  if (it == store.end()) throw NotFound(r, name, what);
  return it->second;
}

Json FakeClient::List(const Resource& r, std::string_view ns, const ListOptions& opts) {
  Before({Verb::kList, GroupResourceName(r), std::string(ns), "", "", false, nullptr,
          opts.label_selector, opts.field_selector});
  const std::string what = DescribeCall("list", r, ns);
  const std::string gr = GroupResourceName(r);
  LabelSelector labels;
  FieldSelector fields;
  try {
    labels = LabelSelector::Parse(opts.label_selector);
    fields = FieldSelector::Parse(opts.field_selector);
  } catch (const std::invalid_argument& e) {
    throw BadRequest(e.what(), what);
  }
  for (const FieldRequirement& f : fields.requirements()) {
    if (f.field != "metadata.name" && f.field != "metadata.namespace" &&
        !ExtraSelectableFields(gr).count(f.field)) {
      throw BadRequest(fmt::format("field label not supported: {}", f.field), what);
    }
  }

  std::scoped_lock lock(mu_);
  int64_t list_rv = rv_;
  Key after;
  bool has_after = false;
  if (!opts.continue_token.empty()) {
    // Token: "<rv>/<namespace>/<name>" (opaque to callers).
    const std::string& t = opts.continue_token;
    size_t a = t.find('/');
    size_t b = a == std::string::npos ? a : t.find('/', a + 1);
    int64_t token_rv = 0;
    if (b == std::string::npos ||
        std::from_chars(t.data(), t.data() + a, token_rv).ptr != t.data() + a) {
      throw BadRequest("continue key is not valid: malformed token", what);
    }
    if (token_rv < compacted_rv_) {
      throw StatusError(410, "Expired",
                        "The provided continue parameter is too old to display a consistent list "
                        "result. You can start a new list without the continue parameter.",
                        what);
    }
    list_rv = token_rv;
    after = Key{t.substr(a + 1, b - a - 1), t.substr(b + 1)};
    has_after = true;
  } else if (!opts.resource_version.empty() && opts.resource_version != "0") {
    int64_t want = 0;
    const std::string& s = opts.resource_version;
    if (std::from_chars(s.data(), s.data() + s.size(), want).ptr != s.data() + s.size()) {
      throw BadRequest(fmt::format("invalid resource version \"{}\"", s), what);
    }
    if (opts.resource_version_match == "Exact" && want != rv_) {
      // The fake keeps no snapshots: only the current state can be served exactly.
      throw StatusError(410, "Expired", fmt::format("too old resource version: {} ({})", want, rv_),
                        what);
    }
    if (want > rv_) {
      throw StatusError(504, "Timeout",
                        fmt::format("Too large resource version: {}, current: {}", want, rv_),
                        what);
    }
  }

  Json items = Json::array();
  bool more = false;
  int64_t remaining = 0;
  const Store& store = stores_[gr];
  for (auto it = has_after ? store.upper_bound(after) : store.begin(); it != store.end(); ++it) {
    const Json& obj = it->second;
    if (r.namespaced && !ns.empty() && it->first.first != ns) continue;
    const Json& meta = obj["metadata"];
    if (!labels.Matches(meta.contains("labels") ? meta["labels"] : Json())) continue;
    if (!fields.Matches(obj)) continue;
    if (opts.limit > 0 && std::cmp_greater_equal(items.size(), opts.limit)) {
      more = true;
      ++remaining;
      continue;
    }
    items.push_back(obj);
    TrimObject(items.back(), TrimOf(opts));
  }
  std::string next;
  if (more) {
    const Json& last = items.back();
    next = fmt::format("{}/{}/{}", list_rv, r.namespaced ? MetaString(last, "namespace") : "",
                       MetaString(last, "name"));
  }
  Json list{{"kind", r.kind + "List"},
            {"apiVersion", ApiVersion(r)},
            {"metadata", {{"resourceVersion", std::to_string(list_rv)}}},
            {"items", std::move(items)}};
  if (!next.empty()) {
    list["metadata"]["continue"] = next;
    list["metadata"]["remainingItemCount"] = remaining;
  }
  return list;
}

Json FakeClient::Create(const Resource& r, std::string_view ns, const Json& object,
                        const WriteOptions& opts) {
  const std::string requested =
      object.is_object() && object.contains("metadata") ? MetaString(object, "name") : "";
  Before(
      {Verb::kCreate, GroupResourceName(r), std::string(ns), requested, "", opts.dry_run, object});
  const std::string what = DescribeCall("create", r, ns, requested);
  std::scoped_lock lock(mu_);
  if (!object.is_object()) throw BadRequest("the body of the request was not a JSON object", what);
  if (auto h = create_handlers_.find(GroupResourceName(r)); h != create_handlers_.end()) {
    Json answer = h->second(object);
    answer["kind"] = r.kind;
    answer["apiVersion"] = ApiVersion(r);
    return answer;
  }
  Json obj = object;
  Json& meta = obj["metadata"];
  if (!meta.is_object()) meta = Json::object();
  if (r.namespaced) {
    if (ns.empty()) throw BadRequest("namespace is required for a namespaced resource", what);
    if (!MetaString(obj, "namespace").empty() && MetaString(obj, "namespace") != ns) {
      throw BadRequest(
          "the namespace of the provided object does not match the namespace sent on the request",
          what);
    }
    meta["namespace"] = ns;
  } else {
    meta.erase("namespace");
  }
  if (!MetaString(obj, "resourceVersion").empty()) {
    throw StatusError(500, "InternalError",
                      "resourceVersion should not be set on objects to be created", what);
  }
  Store& store = stores_[GroupResourceName(r)];
  const std::string key_ns = r.namespaced ? std::string(ns) : "";
  std::string name = MetaString(obj, "name");
  if (name.empty()) {
    const std::string& prefix = MetaString(obj, "generateName");
    if (prefix.empty()) {
      throw StatusError(422, "Invalid",
                        fmt::format("{} \"\" is invalid: metadata.name: Required value: name or "
                                    "generateName is required",
                                    r.kind),
                        what, Details(r, ""));
    }
    do {
      name = GenerateName(prefix);
    } while (store.count(Key{key_ns, name}));
    meta["name"] = name;
  }
  if (store.count(Key{key_ns, name})) {
    throw StatusError(409, "AlreadyExists",
                      fmt::format("{} \"{}\" already exists", GroupResourceName(r), name), what,
                      Details(r, name));
  }
  obj["kind"] = r.kind;
  obj["apiVersion"] = ApiVersion(r);
  meta["uid"] = opts.dry_run ? std::string() : NextUid();
  meta["creationTimestamp"] = Now();
  meta["generation"] = 1;
  meta.erase("deletionTimestamp");
  meta.erase("deletionGracePeriodSeconds");
  if (HasStatus(r)) {
    // kube-apiserver's PrepareForCreate: pods restart at phase Pending, custom
    // resources drop status; nodes keep what the kubelet registers.
    if (GroupResourceName(r) == "pods") {
      obj["status"] = Json{{"phase", "Pending"}};
    } else if (!r.group.empty()) {
      obj.erase("status");
    }
  }
  return Commit(r, "ADDED", nullptr, std::move(obj), opts.dry_run);
}

Json FakeClient::WriteLocked(const Resource& r, std::string_view ns, Json obj, std::string_view sub,
                             bool dry_run, const std::string& what) {
  if (!obj.is_object()) throw BadRequest("the body of the request was not a JSON object", what);
  if (!sub.empty() && !(sub == "status" && HasStatus(r))) {
    throw StatusError(404, "NotFound", "the server could not find the requested resource", what);
  }
  const std::string name = MetaString(obj, "name");
  if (name.empty()) {
    throw StatusError(422, "Invalid",
                      fmt::format("{} \"\" is invalid: metadata.name: Required value: name is "
                                  "required",
                                  r.kind),
                      what, Details(r, ""));
  }
  if (r.namespaced && !MetaString(obj, "namespace").empty() && MetaString(obj, "namespace") != ns) {
    throw BadRequest(
        "the namespace of the provided object does not match the namespace sent on the request",
        what);
  }
  Store& store = stores_[GroupResourceName(r)];
  auto it = store.find(Key{r.namespaced ? std::string(ns) : "", name});
  if (it == store.end()) throw NotFound(r, name, what);
  const Json& old = it->second;
  const std::string& want_rv = MetaString(obj, "resourceVersion");
  if (!want_rv.empty() && want_rv != MetaString(old, "resourceVersion")) {
    throw Conflict(r, name,
                   "the object has been modified; please apply your changes to the latest "
                   "version and try again",
                   what);
  }
  const std::string& want_uid = MetaString(obj, "uid");
  if (!want_uid.empty() && want_uid != MetaString(old, "uid")) {
    throw Conflict(r, name,
                   fmt::format("Precondition failed: UID in precondition: {}, UID in object meta: "
                               "{}",
                               want_uid, MetaString(old, "uid")),
                   what);
  }

  const bool has_status = HasStatus(r);
  Json updated;
  if (sub == "status") {
    updated = old;
    if (obj.contains("status")) {
      updated["status"] = obj["status"];
    } else {
      updated.erase("status");
    }
  } else {
    updated = std::move(obj);
    if (has_status) {
      if (old.contains("status")) {
        updated["status"] = old["status"];
      } else {
        updated.erase("status");
      }
    }
    Json& meta = updated["metadata"];
    const Json& old_meta = old["metadata"];
    for (const char* f : {"uid", "creationTimestamp", "generation", "deletionTimestamp",
                          "deletionGracePeriodSeconds", "namespace"}) {
      if (old_meta.contains(f)) {
        meta[f] = old_meta[f];
      } else {
        meta.erase(f);
      }
    }
    updated["kind"] = r.kind;
    updated["apiVersion"] = ApiVersion(r);
    if (SpecPart(updated, has_status) != SpecPart(old, has_status)) {
      meta["generation"] = old_meta.value("generation", int64_t{0}) + 1;
    }
  }
  updated["metadata"]["resourceVersion"] = MetaString(old, "resourceVersion");
  if (WithoutVolatile(updated) == WithoutVolatile(old)) return old;  // no-op: nothing stored

  const Json& m = updated["metadata"];
  const bool finalizers_left =
      m.contains("finalizers") && m["finalizers"].is_array() && !m["finalizers"].empty();
  if (m.contains("deletionTimestamp") && !finalizers_left) {
    return Commit(r, "DELETED", old, std::move(updated), dry_run);
  }
  return Commit(r, "MODIFIED", old, std::move(updated), dry_run);
}

Json FakeClient::Update(const Resource& r, std::string_view ns, const Json& object,
                        std::string_view subresource, const WriteOptions& opts) {
  const std::string name =
      object.is_object() && object.contains("metadata") ? MetaString(object, "name") : "";
  Before({Verb::kUpdate, GroupResourceName(r), std::string(ns), name, std::string(subresource),
          opts.dry_run, object});
  const std::string what = DescribeCall("update", r, ns, name, subresource);
  std::scoped_lock lock(mu_);
  return WriteLocked(r, ns, object, subresource, opts.dry_run, what);
}

Json FakeClient::Patch(const Resource& r, std::string_view ns, std::string_view name,
                       PatchType type, const Json& patch, std::string_view subresource,
                       const WriteOptions& opts) {
  Before({Verb::kPatch, GroupResourceName(r), std::string(ns), std::string(name),
          std::string(subresource), opts.dry_run, patch});
  const std::string what = DescribeCall("patch", r, ns, name, subresource);
  std::scoped_lock lock(mu_);
  const Store& store = stores_[GroupResourceName(r)];
  auto it = store.find(Key{r.namespaced ? std::string(ns) : "", std::string(name)});
  if (it == store.end()) throw NotFound(r, name, what);
  Json patched;
  if (type == PatchType::kJsonPatch) {
    if (!patch.is_array()) {
      throw BadRequest("json: cannot unmarshal object into Go value of type jsonpatch.Patch", what);
    }
    try {
      patched = it->second.patch(patch);
    } catch (const nlohmann::json::exception&) {
      // The API server drops the patch library's text: patch.go applyJSPatch.
      throw StatusError(422, "Invalid",
                        "the server rejected our request due to an error in our request", what);
    }
  } else {
    if (!patch.is_object()) throw BadRequest("invalid JSON merge patch: not an object", what);
    patched = it->second;
    patched.merge_patch(patch);
  }
  if (!patched.is_object() || MetaString(patched, "name") != name) {
    throw BadRequest(fmt::format("the name of the object ({}) does not match the name on the URL "
                                 "({})",
                                 patched.is_object() ? MetaString(patched, "name") : "", name),
                     what);
  }
  return WriteLocked(r, ns, std::move(patched), subresource, opts.dry_run, what);
}

Json FakeClient::Delete(const Resource& r, std::string_view ns, std::string_view name,
                        const DeleteOptions& opts) {
  Before({Verb::kDelete, GroupResourceName(r), std::string(ns), std::string(name), "", opts.dry_run,
          nullptr});
  const std::string what = DescribeCall("delete", r, ns, name);
  std::scoped_lock lock(mu_);
  Store& store = stores_[GroupResourceName(r)];
  auto it = store.find(Key{r.namespaced ? std::string(ns) : "", std::string(name)});
  if (it == store.end()) throw NotFound(r, name, what);
  const Json old = it->second;
  if (opts.precondition_uid && *opts.precondition_uid != MetaString(old, "uid")) {
    throw Conflict(r, name,
                   fmt::format("Precondition failed: UID in precondition: {}, UID in object meta: "
                               "{}",
                               *opts.precondition_uid, MetaString(old, "uid")),
                   what);
  }
  if (opts.precondition_resource_version &&
      *opts.precondition_resource_version != MetaString(old, "resourceVersion")) {
    throw Conflict(
        r, name,
        fmt::format("Precondition failed: ResourceVersion in precondition: {}, "
                    "ResourceVersion in object meta: {}",
                    *opts.precondition_resource_version, MetaString(old, "resourceVersion")),
        what);
  }
  const Json& meta = old["metadata"];
  if (meta.contains("finalizers") && meta["finalizers"].is_array() && !meta["finalizers"].empty()) {
    if (meta.contains("deletionTimestamp")) return it->second;
    Json marked = old;
    marked["metadata"]["deletionTimestamp"] = Now();
    marked["metadata"]["deletionGracePeriodSeconds"] = opts.grace_period_seconds.value_or(0);
    return Commit(r, "MODIFIED", old, std::move(marked), opts.dry_run);
  }
  return Commit(r, "DELETED", old, old, opts.dry_run);
}

// ---- test controls ----

void FakeClient::FailNext(Verb verb, int times, ErrorKind kind, std::string resource) {
  std::scoped_lock lock(mu_);
  faults_.push_back(Fault{verb, times, std::nullopt, kind, std::move(resource)});
}

void FakeClient::FailNextWith(Verb verb, int times, KubeError error, std::string resource) {
  std::scoped_lock lock(mu_);
  const ErrorKind kind = error.kind();
  faults_.push_back(Fault{verb, times, std::move(error), kind, std::move(resource)});
}

void FakeClient::SetCallHook(std::function<void(const FakeCall&)> hook) {
  std::scoped_lock lock(mu_);
  hook_ = std::move(hook);
}

std::vector<FakeCall> FakeClient::Calls() const {
  std::scoped_lock lock(mu_);
  return calls_;
}

void FakeClient::ClearCalls() {
  std::scoped_lock lock(mu_);
  calls_.clear();
}

void FakeClient::SetCreateHandler(const Resource& r, std::function<Json(const Json&)> handler) {
  std::scoped_lock lock(mu_);
  create_handlers_[GroupResourceName(r)] = std::move(handler);
}

void FakeClient::SetStatusSubresource(const Resource& r, bool enabled) {
  std::scoped_lock lock(mu_);
  status_subresource_[GroupResourceName(r)] = enabled;
}

int64_t FakeClient::ResourceVersion() const {
  std::scoped_lock lock(mu_);
  return rv_;
}

size_t FakeClient::Count(const Resource& r) const {
  std::scoped_lock lock(mu_);
  auto it = stores_.find(GroupResourceName(r));
  return it == stores_.end() ? 0 : it->second.size();
}

}  // namespace kmt::kube
