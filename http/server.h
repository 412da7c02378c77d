// http/server.h — an event-driven HTTP/1.1 server (Boost.Asio, Boost.Beast's parser,
// OpenSSL) that idle, slow or hostile clients cannot stop: the admission webhook's, the
// probes' and the metrics' server.
//
// I/O. io_threads run every accept, handshake, read and write asynchronously; no thread
// ever blocks on a client. Each connection moves through the phases of
// http/connection_table.h, each with a deadline (handshake 2 s, headers 5 s, body until
// 30 s after the request began, write 10 s, keep-alive idle 60 s); a sweep every
// sweep_interval closes what is past its deadline, so a deadline is kept to within one
// sweep. At most limits.max_connections are open; one more evicts the longest-idle
// droppable connection (never one whose request is being handled or answered). Accept
// errors such as EMFILE pause accepting for a moment instead of spinning.
//
// Requests. Headers over max_header_bytes → 431; a body over its route's cap → 413, decided
// from Content-Length before any of the body is read, or as soon as a chunked body passes
// the cap; both close the connection. A route's cap is Route::max_body_bytes, else none
// for GET (any body is refused) and max_body_bytes for other methods. Unknown paths → 404,
// a known path with another method → 405; when such a request announces a body, the
// answer closes the connection instead of reading it.
//
// Bytes a client can make the server hold are bounded before they are parsed, on every
// port: each connection's read buffer holds at most max_header_bytes + 1 KiB (the headers
// must fit in it whole); a chunk-size line with its extensions, or a chunked body's
// trailer section, over max_chunk_line_bytes → 400 and close (Go's net/http caps a chunk
// line at 4 KiB); and every body in flight on every connection together holds at most
// max_held_body_bytes — a Content-Length body reserves its length before it is read, a
// chunked one reserves as it grows, the reservation ends when the answer is written — and
// a request that would pass it gets 503 with Retry-After: 1 and the connection closes.
// After an answer that held a large body, freed heap memory is handed back to the system. A route's
// handler runs on the handler pool (http/handler_pool.h), or on the I/O thread when it is marked
// `inline_handler` (for trivial answers such as /healthz); when the pool's queue is full the answer
// is 503 with Retry-After: 1. A handler that throws gets a 500. Error bodies come from
// `error_body`, so the admission server answers them with a metav1.Status.
//
// HTTP/1.1 only (ALPN is not offered): see webhook/README.md for why not HTTP/2.
//
// Drain() keeps serving, but every answer from then on carries Connection: close and its
// connection closes after it: clients that pooled a connection to this server move to another
// (a replica being replaced keeps answering while its Service stops routing to it, and no pooled
// connection is closed under a request). Stop() stops accepting, closes idle connections, lets
// requests in flight be answered (for at most stop_grace), then joins every thread.
#pragma once

#include <openssl/ssl.h>

#include <any>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/clock.h"
#include "base/log.h"
#include "http/connection_table.h"

namespace kmt::http {

struct Request {
  std::string method;  // "GET", "POST"
  std::string target;  // as sent: "/readyz?verbose"
  std::string path;    // target without the query: "/readyz"
  std::string query;   // after '?', "" when none
  std::string content_type;
  // The Authorization header as sent ("" when absent; a repeated header: the first).
  std::string authorization;
  std::string body;
  // Route::try_inline_max_body: what the handler's attempt on the I/O thread kept for its run
  // on the handler pool, should the attempt have waited (the admission server's decoded
  // review), so that run does not redo it. The handler sets it during the attempt; the pool's
  // run gets the same Request. Empty otherwise.
  mutable std::any carried;
};

struct Response {
  int status = 200;
  std::string content_type = "text/plain";
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;  // extra headers
  bool close = false;                                        // Connection: close after it
};

struct Route {
  Route(std::string m, std::string p, std::function<Response(const Request&)> h,
        bool inline_h = false, std::string label = {}, std::optional<size_t> max_body = {})
      : method(std::move(m)),
        path(std::move(p)),
        handle(std::move(h)),
        inline_handler(inline_h),
        metric_label(std::move(label)),
        max_body_bytes(max_body) {}

