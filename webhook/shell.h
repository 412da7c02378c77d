// webhook/shell.h — the HTTP-independent part of the admission shell: from a request's
// content type and body to the HTTP status and JSON the server sends back.
//
// Strict like controller-runtime's webhook handler (pkg/webhook/admission/http.go):
//   - an empty body                              → HTTP 400
//   - a Content-Type other than application/json → HTTP 415 (parameters such as
//     "; charset=utf-8" are accepted)
//   - a body that is not an AdmissionReview      → HTTP 400, or an admission response with
//     code 400 when the request uid could still be read
//   - an admitter that throws                    → an admission response with code 500
//     that still echoes the request uid
// HTTP errors carry a metav1.Status body. Every admission response echoes the request uid,
// whatever the admitter put there. Nothing here throws on any input (the fuzz target in
// webhook/fuzz drives it with arbitrary bytes).
#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "webhook/admission.h"

namespace kmt::webhook {

// An admitter: a function of the request (plus what it captured) returning the answer.
// It may throw; the shell turns that into a 500 admission response.
using Admitter = std::function<AdmissionResponse(const AdmissionRequest&)>;

struct ShellAnswer {
  int http_status = 200;
  std::string body;  // JSON: an AdmissionReview, or a metav1.Status when http_status != 200
};

// With `reads`, the review's object holds only the members the admitter reads (ObjectReads).
// The same as DecideReview(ReadReview(content_type, body, reads), admit).
ShellAnswer ServeAdmission(std::string_view content_type, std::string_view body,
                           const Admitter& admit, const ObjectReads* reads = nullptr);

// ServeAdmission in two halves, so that a review decided twice (the admission server's
// attempt on its I/O thread, then on a worker: webhook/server.h) is read once.
// The body checked and decoded: `answer` when that alone decides the HTTP answer (an empty
// body, another content type, a review that cannot be decoded), else `request`.
struct ReadResult {
  std::optional<ShellAnswer> answer;
  AdmissionRequest request;
  size_t json_nodes = 0;  // the body's (DecodeResult::json_nodes), 0 when not decoded
};
ReadResult ReadReview(std::string_view content_type, std::string_view body,
                      const ObjectReads* reads = nullptr);
// The answer to a review ReadReview read: its `answer`, or `admit`'s. base::WouldBlock from
// `admit` passes through (the review is decided again where it may wait); any other exception
// becomes a 500 admission response.
ShellAnswer DecideReview(const ReadResult& review, const Admitter& admit);

// A metav1.Status JSON body (kind Status, status Failure).
std::string StatusJson(int code, std::string_view reason, std::string_view message);

// "application/json; charset=utf-8" → "application/json": the media type, lower case.
std::string MediaType(std::string_view content_type);

}  // namespace kmt::webhook
