// kube/rest_client.h — KubeClient over HTTPS to kube-apiserver.
//
// Builds URLs (kube/paths.h) and query strings (labelSelector, fieldSelector,
// limit, continue, resourceVersion, resourceVersionMatch, dryRun=All,
// fieldValidation, fieldManager, watch, allowWatchBookmarks, timeoutSeconds),
// sends them through a Transport (TLS, pool, credentials, QPS, size cap), and
// turns every non-2xx answer into a KubeError via ErrorFromResponse.
//
// Watches run on their own connection and thread: the body is fed through a
// LineFramer into a queue that Next() drains. Cancel() stops the connection
// (httplib's ClientImpl::stop) so a blocked Next() returns promptly. A stream
// that ends mid-event, a malformed line or a non-200 answer surfaces as a
// KubeError from Next() after the events that preceded it.
//
// The queue is bounded, by back-pressure: once it holds
// TransportOptions::max_watch_queue_bytes of events (counted as the bytes of their
// lines; one event of any size is always let into an empty queue), the reader thread
// waits inside httplib's content receiver until Next() makes room, so it reads nothing
// more from the socket. TCP flow control then stops the API server's writes; no event
// is dropped, and a consumer that catches up resumes the same stream. A consumer too
// slow for the server's own buffers gets its watch ended by the server (kube-apiserver
// closes an unresponsive watcher's stream); Next() then ends (or throws kTransport
// mid-event) and kube/watcher.h re-watches from its last resourceVersion. So a slow
// reader costs at most that many bytes of queued events per watch (plus what the
// kernel buffers), never memory without limit. Cancel() also releases a reader
// waiting for room.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "kube/client.h"
#include "kube/kubeconfig.h"
#include "kube/managed_fields.h"
#include "kube/transport.h"

namespace kmt::kube {

class RestClient : public KubeClient {
 public:
  // Throws KubeError kConfig on unusable TLS material.
  explicit RestClient(ClientConfig config, TransportOptions options = {});
  ~RestClient() override;

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

  const ClientConfig& config() const { return transport_->config(); }

 private:
  // The answer's objects at `at` are trimmed as `trim` says while parsing.
  Json Call(const std::string& method, const std::string& path, const std::string& body,
            const std::string& content_type, const std::string& what,
            ObjectsAt at = ObjectsAt::kTop, const ObjectTrim& trim = {});

  std::shared_ptr<Transport> transport_;
};

// "?a=x&b=y" with values escaped; "" for no parameters.
std::string QueryString(const std::vector<std::pair<std::string, std::string>>& params);

}  // namespace kmt::kube