  std::string method;  // "GET", "POST"
  std::string path;    // exact
  std::function<Response(const Request&)> handle;
  bool inline_handler = false;  // run on the I/O thread: only for answers that never block
  std::string metric_label;     // non-empty: reported to the observer under this label
  // The largest body this route reads; unset: none for GET, ServerConfig::max_body_bytes
  // for other methods.
  std::optional<size_t> max_body_bytes;
  // A request whose body is at most this many bytes is first handled on the I/O thread that
  // read it, inside a base::NonBlockingScope: when the handler returns, its answer is written
  // at once, with no hand-off to another thread; when it reaches a call that would wait
  // (base::WouldBlock, base/blocking.h), the attempt is dropped and the request goes to the
  // handler pool, where the handler runs again from the start (with what the attempt left in
  // Request::carried). 0: never (the pool always).
  // Bounded so that a large body's parse never holds up the I/O thread's other connections.
  size_t try_inline_max_body = 0;
};

// Hooks for metrics. Called from I/O and handler threads: implementations are thread-safe
// and fast.
class ServerObserver {
 public:
  virtual ~ServerObserver() = default;
  virtual void ConnectionOpened() {}
  virtual void ConnectionClosed(CloseReason /*reason*/) {}
  // A request for a route with a metric label: its headers were read.
  virtual void RequestStarted(const std::string& /*label*/) {}
  // Its response was written (or the connection failed while writing it): status, and the
  // time from the end of its headers.
  virtual void RequestFinished(const std::string& /*label*/, int /*status*/,
                               std::chrono::duration<double> /*elapsed*/) {}
  // Its handler's attempt on the I/O thread would have waited: it goes to the handler pool
  // (Route::try_inline_max_body).
  virtual void RequestDeferred(const std::string& /*label*/) {}
};

// One record of a server's log, as data (tests and callers read it), rendered into a
// base::Logger by LogTo below and nowhere else.
struct LogRecord {
  bool error = false;
  std::string msg;
  std::vector<std::pair<std::string, std::string>> fields;
};

using LogSink = std::function<void(const LogRecord&)>;

// The one place a server's record becomes a log line: its message at error level when
// `record.error`, else info; `context`'s fields (e.g. component=webhook) first, then its own.
void LogTo(base::Logger& log, const LogRecord& record,
           const std::vector<std::pair<std::string, std::string>>& context = {});

// A sink that renders every record into `log` with LogTo; `log` outlives the sink's users.
LogSink SinkTo(base::Logger& log, std::vector<std::pair<std::string, std::string>> context = {});

// The log of a server no one gave one: LogTo a text logger on standard error (info level,
// the system clock).
void LogToStderr(const LogRecord& record);

struct ServerConfig {
  std::string address = "0.0.0.0";
  int port = 0;  // 0: any free port (see Server::port())
  Limits limits;
  size_t max_header_bytes = 16 * 1024;
  size_t max_body_bytes = size_t{7} * 1024 * 1024;  // routes that set no cap of their own
  size_t max_chunk_line_bytes = 4096;               // chunk-size line + extensions; trailers
  // Bodies held by all connections together (0: no bound).
  size_t max_held_body_bytes = size_t{64} * 1024 * 1024;
  size_t io_threads = 1;
  size_t handler_threads = 4;
  size_t handler_queue = 1024;
  // Route::try_inline_max_body applies only while at most this many connections are open.
  // Beyond it the server is being flooded (a healthy cluster's API servers keep a few
  // connections each): the I/O threads owe other connections handshakes and reads, so every
  // request goes to the handler pool, whose threads also write the answers, off the I/O
  // threads.
  size_t inline_max_connections = 64;
  std::chrono::milliseconds sweep_interval{100};
  std::chrono::milliseconds stop_grace{5000};
  // Tells the connections' deadlines (the table's time; the sweep itself runs on an Asio timer
  // every sweep_interval) and waits out stop_grace; not owned. Null: base::SystemClock().
  base::Clock* clock = nullptr;
  // TLS when set: called once on the server's SSL_CTX (versions, ciphers, certificate);
  // returns false when it cannot be set up (Start() then throws). Plain HTTP when empty.
  std::function<bool(SSL_CTX*)> configure_tls;
  // The body of the server's own error answers (404, 405, 413, 431, 500, 503).
  std::function<Response(int status, std::string_view message)> error_body;
  LogSink log;                         // default: LogToStderr
  ServerObserver* observer = nullptr;  // not owned; outlives the server
};

class Server {
 public:
  Server(ServerConfig config, std::vector<Route> routes);
  ~Server();  // Stop()
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // Binds (throws std::runtime_error naming the address when it cannot, or when TLS cannot
  // be set up) and starts the I/O threads. Call once.
  void Start();
  // Idempotent; see the banner.
  void Drain();
  // Idempotent; see the banner.
  void Stop();

  int port() const;  // the bound port; 0 before Start()
  size_t open_connections() const;
  // Bytes of request bodies reserved now, by all connections (see the banner).
  size_t held_body_bytes() const;
  bool running() const;
  // Requests for routes with try_inline_max_body answered on the I/O thread, and those whose
  // inline attempt would have waited and were handed to the pool, since Start().
  size_t answered_inline() const;
  size_t deferred_to_pool() const;

  class Impl;

 private:
  std::shared_ptr<Impl> impl_;
};

}  // namespace kmt::http
