#include "webhook/shell.h"

#include <fmt/format.h>

#include <cctype>
#include <exception>
#include <optional>

#include "base/blocking.h"

namespace kmt::webhook {

std::string StatusJson(int code, std::string_view reason, std::string_view message) {
  Json status = {{"kind", "Status"},    {"apiVersion", "v1"}, {"metadata", Json::object()},
                 {"status", "Failure"}, {"message", message}, {"reason", reason},
                 {"code", code}};
  // Replace rather than throw on invalid UTF-8 (a message may quote the request).
  return status.dump(-1, ' ', false, Json::error_handler_t::replace);
}

std::string MediaType(std::string_view content_type) {
  std::string_view type = content_type.substr(0, content_type.find(';'));
  while (!type.empty() && std::isspace(static_cast<unsigned char>(type.front()))) {
    type.remove_prefix(1);
  }
  while (!type.empty() && std::isspace(static_cast<unsigned char>(type.back()))) {
    type.remove_suffix(1);
  }
  std::string out(type);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

namespace {

std::string EncodeAnswer(const AdmissionResponse& response) {
  return EncodeAdmissionReviewText(response);
}

}  // namespace

ReadResult ReadReview(std::string_view content_type, std::string_view body,
                      const ObjectReads* reads) {
  if (body.empty()) {
    return {ShellAnswer{400, StatusJson(400, "BadRequest", "request body is empty")}, {}};
  }
  if (MediaType(content_type) != "application/json") {
    return {ShellAnswer{415, StatusJson(415, "UnsupportedMediaType",
                                        fmt::format("contentType=\"{}\", expected application/json",
                                                    content_type))},
            {}};
  }
  DecodeResult decoded = DecodeAdmissionReview(body, reads);
  if (decoded.request) return {std::nullopt, std::move(*decoded.request), decoded.json_nodes};
  if (decoded.uid.empty()) {
    return {ShellAnswer{400, StatusJson(400, "BadRequest", decoded.error)}, {}};
  }
  AdmissionResponse response = Errored(400, decoded.error);
  response.uid = decoded.uid;
  return {ShellAnswer{200, EncodeAnswer(response)}, {}};
}

ShellAnswer DecideReview(const ReadResult& review, const Admitter& admit) {
  if (review.answer) return *review.answer;
  AdmissionResponse response;
  try {
    response = admit(review.request);
  } catch (const base::WouldBlock&) {
    throw;  // not a failure: the server decides this review again where it may wait
  } catch (const std::exception& e) {
    response = Errored(500, fmt::format("internal error: {}", e.what()));
  } catch (...) {
    response = Errored(500, "internal error: unknown exception");
  }
  response.uid = review.request.uid;
  return {200, EncodeAnswer(response)};
}

ShellAnswer ServeAdmission(std::string_view content_type, std::string_view body,
                           const Admitter& admit, const ObjectReads* reads) {
  return DecideReview(ReadReview(content_type, body, reads), admit);
}

}  // namespace kmt::webhook
