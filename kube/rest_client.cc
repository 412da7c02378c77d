// kube/rest_client.cc
#include "kube/rest_client.h"

#include <fmt/format.h>
#include <httplib.h>

#include <atomic>
#include <condition_variable>
#include <deque>
#include <thread>

#include "base/json.h"
#include "kube/line_framer.h"
#include "kube/paths.h"

namespace kmt::kube {
namespace {

using Params = std::vector<std::pair<std::string, std::string>>;

void AddWriteParams(Params& q, const WriteOptions& o) {
  if (o.dry_run) q.emplace_back("dryRun", "All");
  if (!o.field_validation.empty()) q.emplace_back("fieldValidation", o.field_validation);
  if (!o.field_manager.empty()) q.emplace_back("fieldManager", o.field_manager);
}

const std::string& MetaName(const Json& obj) {
  static const std::string kEmpty;
  const Json* name = base::Member(obj, {"metadata", "name"});
  return name != nullptr && name->is_string() ? name->get_ref<const std::string&>() : kEmpty;
}

// A watch over its own connection and thread.
class RestWatch : public WatchStream {
 public:
  RestWatch(std::shared_ptr<Transport> transport, std::string path, std::string what,
            std::chrono::seconds timeout, const ObjectTrim& trim)
      : transport_(std::move(transport)),
        what_(std::move(what)),
        trim_(trim),
        max_queued_bytes_(transport_->options().max_watch_queue_bytes) {
    transport_->WaitForRateLimit();
    cred_ = transport_->CurrentCredential();
    conn_ = transport_->NewConnection(timeout + std::chrono::seconds(30));
    thread_ = std::thread([this, path = std::move(path)] { Run(path); });
  }

  ~RestWatch() override {
    Cancel();
    thread_.join();
  }

  std::optional<WatchEvent> Next() override {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return cancelled_ || !queue_.empty() || done_; });
    if (cancelled_) return std::nullopt;
    if (!queue_.empty()) {
      WatchEvent e = std::move(queue_.front().event);
      queued_bytes_ -= queue_.front().bytes;
      queue_.pop_front();
      cv_.notify_all();  // room for a reader waiting in Run's content receiver
      return e;
    }
    if (error_) {
      KubeError e = std::move(*error_);
      error_.reset();
      throw e;
    }
    return std::nullopt;
  }

  void Cancel() override {
    {
      std::scoped_lock lock(mu_);
      if (cancelled_) return;
      cancelled_ = true;
    }
    cv_.notify_all();
    conn_->stop();  // unblocks a read in progress
  }

 private:
  void Finish(std::optional<KubeError> error) {
    std::scoped_lock lock(mu_);
    if (!error_ && error) error_ = std::move(error);
    done_ = true;
    cv_.notify_all();
  }

  bool Cancelled() {
    std::scoped_lock lock(mu_);
    return cancelled_;
  }

