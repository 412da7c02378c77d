// kube/internal/fake_support.h — private pieces shared by fake_client.cc and
// fake_watch.cc: the Status objects the API server would send, and the watch
// stream state. Not for use outside kube/fake_client.
#pragma once

#include <condition_variable>
#include <deque>
#include <mutex>
#include <set>
#include <string>
#include <string_view>
#include <utility>

#include "kube/client.h"
#include "kube/error.h"
#include "kube/fake_client.h"
#include "kube/managed_fields.h"
#include "kube/selector.h"

namespace kmt::kube {
namespace fake_internal {

Json StatusJson(int code, std::string_view reason, std::string_view message,
                Json details = Json::object());
KubeError StatusError(int code, std::string_view reason, std::string_view message,
                      const std::string& what, Json details = Json::object());
Json Details(const Resource& r, std::string_view name);
KubeError NotFound(const Resource& r, std::string_view name, const std::string& what);
KubeError BadRequest(std::string_view message, const std::string& what);
KubeError Conflict(const Resource& r, std::string_view name, std::string_view why,
                   const std::string& what);
// The HTTP code and Status reason the API server uses for each kind.
std::pair<int, const char*> CanonicalStatus(ErrorKind kind);
const std::string& MetaString(const Json& obj, const char* field);
// Fields the API server accepts in a field selector, beyond metadata.name and
// metadata.namespace (pkg/registry/*/strategy.go ToSelectableFields).
const std::set<std::string>& ExtraSelectableFields(const std::string& group_resource);

}  // namespace fake_internal

struct FakeClient::Stream {
  std::string resource;
  std::string ns;  // "" = all namespaces
  LabelSelector labels;
  FieldSelector fields;
  bool bookmarks = false;
  ObjectTrim trim;
  std::string kind;
  std::string api_version;

  std::mutex mu;
  std::condition_variable cv;
  std::deque<WatchEvent> queue;
  bool ended = false;      // server closed the stream
  bool broken = false;     // connection failed
  bool cancelled = false;  // client gave up

  bool Matches(const Json& obj) const {
    if (!obj.is_object()) return false;
    if (!ns.empty() && fake_internal::MetaString(obj, "namespace") != ns) return false;
    const Json& meta = obj.at("metadata");
    return labels.Matches(meta.contains("labels") ? meta["labels"] : Json()) && fields.Matches(obj);
  }

  // Caller holds mu.
  void PushLocked(std::string type, Json object) {
    if (ended || broken || cancelled) return;
    TrimObject(object, trim);
    queue.push_back(WatchEvent{std::move(type), std::move(object)});
    cv.notify_all();
  }
};

}  // namespace kmt::kube
