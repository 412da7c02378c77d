// kube/error.h — the one error type of the client, and the one table of what a caller
// does with each kind of failure (as Abseil's status codes carry their retry meaning).
//
//   kind           from                                   disposition: what the caller does
//   kNotFound      404                                    kAbsent   the object does not exist
//   kConflict      409; the 422 of a JSON Patch whose     kReread   re-read, recompute, write
//                  `test` op failed (see error.cc)
//   kGone          410                                    kRelist   list again, watch from there
//   kInvalid       400, 413, 422                          kTerminal the request itself is wrong
//   kUnauthorized  401 (after one credential refresh)     kTerminal
//   kForbidden     403                                    kTerminal not for this identity
//   kConfig        kubeconfig / credentials source        kTerminal
//   kTooLarge      an answer over the client's cap        kTerminal
//   kUnavailable   429, 5xx                               kRetry    back off, same call again
//   kTimeout       408, 504, connect timeout              kRetry
//   kTransport     connection, TLS or stream failure      kRetry
//   kInternal      any other code; a body that is not     kRetry    (as controller-runtime:
//                  JSON; a malformed watch event                    what is not terminal retries)
//
// Retry-After. A 429 or 5xx answer may say how long to wait: the Retry-After header
// (seconds) or its Status's details.retryAfterSeconds. As client-go's checkWait, only those
// codes count (ErrorFromResponse drops it on any other), and retry_after() is only ever
// set on a kRetry error. A kRetry caller makes its retry no earlier than retry_after(),
// capped by its own longest backoff, and still waits its own backoff when that is longer.
//
// What a disposition means for a particular call is the caller's to say, in one switch over
// DispositionOf (e.g. kAbsent on deleting a pod is success, on patching it a stale plan);
// nothing else branches on ErrorKind to decide whether to retry.
#pragma once

#include <chrono>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <string>

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

// What a caller does with a failure; see the table above.
enum class Disposition {
  kRetry,     // transient: back off and make the same call again (no earlier than retry_after)
  kReread,    // the caller's view is stale: re-read the object, recompute, write again
  kRelist,    // the resourceVersion is too old: list again, then watch from the new one
  kAbsent,    // the object does not exist: treat it as deleted
  kTerminal,  // retrying cannot help (invalid, forbidden, misconfigured): report and stop
};

Disposition DispositionOf(ErrorKind kind);

// "Retry", "Reread", ... for logs and tests.
const char* DispositionName(Disposition d);

class KubeError : public std::runtime_error {
 public:
  KubeError(ErrorKind kind, const std::string& message, int http_status = 0,
            nlohmann::json status = nullptr,
            std::optional<std::chrono::seconds> retry_after = std::nullopt)
      : std::runtime_error(message),
        kind_(kind),
        http_status_(http_status),
        status_(std::move(status)),
        retry_after_(DispositionOf(kind) == Disposition::kRetry ? retry_after : std::nullopt) {}

  ErrorKind kind() const { return kind_; }
  int http_status() const { return http_status_; }
  // The decoded metav1.Status, or null when the body was not one.
  const nlohmann::json& status() const { return status_; }
  // How long the server asked us to wait before a retry (429/5xx answers only; see above).
  std::optional<std::chrono::seconds> retry_after() const { return retry_after_; }

 private:
  ErrorKind kind_;
  int http_status_;
  nlohmann::json status_;
  std::optional<std::chrono::seconds> retry_after_;
};

inline Disposition DispositionOf(const KubeError& e) { return DispositionOf(e.kind()); }

// Builds the KubeError for a non-2xx answer: decodes a metav1.Status body when
// there is one (its message becomes the error message), maps the code to a kind, and keeps
// `retry_after` (else the Status's details.retryAfterSeconds) only for a 429 or 5xx.
KubeError ErrorFromResponse(int http_status, const std::string& body,
                            std::optional<std::chrono::seconds> retry_after,
                            const std::string& what);
// The same from a Status already parsed (a non-Status value reads as a body).
KubeError ErrorFromStatus(int http_status, const nlohmann::json& status, const std::string& what);
// The object of a watch ERROR event (a metav1.Status; its code, else 500).
KubeError ErrorFromWatchEvent(const nlohmann::json& object, const std::string& what);

}  // namespace kmt::kube