  // Back-pressure: blocks the reader thread (inside httplib's content receiver, so
  // nothing more is read from the socket) until the queue has room for `bytes` more.
  // An event is always admitted into an empty queue, however large. False once
  // cancelled.
  bool WaitForRoom(size_t bytes) {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] {
      return cancelled_ || queue_.empty() || queued_bytes_ + bytes <= max_queued_bytes_;
    });
    return !cancelled_;
  }

  void Run(const std::string& path) {
    httplib::Request req;
    req.method = "GET";
    req.path = path;
    transport_->Decorate(req, cred_);
    int status = 0;
    std::optional<std::chrono::seconds> retry_after;
    std::string error_body;
    std::optional<KubeError> stream_error;
    const size_t cap = transport_->options().max_response_bytes;
    LineFramer framer(cap);
    req.response_handler = [&](const httplib::Response& r) {
      status = r.status;
      retry_after = RetryAfter(r);
      return true;
    };
    req.content_receiver = [&](const char* data, size_t len, uint64_t, uint64_t) {
      if (Cancelled()) return false;
      if (status != 200) {
        if (error_body.size() < 64 * 1024) error_body.append(data, len);
        return true;
      }
      std::vector<std::string> lines;
      try {
        framer.Feed(std::string_view(data, len), lines);
        for (const std::string& l : lines) {
          if (!WaitForRoom(l.size())) return false;
          WatchEvent e = ParseWatchEvent(l, what_, trim_);
          std::scoped_lock lock(mu_);
          queue_.push_back({std::move(e), l.size()});
          queued_bytes_ += l.size();
          cv_.notify_all();
        }
      } catch (const KubeError& e) {
        stream_error = e;
        return false;
      }
      return true;
    };
    httplib::Response res;
    httplib::Error err = httplib::Error::Success;
    Transport::TakeVerifyResult();  // nothing of an earlier request on this thread
    const bool ok = conn_->send(req, res, err);
    if (Cancelled()) return Finish(std::nullopt);
    if (stream_error) return Finish(std::move(stream_error));
    if (status != 0 && status != 200) {
      if (status == 401) transport_->InvalidateCredential();
      return Finish(ErrorFromResponse(status, error_body.empty() ? res.body : error_body,
                                      retry_after, what_));
    }
    if (!ok) {
      const long verify = Transport::TakeVerifyResult();
      return Finish(
          KubeError(ErrorKind::kTransport,
                    fmt::format("{}: {}", what_,
                                transport_->DescribeFailure(static_cast<int>(err), verify))));
    }
    if (framer.HasPartial()) {
      return Finish(KubeError(ErrorKind::kTransport,
                              fmt::format("{}: stream ended in the middle of an event ({} bytes)",
                                          what_, framer.PartialSize())));
    }
    Finish(std::nullopt);  // the server closed the watch (timeoutSeconds)
  }

  std::shared_ptr<Transport> transport_;
  std::string what_;
  ObjectTrim trim_;
  Credential cred_;
  std::unique_ptr<httplib::ClientImpl> conn_;
  std::thread thread_;

  struct Queued {
    WatchEvent event;
    size_t bytes;  // the length of its line on the wire
  };

  std::mutex mu_;
  std::condition_variable cv_;  // an event queued, room made, done or cancelled
  std::deque<Queued> queue_;
  size_t queued_bytes_ = 0;
  size_t max_queued_bytes_;
  std::optional<KubeError> error_;
  bool done_ = false;
  bool cancelled_ = false;
};

}  // namespace

std::string QueryString(const Params& params) {
  std::string out;
  for (const auto& [k, v] : params) {
    out += out.empty() ? "?" : "&";
    out += k + "=" + EscapeQueryValue(v);
  }
  return out;
}

RestClient::RestClient(ClientConfig config, TransportOptions options)
    : transport_(std::make_shared<Transport>(std::move(config), std::move(options))) {}

RestClient::~RestClient() = default;

Json RestClient::Call(const std::string& method, const std::string& path, const std::string& body,
                      const std::string& content_type, const std::string& what, ObjectsAt at,
                      const ObjectTrim& trim) {
  HttpResponse res = transport_->Do(method, path, body, content_type, what);
  if (res.status < 200 || res.status > 299) {
    throw ErrorFromResponse(res.status, res.body, res.retry_after, what);
  }
  Json j = ParseTrimmed(res.body, at, trim);
  if (j.is_discarded()) {
    throw KubeError(ErrorKind::kInternal,
                    fmt::format("{}: HTTP {} with a body that is not JSON ({} bytes)", what,
                                res.status, res.body.size()),
                    res.status);
  }
  return j;
}

Json RestClient::Get(const Resource& r, std::string_view ns, std::string_view name,
                     std::string_view subresource) {
  return Call("GET", ResourcePath(r, ns, name, subresource), "", "",
              DescribeCall("get", r, ns, name, subresource));
}

