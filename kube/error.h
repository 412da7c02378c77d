// kube/error.h — the one error type of the client, and the one place that maps
// HTTP answers to what a caller should do.
//
//   404 kNotFound      object is gone: treat as deleted
//   409 kConflict      stale resourceVersion / test op failed: re-read, redo
//   410 kGone          watch/list resourceVersion too old: relist
//   400,422 kInvalid   the request itself is wrong: terminal, do not retry
//   401 kUnauthorized, 403 kForbidden: terminal for this identity
//   429,5xx kUnavailable: retry with backoff (retry_after when the server said)
//   408/504, client timeouts kTimeout: retry
//   kTransport: connection, TLS or stream failure: retry with backoff
//   kConfig: bad kubeconfig / credentials source: terminal
//   kTooLarge: a response over the client's cap: terminal
#pragma once

#include <chrono>
#include <optional>
#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>

namespace kmt::kube {

enum class ErrorKind {
  kNotFound,
  kConflict,
  kGone,
  kInvalid,
  kUnauthorized,
  kForbidden,
  kUnavailable,
  kTimeout,
  kTransport,
  kConfig,
  kTooLarge,
  kInternal,  // anything else (unexpected status code)
};

// "NotFound", "Conflict", ... for logs and metrics labels.
const char* ErrorKindName(ErrorKind kind);

// True for kinds where retrying the same call later may succeed.
bool IsRetryable(ErrorKind kind);

class KubeError : public std::runtime_error {
 public:
  KubeError(ErrorKind kind, std::string message, int http_status = 0,
            nlohmann::json status = nullptr,
            std::optional<std::chrono::seconds> retry_after = std::nullopt)
      : std::runtime_error(std::move(message)),
        kind_(kind),
        http_status_(http_status),
        status_(std::move(status)),
        retry_after_(retry_after) {}

  ErrorKind kind() const { return kind_; }
  int http_status() const { return http_status_; }
  // The decoded metav1.Status, or null when the body was not one.
  const nlohmann::json& status() const { return status_; }
  std::optional<std::chrono::seconds> retry_after() const { return retry_after_; }

 private:
  ErrorKind kind_;
  int http_status_;
  nlohmann::json status_;
  std::optional<std::chrono::seconds> retry_after_;
};

// Builds the KubeError for a non-2xx answer: decodes a metav1.Status body when
// there is one (its message becomes the error message), maps the code to a kind.
KubeError ErrorFromResponse(int http_status, const std::string& body,
                            std::optional<std::chrono::seconds> retry_after,
                            const std::string& what);
// The same from a Status already parsed (a non-Status value reads as a body).
KubeError ErrorFromStatus(int http_status, const nlohmann::json& status, const std::string& what);
// The object of a watch ERROR event (a metav1.Status; its code, else 500).
KubeError ErrorFromWatchEvent(const nlohmann::json& object, const std::string& what);

}  // namespace kmt::kube
