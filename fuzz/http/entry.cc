// fuzz/http/entry.cc — arbitrary bytes as what one client sends on one connection to the real
// event-driven server (http/server.h), over a real socket on 127.0.0.1, split into writes
// where the fuzzer says: request lines, headers, Content-Length and chunked bodies with
// extensions and trailers, pipelined requests.
//
// Input: byte 0 = k (bits 0-2, the number of split points); then k chunk lengths, one byte
// each; then the bytes sent. The client then half-closes and reads until the server closes.
// The server (one per process) has small limits so that the fuzzer reaches them: headers
// 1 KiB, chunk lines 64 bytes, bodies 4 KiB (/echo), none on GET /healthz, 8 KiB for all
// bodies together.
// Checks:
//   - the server closes the connection within 3 s of the half-close (every path ends);
//   - the output is whole answers one after another, each with a status the server may
//     send (200, 400, 404, 405, 413, 431, 503) and a Content-Length;
//   - once the connection is gone, no body bytes stay reserved (held_body_bytes() == 0)
//     and no connection stays open.
#include "fuzz/entry.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "base/poll.h"
#include "http/server.h"

namespace kmt::fuzz {
namespace {

using std::chrono::milliseconds;

http::Server& TheServer() {
  static http::Server* server = [] {
    http::ServerConfig c;
    c.address = "127.0.0.1";
    c.port = 0;
    c.max_header_bytes = 1024;
    c.max_chunk_line_bytes = 64;
    c.max_body_bytes = 4096;
    c.max_held_body_bytes = 8192;
    c.limits.headers = milliseconds(1000);
    c.limits.request = milliseconds(1500);
    c.limits.max_connections = 16;
    c.sweep_interval = milliseconds(20);
    c.handler_threads = 2;
    c.log = [](const http::LogRecord&) {};
    std::vector<http::Route> routes = {
        {"GET", "/healthz", [](const http::Request&) { return http::Response{}; }, true, ""},
        {"POST", "/echo",
         [](const http::Request& r) {
           http::Response out;
           out.body = r.body;
           return out;
         },
         false, ""},
    };
    auto* s = new http::Server(std::move(c), std::move(routes));  // lives for the process
    s->Start();
    return s;
  }();
  return *server;
}

// The server runs on its own threads: real time.
template <typename F>
bool Eventually(F done, milliseconds limit) {
  return base::PollUntil(base::SystemClock(), limit, milliseconds(1), done);
}

}  // namespace

std::string CheckTarget(std::string_view input) {
  http::Server& server = TheServer();
  std::vector<size_t> cuts;
  if (!input.empty()) {
    size_t k = static_cast<unsigned char>(input[0]) & 7;
    input.remove_prefix(1);
    for (size_t i = 0; i < k && !input.empty(); ++i) {
      cuts.push_back(static_cast<unsigned char>(input[0]));
      input.remove_prefix(1);
    }
  }
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return "";  // out of descriptors: nothing of the server's to judge
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(server.port()));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    close(fd);
    return "cannot connect to the server";
  }
  std::string answer;
  auto drain = [&](int wait_ms) {
    pollfd p{fd, POLLIN, 0};
    while (poll(&p, 1, wait_ms) > 0) {
      char buf[8192];
      ssize_t n = recv(fd, buf, sizeof(buf), 0);
      if (n <= 0) return true;  // closed
      answer.append(buf, static_cast<size_t>(n));
      wait_ms = 0;
    }
    return false;
  };
  bool closed = false;
  size_t off = 0;
  for (size_t i = 0; i <= cuts.size() && off < input.size() && !closed; ++i) {
    size_t len = i < cuts.size() ? std::min(cuts[i], input.size() - off) : input.size() - off;
    ssize_t n = send(fd, input.data() + off, len, MSG_NOSIGNAL);
    if (n < 0) break;  // the server closed first
    off += static_cast<size_t>(n);
    closed = drain(0);
  }
  shutdown(fd, SHUT_WR);
  closed = closed || base::PollUntil(base::SystemClock(), milliseconds(3000),
                                     base::Duration::zero(), [&] { return drain(50); });
  close(fd);
  if (!closed) return "the server kept the connection open 3 s after the client half-closed";

  // The answers, one after another: status line, headers, Content-Length bytes of body (the
  // server always sends Content-Length).
  static const std::set<std::string> kStatuses = {"200", "400", "404", "405", "413", "431", "503"};
  for (size_t pos = 0; pos < answer.size();) {
    if (answer.compare(pos, 9, "HTTP/1.1 ") != 0) {
      return "an answer does not start with a status line: " + answer.substr(pos, 20);
    }
    const std::string status = answer.substr(pos + 9, 3);
    if (kStatuses.count(status) == 0) return "unexpected status line: " + answer.substr(pos, 20);
    const size_t end = answer.find("\r\n\r\n", pos);
    if (end == std::string::npos) return "an answer's headers do not end";
    const std::string head = answer.substr(pos, end - pos);
    const size_t cl = head.find("\r\nContent-Length: ");
    if (cl == std::string::npos) return "an answer without Content-Length";
    const size_t length = std::stoul(head.substr(cl + 18));
    pos = end + 4 + length;
  }
  if (!Eventually([&] { return server.held_body_bytes() == 0; }, milliseconds(2000))) {
    return "body bytes still reserved after the connection closed: " +
           std::to_string(server.held_body_bytes());
  }
  if (!Eventually([&] { return server.open_connections() == 0; }, milliseconds(2000))) {
    return "a connection is still open after the client's closed: " +
           std::to_string(server.open_connections());
  }
  return "";
}

}  // namespace kmt::fuzz