Json RestClient::List(const Resource& r, std::string_view ns, const ListOptions& o) {
  Params q;
  if (!o.label_selector.empty()) q.emplace_back("labelSelector", o.label_selector);
  if (!o.field_selector.empty()) q.emplace_back("fieldSelector", o.field_selector);
  if (o.limit > 0) q.emplace_back("limit", std::to_string(o.limit));
  if (!o.continue_token.empty()) q.emplace_back("continue", o.continue_token);
  if (!o.resource_version.empty()) q.emplace_back("resourceVersion", o.resource_version);
  if (!o.resource_version_match.empty()) {
    q.emplace_back("resourceVersionMatch", o.resource_version_match);
  }
  return Call("GET", ResourcePath(r, ns) + QueryString(q), "", "", DescribeCall("list", r, ns),
              ObjectsAt::kListItems, TrimOf(o));
}

Json RestClient::Create(const Resource& r, std::string_view ns, const Json& object,
                        const WriteOptions& o) {
  Params q;
  AddWriteParams(q, o);
  return Call("POST", ResourcePath(r, ns) + QueryString(q), object.dump(), "application/json",
              DescribeCall("create", r, ns, MetaName(object)));
}

Json RestClient::Update(const Resource& r, std::string_view ns, const Json& object,
                        std::string_view subresource, const WriteOptions& o) {
  const std::string& name = MetaName(object);
  const std::string what = DescribeCall("update", r, ns, name, subresource);
  if (name.empty()) throw KubeError(ErrorKind::kInvalid, what + ": object has no metadata.name");
  Params q;
  AddWriteParams(q, o);
  return Call("PUT", ResourcePath(r, ns, name, subresource) + QueryString(q), object.dump(),
              "application/json", what);
}

Json RestClient::Patch(const Resource& r, std::string_view ns, std::string_view name,
                       PatchType type, const Json& patch, std::string_view subresource,
                       const WriteOptions& o) {
  Params q;
  AddWriteParams(q, o);
  return Call("PATCH", ResourcePath(r, ns, name, subresource) + QueryString(q), patch.dump(),
              type == PatchType::kJsonPatch ? "application/json-patch+json"
                                            : "application/merge-patch+json",
              DescribeCall("patch", r, ns, name, subresource));
}

Json RestClient::Delete(const Resource& r, std::string_view ns, std::string_view name,
                        const DeleteOptions& o) {
  Json body = {{"kind", "DeleteOptions"}, {"apiVersion", "v1"}};
  if (o.precondition_uid || o.precondition_resource_version) {
    Json pre = Json::object();
    if (o.precondition_uid) pre["uid"] = *o.precondition_uid;
    if (o.precondition_resource_version) pre["resourceVersion"] = *o.precondition_resource_version;
    body["preconditions"] = pre;
  }
  if (o.grace_period_seconds) body["gracePeriodSeconds"] = *o.grace_period_seconds;
  if (o.dry_run) body["dryRun"] = Json::array({"All"});
  return Call("DELETE", ResourcePath(r, ns, name), body.dump(), "application/json",
              DescribeCall("delete", r, ns, name));
}

std::unique_ptr<WatchStream> RestClient::Watch(const Resource& r, std::string_view ns,
                                               const WatchOptions& o) {
  Params q{{"watch", "true"}};
  if (!o.label_selector.empty()) q.emplace_back("labelSelector", o.label_selector);
  if (!o.field_selector.empty()) q.emplace_back("fieldSelector", o.field_selector);
  if (!o.resource_version.empty()) q.emplace_back("resourceVersion", o.resource_version);
  if (o.allow_bookmarks) q.emplace_back("allowWatchBookmarks", "true");
  if (o.timeout.count() > 0) q.emplace_back("timeoutSeconds", std::to_string(o.timeout.count()));
  return std::make_unique<RestWatch>(transport_, ResourcePath(r, ns) + QueryString(q),
                                     DescribeCall("watch", r, ns), o.timeout, TrimOf(o));
}

}  // namespace kmt::kube
