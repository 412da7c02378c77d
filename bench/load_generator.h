// bench/load_generator.h — an open-loop HTTPS load generator.
//
// Requests are due at fixed instants (request k at start + k/rate), whether or not earlier
// ones have been answered, so a slow server shows up as latency and not as a lower offered
// rate (no coordinated omission). `connections` threads each hold one keep-alive TLS
// connection (cpp-httplib's SSLClient, verifying the server) and take the next due
// request; when all are busy, requests wait and their lateness is recorded.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace kmt::bench {

struct LoadOptions {
  std::string host = "127.0.0.1";
  int port = 0;
  std::string ca_file;  // PEM the server's certificate verifies against
  // PEM files of a client certificate to present (e.g. to kube-apiserver); "" = none.
  std::string client_cert_file;
  std::string client_key_file;
  double rate = 1000;  // requests per second
  std::chrono::milliseconds duration{5000};
  int connections = 4;
  int ok_status = 200;  // the answer's status that counts as success (201 for a create)
};

struct LoadRequest {
  std::string path;
  std::string body;  // application/json
};

struct LoadResult {
  // Per answered request: from writing the request to reading the whole response.
  std::vector<double> service_seconds;
  // Per answered request: from the instant it was due to reading the response
  // (service time plus waiting for a free connection).
  std::vector<double> response_seconds;
  uint64_t sent = 0;
  // Transport failures, answers with another status than ok_status, `ok` refusing the body, and
  // requests dropped because they were still waiting for a connection a full duration (at least 2
  // s) after the run should have ended (that bounds the run's time).
  uint64_t errors = 0;
  std::string first_error;
  double elapsed_seconds = 0;  // first due instant to the last answer
};

// The offset of request k from the start at `rate` requests per second.
std::chrono::nanoseconds DueOffset(uint64_t k, double rate);

// How many requests a run of `duration` at `rate` offers (the ones due before its end).
uint64_t RequestCount(double rate, std::chrono::milliseconds duration);

// Runs the load; `make(k)` builds request k and `ok` judges a 200 answer's body (e.g. that it
// allows the request): both are called from the connection threads, at the same time.
LoadResult RunOpenLoop(const LoadOptions& options, const std::function<LoadRequest(uint64_t)>& make,
                       const std::function<bool(const std::string&)>& ok);

}  // namespace kmt::bench
