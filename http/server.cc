#include "http/server.h"

#include <fmt/format.h>
#include <linux/sockios.h>
#include <sys/ioctl.h>

#include <boost/asio.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <condition_variable>
#include <cstring>
#include <exception>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <thread>
#include <unordered_map>

#include "base/blocking.h"
#include "base/heap.h"
#include "http/handler_pool.h"

namespace kmt::http {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace bhttp = boost::beast::http;
using tcp = asio::ip::tcp;
using Id = ConnectionTable::Id;

namespace {

// How long a connection closed after an error answer (413, 431, 400) keeps reading and
// discarding what the client still sends, so that closing does not reset the connection
// before the client has read the answer (Go's net/http waits 500 ms for the same reason).
constexpr std::chrono::milliseconds kLinger{500};
// How long accepting pauses after EMFILE and the like.
constexpr std::chrono::milliseconds kAcceptPause{100};
// The largest answer a handler thread writes itself (see Session::WriteNow), and how much
// larger than it the socket's send buffer must be.
constexpr size_t kWriteNowMaxBytes = 4096;
constexpr int kWriteNowSendBufferFactor = 4;
// A connection's read buffer may hold the headers whole plus this much.
constexpr size_t kReadBufferSlack = 1024;
// A connection going idle keeps a read buffer of at most this capacity.
constexpr size_t kIdleBufferBytes = 8 * 1024;
// A chunk-size line holds at most this many hex digits (a 64-bit size) besides extensions.
constexpr size_t kMaxChunkSizeDigits = 16;
// Once a body at least this large has been let go, or this many connections have closed
// (each held TLS state), freed heap memory goes back to the system at the next sweep, at
// most once per kTrimInterval.
constexpr size_t kTrimAfterBytes = 1024 * 1024;
constexpr size_t kTrimAfterCloses = 64;
constexpr std::chrono::milliseconds kTrimInterval{1000};

Response DefaultErrorBody(int status, std::string_view message) {
  Response r;
  r.status = status;
  r.content_type = "text/plain";
  r.body = std::string(message);
  return r;
}

}  // namespace

void LogTo(base::Logger& log, const LogRecord& record,
           const std::vector<std::pair<std::string, std::string>>& context) {
  const base::LogLevel level = record.error ? base::LogLevel::kError : base::LogLevel::kInfo;
  if (context.empty()) {
    log.Log(level, record.msg, record.fields);
    return;
  }
  std::vector<std::pair<std::string, std::string>> fields = context;
  fields.insert(fields.end(), record.fields.begin(), record.fields.end());
  log.Log(level, record.msg, fields);
}

LogSink SinkTo(base::Logger& log, std::vector<std::pair<std::string, std::string>> context) {
  return [&log, context = std::move(context)](const LogRecord& record) {
    LogTo(log, record, context);
  };
}

void LogToStderr(const LogRecord& record) {
  // Never destroyed: servers may still log while static objects are torn down.
  static base::Logger& log =
      *new base::Logger(base::SystemClock(), base::LogLevel::kInfo, base::LogFormat::kText);
  LogTo(log, record);
}

// The part of a connection the server can reach from outside its strand.
class SessionBase {
 public:
  virtual ~SessionBase() = default;
  // Closes the socket at once; the server has already removed the connection from its table.
  virtual void Abort() = 0;
  virtual asio::any_io_executor executor() = 0;
};

class Server::Impl {
 public:
  // Before the io_context, so that connections destroyed with it can still give back what
  // they reserved.
  std::atomic<size_t> held_body{0};  // bytes of request bodies reserved by all connections
  std::atomic<bool> trim_due{false};
  std::atomic<size_t> closes_since_trim{0};
  base::SteadyTime last_trim{};  // the sweep's only
  // First member, so destroyed last: handlers still queued when the server stops (and the
  // connections they own) are destroyed while everything they point to is still alive.
  asio::io_context ioc;
  ServerConfig cfg;
  base::Clock& clock;  // cfg.clock, or the system clock
  std::vector<Route> routes;
  std::optional<asio::ssl::context> ssl;
  tcp::acceptor acceptor{asio::make_strand(ioc)};
  asio::steady_timer sweep{ioc};
  asio::steady_timer accept_pause{acceptor.get_executor()};
  // Keeps the I/O threads running while a connection has no operation pending (its handler
  // runs on the pool) until Stop() is done with them.
  std::optional<asio::executor_work_guard<asio::io_context::executor_type>> work;
  std::unique_ptr<HandlerPool> pool;
  std::vector<std::thread> threads;

  mutable std::mutex mu;
  std::condition_variable drained;
  ConnectionTable table;                                        // guarded by mu
  std::unordered_map<Id, std::weak_ptr<SessionBase>> sessions;  // guarded by mu
  std::string last_accept_error;                                // accept strand only

  std::atomic<size_t> open_count{0};        // table.size(), readable without the lock
  std::atomic<size_t> answered_inline{0};   // Route::try_inline_max_body: on the I/O thread
  std::atomic<size_t> deferred_to_pool{0};  // ... and handed to the pool (it would wait)
  std::atomic<bool> stopping{false};
  std::atomic<bool> draining{false};  // Drain(): answers close their connections
  std::atomic<int> port{0};
  bool started = false;
  bool stopped = false;

  size_t largest_body = 0;  // of every route's cap: the parser's limit until a route is known

  Impl(ServerConfig c, std::vector<Route> r)
      : cfg(std::move(c)),
        clock(cfg.clock ? *cfg.clock : base::SystemClock()),
        routes(std::move(r)),
        table(cfg.limits) {
    if (!cfg.error_body) cfg.error_body = DefaultErrorBody;
    for (const Route& route : routes) largest_body = std::max(largest_body, BodyCap(&route));
  }

  // The largest body `route` reads (none without a route).
  size_t BodyCap(const Route* route) const {
    if (route == nullptr) return 0;
    if (route->max_body_bytes) return *route->max_body_bytes;
    return route->method == "GET" ? 0 : cfg.max_body_bytes;
  }

  // Reserves `n` bytes of the budget for bodies in flight; false when they would pass it.
  bool Reserve(size_t n) {
    if (cfg.max_held_body_bytes == 0) {
      held_body += n;
      return true;
    }
    size_t now = held_body.load();
    do {
      if (n > cfg.max_held_body_bytes || now > cfg.max_held_body_bytes - n) return false;
    } while (!held_body.compare_exchange_weak(now, now + n));
    return true;
  }

  void Release(size_t n) {
    held_body -= n;
    if (n >= kTrimAfterBytes) trim_due = true;
  }

  void Log(bool error, std::string msg, std::vector<std::pair<std::string, std::string>> fields) {
    LogRecord rec{error, std::move(msg), std::move(fields)};
    (cfg.log ? cfg.log : LogToStderr)(rec);
  }

  const Route* FindRoute(std::string_view path, std::string_view method, bool* path_known) const {
    *path_known = false;
    for (const Route& r : routes) {
      if (r.path != path) continue;
      *path_known = true;
      if (r.method == method) return &r;
    }
    return nullptr;
  }

  // --- the connection table, with the observer told of every change ---

  // A connection the table has just let go of (expired, evicted, closed at stop): its session
  // leaves the map, the observer hears why, and the caller aborts what is returned (if it is
  // still alive). Called with mu held.
  std::shared_ptr<SessionBase> TakeLocked(Id id, CloseReason reason) {
    std::shared_ptr<SessionBase> s;
    auto it = sessions.find(id);
    if (it != sessions.end()) {
      s = it->second.lock();
      sessions.erase(it);
    }
    if (cfg.observer) cfg.observer->ConnectionClosed(reason);
    ++closes_since_trim;
    return s;
  }

  ConnectionTable::Admission Open(Phase first, std::string_view source,
                                  const std::shared_ptr<SessionBase>& s,
                                  std::shared_ptr<SessionBase>* victim) {
    std::scoped_lock lock(mu);
    ConnectionTable::Admission a = table.Open(first, clock.Now(), source);
    if (a.evicted) *victim = TakeLocked(*a.evicted, CloseReason::kEvicted);
    if (cfg.observer) cfg.observer->ConnectionOpened();
    if (a.admitted) {
      sessions.emplace(a.id, s);
    } else if (cfg.observer) {
      cfg.observer->ConnectionClosed(CloseReason::kRefused);
    }
    open_count.store(table.size(), std::memory_order_relaxed);
    return a;
  }

  bool Enter(Id id, Phase phase) {
    std::scoped_lock lock(mu);
    return table.Enter(id, phase, clock.Now());
  }

  void Touch(Id id) {
    std::scoped_lock lock(mu);
    table.Touch(id, clock.Now());
  }

  // The connection leaves the table (once); false when it had already left.
  bool Remove(Id id, CloseReason reason) {
    std::scoped_lock lock(mu);
    sessions.erase(id);
    if (!table.Close(id)) return false;
    if (cfg.observer) cfg.observer->ConnectionClosed(reason);
    ++closes_since_trim;
    open_count.store(table.size(), std::memory_order_relaxed);
    if (table.size() == 0) drained.notify_all();
    return true;
  }

  static void AbortAll(const std::vector<std::shared_ptr<SessionBase>>& victims) {
    for (const auto& s : victims) {
      if (s) asio::post(s->executor(), [s] { s->Abort(); });
    }
  }

  void Sweep() {
    std::vector<std::shared_ptr<SessionBase>> victims;
    {
      std::scoped_lock lock(mu);
      for (const auto& [id, reason] : table.Expire(clock.Now())) {
        victims.push_back(TakeLocked(id, reason));
      }
      open_count.store(table.size(), std::memory_order_relaxed);
      if (table.size() == 0) drained.notify_all();
    }
    AbortAll(victims);
  }

  void MaybeTrim() {
    const auto now = clock.Now();
    if (now - last_trim < kTrimInterval) return;
    if (!trim_due.load() && closes_since_trim.load() < kTrimAfterCloses) return;
    trim_due = false;
    closes_since_trim = 0;
    last_trim = now;
    base::TrimHeap();
  }

  void ScheduleSweep() {
    sweep.expires_after(cfg.sweep_interval);
    sweep.async_wait([this](const boost::system::error_code& ec) {
      if (ec || stopping) return;
      Sweep();
      MaybeTrim();
      ScheduleSweep();
    });
  }

  // Closes every connection that is not handling or answering a request.
  void CloseIdle() {
    std::vector<std::shared_ptr<SessionBase>> victims;
    {
      std::scoped_lock lock(mu);
      for (Id id : table.Ids()) {
        std::optional<Phase> p = table.PhaseOf(id);
        if (p == Phase::kHandling || p == Phase::kWriting) continue;
        table.Close(id);
        victims.push_back(TakeLocked(id, CloseReason::kDone));
      }
      open_count.store(table.size(), std::memory_order_relaxed);
      if (table.size() == 0) drained.notify_all();
    }
    AbortAll(victims);
  }

  void Accept();
  void OnAccept(tcp::socket socket);
};

namespace {

template <class Stream>
class Session : public SessionBase, public std::enable_shared_from_this<Session<Stream>> {
 public:
  static constexpr bool kTls = !std::is_same_v<Stream, tcp::socket>;

  // A TLS connection keeps only its socket until its first byte arrives: the TLS stream
  // (OpenSSL's state and the two record buffers of the stream, ~70 KiB) is made then, so a
  // silent connection costs little.
  Session(Server::Impl& server, tcp::socket socket, asio::ssl::context* ssl)
      : server_(server),
        executor_(socket.get_executor()),
        ssl_(ssl),
        buffer_(std::max(server.cfg.max_header_bytes, server.cfg.max_chunk_line_bytes) +
                kReadBufferSlack) {
    if constexpr (kTls) {
      socket_.emplace(std::move(socket));
    } else {
      stream_.emplace(std::move(socket));
    }
    // The parser keeps references to these; they check each chunk as it is parsed.
    on_chunk_header_ = [this](std::uint64_t, beast::string_view extensions,
                              boost::system::error_code& ec) {
      if (extensions.size() + kMaxChunkSizeDigits > server_.cfg.max_chunk_line_bytes) {
        refusal_ = Refusal::kChunkLine;
        ec = bhttp::error::bad_chunk_extension;
      }
    };
    on_chunk_body_ = [this](std::uint64_t, beast::string_view data,
                            boost::system::error_code& ec) -> size_t {
      if (!server_.Reserve(data.size())) {
        refusal_ = Refusal::kBudget;
        ec = bhttp::error::bad_chunk;
        return 0;
      }
      reserved_ += data.size();
      parser_->get().body().append(data.data(), data.size());
      return data.size();
    };
  }

  ~Session() override {
    if (reserved_ > 0) server_.Release(reserved_);
  }

  void set_id(Id id) { id_ = id; }

  asio::any_io_executor executor() override { return executor_; }

  void Abort() override {
    closed_ = true;
    boost::system::error_code ignored;
    if (stream_) beast::get_lowest_layer(*stream_).close(ignored);
    if (socket_) socket_->close(ignored);
  }

  void Start() {
    if constexpr (kTls) {
      phase_ = Phase::kHandshake;
      socket_->async_wait(tcp::socket::wait_read,
                          [self = this->shared_from_this()](const boost::system::error_code& ec) {
                            self->OnFirstByte(ec);
                          });
    } else {
      phase_ = Phase::kHeaders;
      ReadRequest();
    }
  }

 private:
  void OnFirstByte(const boost::system::error_code& ec) {
    if constexpr (kTls) {
      if (closed_) return;
      if (ec) return Finish(CloseReason::kError);
      stream_.emplace(std::move(*socket_), *ssl_);
      socket_.reset();
      stream_->async_handshake(
          asio::ssl::stream_base::server,
          [self = this->shared_from_this()](const boost::system::error_code& hec) {
            self->OnHandshake(hec);
          });
    }
  }

  void OnHandshake(const boost::system::error_code& ec) {
    if (closed_) return;
    if (ec) return Finish(CloseReason::kError);
    phase_ = Phase::kHeaders;
    server_.Enter(id_, Phase::kHeaders);
    ReadRequest();
  }

  void ReadRequest() {
    parser_.emplace();
    parser_->header_limit(static_cast<std::uint32_t>(server_.cfg.max_header_bytes));
    // Until the route is known (when the headers are done), the largest any route takes.
    parser_->body_limit(server_.largest_body);
    parser_->on_chunk_header(on_chunk_header_);
    parser_->on_chunk_body(on_chunk_body_);
    refusal_ = Refusal::kNone;
    route_ = nullptr;
    path_known_ = false;
    observed_ = false;
    ReadSome();
  }

  void ReadSome() {
    bhttp::async_read_some(*stream_, buffer_, *parser_,
                           [self = this->shared_from_this()](const boost::system::error_code& ec,
                                                             size_t n) { self->OnRead(ec, n); });
  }

  void OnRead(const boost::system::error_code& ec, size_t n) {
    if (closed_) return;
    if (refusal_ == Refusal::kChunkLine) return FailChunkLine();
    if (refusal_ == Refusal::kBudget) return FailBudget();
    if (ec == bhttp::error::body_limit) {
      LocateRoute();
      if (route_ && !route_->metric_label.empty() && server_.cfg.observer && !observed_) {
        observed_ = true;
        server_.cfg.observer->RequestStarted(route_->metric_label);
      }
      if (!route_) return FailNoRoute();
      return Fail(413, fmt::format("request body exceeds {} bytes", server_.BodyCap(route_)));
    }
    if (ec == bhttp::error::buffer_overflow) {
      // The read buffer is full of what the parser cannot take yet: headers (the parser's
      // own limit is met first when the buffer is larger) or a chunk line or trailer.
      if (!parser_->is_header_done()) {
        return Fail(431,
                    fmt::format("request headers exceed {} bytes", server_.cfg.max_header_bytes));
      }
      return FailChunkLine();
    }
    if (ec == bhttp::error::header_limit) {
      return Fail(431,
                  fmt::format("request headers exceed {} bytes", server_.cfg.max_header_bytes));
    }
    if (ec) {
      const bool peer_gone = ec == bhttp::error::end_of_stream || ec == asio::error::eof ||
                             ec == asio::error::connection_reset ||
                             ec == asio::ssl::error::stream_truncated;
      if (peer_gone) return Finish(CloseReason::kPeerClosed);
      if (ec.category() == bhttp::make_error_code(bhttp::error::bad_target).category()) {
        return Fail(400, "malformed HTTP request: " + ec.message());
      }
      return Finish(CloseReason::kError);
    }
    if (n > 0) {
      if (phase_ == Phase::kIdle) {
        phase_ = Phase::kHeaders;
        server_.Enter(id_, Phase::kHeaders);
      } else {
        server_.Touch(id_);
      }
    }
    if (phase_ == Phase::kHeaders && parser_->is_header_done()) {
      phase_ = Phase::kBody;
      server_.Enter(id_, Phase::kBody);
      headers_done_ = server_.clock.Now();
      LocateRoute();
      if (route_ && !route_->metric_label.empty() && server_.cfg.observer) {
        observed_ = true;
        server_.cfg.observer->RequestStarted(route_->metric_label);
      }
      if (!parser_->is_done() && !AdmitBody()) return;
    }
    // A trailer section is parsed once whole, into the message's fields. (An unfinished
    // chunk line or trailer stays in the read buffer, whose cap ends it: buffer_overflow.)
    if (parser_->chunked() && phase_ == Phase::kBody && parser_->is_done() &&
        FieldBytes() - header_bytes_ > server_.cfg.max_chunk_line_bytes) {
      return FailChunkLine();
    }
    if (parser_->is_done()) return Dispatch();
    ReadSome();
  }

  size_t FieldBytes() const {
    size_t bytes = 0;
    for (const auto& field : parser_->get()) {
      bytes += field.name_string().size() + field.value().size() + 4;
    }
    return bytes;
  }

  // The headers are done and a body follows: it must fit the route's cap and the server's
  // budget. False when the request has been answered (and the connection will close).
  bool AdmitBody() {
    if (!route_) {
      FailNoRoute();
      return false;
    }
    const size_t cap = server_.BodyCap(route_);
    if (auto length = parser_->content_length()) {
      if (*length > cap) {
        Fail(413, fmt::format("request body exceeds {} bytes", cap));
        return false;
      }
      if (!server_.Reserve(static_cast<size_t>(*length))) {
        FailBudget();
        return false;
      }
      reserved_ = static_cast<size_t>(*length);
    } else if (cap == 0) {
      Fail(413, "this path takes no request body");
      return false;
    } else {
      parser_->body_limit(cap);
      header_bytes_ = FieldBytes();
    }
    // From here each read parses everything the buffer holds (the chunk callbacks check and
    // reserve each piece as it is parsed).
    parser_->eager(true);
    return true;
  }

  void LocateRoute() {
    const auto& msg = parser_->get();
    std::string_view target(msg.target().data(), msg.target().size());
    std::string_view path = target.substr(0, target.find('?'));
    std::string_view method(msg.method_string().data(), msg.method_string().size());
    route_ = server_.FindRoute(path, method, &path_known_);
    if (!observed_ && headers_done_ == base::SteadyTime{}) headers_done_ = server_.clock.Now();
  }

  void Dispatch() {
    phase_ = Phase::kHandling;
    server_.Enter(id_, Phase::kHandling);
    bhttp::request<bhttp::string_body> msg = parser_->release();
    keep_alive_ = msg.keep_alive();
    if (!route_) {
      return Respond(path_known_ ? server_.cfg.error_body(405, "method not allowed")
                                 : server_.cfg.error_body(404, "not found"));
    }
    Request req;
    req.method = std::string(msg.method_string());
    req.target = std::string(msg.target());
    size_t q = req.target.find('?');
    req.path = req.target.substr(0, q);
    if (q != std::string::npos) req.query = req.target.substr(q + 1);
    if (auto it = msg.find(bhttp::field::content_type); it != msg.end()) {
      req.content_type = std::string(it->value());
    }
    if (auto it = msg.find(bhttp::field::authorization); it != msg.end()) {
      req.authorization = std::string(it->value());
    }
    req.body = std::move(msg.body());
    const Route* route = route_;
    if (route->inline_handler) return Respond(Invoke(*route, req));
    if (route->try_inline_max_body > 0 && req.body.size() <= route->try_inline_max_body &&
        server_.open_count.load(std::memory_order_relaxed) <= server_.cfg.inline_max_connections) {
      if (std::optional<Response> answer = TryInline(*route, req)) {
        return Respond(std::move(*answer));
      }
    }
    // The handler thread starts the answer itself instead of posting it back to the I/O
    // thread (one cross-thread wake-up less on every request). That is safe because while a
    // connection is kHandling nothing else touches it: no operation of its own is pending,
    // its phase has no deadline, eviction skips it and Stop() waits for it; the write's
    // completion runs on the connection's strand as usual. Submitting is the last thing the
    // I/O thread does with the connection.
    bool queued = server_.pool->TrySubmit(
        [self = this->shared_from_this(), route, req = std::move(req)]() mutable {
          self->Respond(self->Invoke(*route, req), /*on_handler_thread=*/true);
        });
    if (!queued) {
      Response busy = server_.cfg.error_body(503, "the server is busy; retry");
      busy.headers.emplace_back("Retry-After", "1");
      Respond(std::move(busy));
    }
  }

  // The handler on the I/O thread, unless it would wait (then nullopt: the pool's turn).
  std::optional<Response> TryInline(const Route& route, const Request& req) {
    Response r;
    try {
      base::NonBlockingScope no_waiting;
      r = route.handle(req);
    } catch (const base::WouldBlock&) {
      server_.deferred_to_pool.fetch_add(1, std::memory_order_relaxed);
      if (server_.cfg.observer && !route.metric_label.empty()) {
        server_.cfg.observer->RequestDeferred(route.metric_label);
      }
      return std::nullopt;
    } catch (...) {
      r = HandlerFailed(req);
    }
    server_.answered_inline.fetch_add(1, std::memory_order_relaxed);
    return r;
  }

  Response Invoke(const Route& route, const Request& req) {
    try {
      return route.handle(req);
    } catch (...) {
      return HandlerFailed(req);
    }
  }

  // The answer to a handler that threw: called inside its catch block.
  Response HandlerFailed(const Request& req) {
    try {
      throw;
    } catch (const std::exception& e) {
      server_.Log(true, "Failed to handle request", {{"path", req.path}, {"error", e.what()}});
    } catch (...) {
      server_.Log(true, "Failed to handle request", {{"path", req.path}, {"error", "unknown"}});
    }
    return server_.cfg.error_body(500, "internal error");
  }

  // A request for no route that announces a body: answered without reading it.
  void FailNoRoute() {
    Fail(path_known_ ? 405 : 404, path_known_ ? "method not allowed" : "not found");
  }

  void FailChunkLine() {
    Fail(400, fmt::format("a chunk-size line, its extensions or the trailer exceed {} bytes",
                          server_.cfg.max_chunk_line_bytes));
  }

  void FailBudget() {
    Fail(503, "the server holds too many request bodies; retry", {{"Retry-After", "1"}});
  }

  // An error answer to a request that cannot be read further: then the connection closes.
  void Fail(int status, const std::string& message,
            std::vector<std::pair<std::string, std::string>> headers = {}) {
    keep_alive_ = false;
    Response r = server_.cfg.error_body(status, message);
    for (auto& h : headers) r.headers.push_back(std::move(h));
    r.close = true;
    linger_ = true;
    Respond(std::move(r));
  }

  void Respond(Response r, bool on_handler_thread = false) {
    if (closed_) return;
    phase_ = Phase::kWriting;
    server_.Enter(id_, Phase::kWriting);
    status_ = r.status;
    res_ = std::make_shared<bhttp::response<bhttp::string_body>>();
    auto& res = *res_;
    res.version(11);
    res.result(static_cast<unsigned>(r.status));
    res.set(bhttp::field::content_type, r.content_type);
    res.set("X-Content-Type-Options", "nosniff");
    for (const auto& [k, v] : r.headers) res.set(k, v);
    res.body() = std::move(r.body);
    keep_alive_ = keep_alive_ && !r.close && !server_.stopping && !server_.draining;
    res.keep_alive(keep_alive_);
    res.prepare_payload();
    if (on_handler_thread && WriteNow()) return;
    bhttp::async_write(*stream_, res,
                       [self = this->shared_from_this()](const boost::system::error_code& ec,
                                                         size_t) { self->OnWrite(ec); });
  }

  // On a handler thread: writes the (small) answer at once, without blocking, and goes on
  // to read the next request from here, so that the answer's completion is not handed back
  // to an I/O thread (a second cross-thread wake-up on every request). Only when the write
  // cannot block: nothing of earlier answers is still unacknowledged in the socket's send
  // queue, and the answer is at most kWriteNowMaxBytes with a send buffer several times
  // larger, so the kernel takes all of it. Otherwise (a client that stopped reading, a large
  // answer) it returns false and the answer goes the asynchronous way, under the write
  // deadline. The socket is non-blocking, so a handler thread can never wait
  // on a client here; should the kernel refuse a part anyway, the connection closes (a TLS
  // record cannot be half sent and resumed).
  bool WriteNow() {
    auto& socket = beast::get_lowest_layer(*stream_);
    const int fd = socket.native_handle();
    int unsent = 0;
    int send_buffer = 0;
    socklen_t len = sizeof(send_buffer);
    if (ioctl(fd, SIOCOUTQ, &unsent) != 0 || unsent != 0) return false;
    if (getsockopt(fd, SOL_SOCKET, SO_SNDBUF, &send_buffer, &len) != 0) return false;
    const size_t size = res_->body().size() + 512;  // + status line and headers
    if (size > kWriteNowMaxBytes ||
        static_cast<size_t>(send_buffer) < size * kWriteNowSendBufferFactor) {
      return false;
    }
    boost::system::error_code ec;
    // Once per connection; asynchronous operations work the same on a non-blocking socket.
    if (!socket.non_blocking()) socket.non_blocking(true, ec);
    if (ec) return false;
    bhttp::write(*stream_, *res_, ec);
    if (ec == asio::error::would_block) {
      server_.Log(true, "Closing a connection: the kernel refused part of an answer",
                  {{"bytes", std::to_string(size)}});
    }
    OnWrite(ec);
    return true;
  }

  void OnWrite(const boost::system::error_code& ec) {
    if (observed_ && server_.cfg.observer) {
      observed_ = false;
      server_.cfg.observer->RequestFinished(route_->metric_label, status_,
                                            server_.clock.Now() - headers_done_);
    }
    headers_done_ = {};
    res_.reset();
    if (reserved_ > 0) {
      server_.Release(reserved_);
      reserved_ = 0;
    }
    if (closed_) return;
    if (ec) return Finish(CloseReason::kError);
    if (!keep_alive_) return linger_ ? Linger() : Finish(CloseReason::kDone);
    phase_ = Phase::kIdle;
    server_.Enter(id_, Phase::kIdle);
    // An idle connection keeps a small buffer (none when the last request needed a large one).
    if (buffer_.size() == 0 && buffer_.capacity() > kIdleBufferBytes) buffer_.shrink_to_fit();
    ReadRequest();
  }

  // After an error answer: stop sending, discard what still arrives for kLinger, close.
  void Linger() {
    server_.Remove(id_, CloseReason::kDone);
    boost::system::error_code ignored;
    beast::get_lowest_layer(*stream_).shutdown(tcp::socket::shutdown_send, ignored);
    linger_timer_.emplace(executor_);
    linger_timer_->expires_after(kLinger);
    linger_timer_->async_wait(
        [self = this->shared_from_this()](const boost::system::error_code&) { self->Abort(); });
    Discard();
  }

  void Discard() {
    discard_.resize(16 * 1024);
    beast::get_lowest_layer(*stream_).async_read_some(
        asio::buffer(discard_),
        [self = this->shared_from_this()](const boost::system::error_code& ec, size_t) {
          if (ec || self->closed_) {
            if (self->linger_timer_) self->linger_timer_->cancel();
            return self->Abort();
          }
          self->Discard();
        });
  }

  void Finish(CloseReason reason) {
    if (closed_) return;
    server_.Remove(id_, reason);
    Abort();
  }

  Server::Impl& server_;
  asio::any_io_executor executor_;
  asio::ssl::context* ssl_;
  std::optional<tcp::socket> socket_;  // TLS, before the first byte
  std::optional<Stream> stream_;
  Id id_ = 0;
  Phase phase_ = Phase::kHeaders;
  beast::flat_buffer buffer_;  // at most the headers whole and a little more
  size_t reserved_ = 0;        // of Server::Impl::held_body, for this request's body
  size_t header_bytes_ = 0;    // of the fields, when a chunked body's headers were done
  // Why the parser was stopped by one of the chunk callbacks.
  enum class Refusal { kNone, kChunkLine, kBudget };
  Refusal refusal_ = Refusal::kNone;
  std::function<void(std::uint64_t, beast::string_view, boost::system::error_code&)>
      on_chunk_header_;
  std::function<size_t(std::uint64_t, beast::string_view, boost::system::error_code&)>
      on_chunk_body_;
  std::optional<bhttp::request_parser<bhttp::string_body>> parser_;
  std::shared_ptr<bhttp::response<bhttp::string_body>> res_;
  const Route* route_ = nullptr;
  bool path_known_ = false;
  bool observed_ = false;
  bool keep_alive_ = true;
  bool linger_ = false;
  bool closed_ = false;
  int status_ = 0;
  base::SteadyTime headers_done_{};
  std::optional<asio::steady_timer> linger_timer_;
  std::vector<char> discard_;
};

using PlainSession = Session<tcp::socket>;
using TlsSession = Session<beast::ssl_stream<tcp::socket>>;

}  // namespace

void Server::Impl::Accept() {
  acceptor.async_accept(
      asio::make_strand(ioc), [this](const boost::system::error_code& ec, tcp::socket socket) {
        if (stopping || ec == asio::error::operation_aborted) return;
        if (ec) {
          // Out of descriptors or buffers: pause instead of spinning on the same error.
          if (ec.message() != last_accept_error) {
            last_accept_error = ec.message();
            Log(true, "Failed to accept a connection", {{"error", ec.message()}});
          }
          accept_pause.expires_after(kAcceptPause);
          accept_pause.async_wait([this](const boost::system::error_code& wait_ec) {
            if (!wait_ec && !stopping) Accept();
          });
          return;
        }
        last_accept_error.clear();
        OnAccept(std::move(socket));
        Accept();
      });
}

void Server::Impl::OnAccept(tcp::socket socket) {
  boost::system::error_code ignored;
  socket.set_option(tcp::no_delay(true), ignored);
  // The peer's address is its source for the per-source bound (an IPv4 peer on a dual-stack
  // socket counts as its IPv4 address).
  std::string source;
  tcp::endpoint peer = socket.remote_endpoint(ignored);
  if (!ignored) {
    asio::ip::address addr = peer.address();
    if (addr.is_v6() && addr.to_v6().is_v4_mapped()) {
      addr = asio::ip::make_address_v4(asio::ip::v4_mapped, addr.to_v6());
    }
    source = addr.to_string();
  }
  std::shared_ptr<SessionBase> victim;
  if (ssl) {
    auto s = std::make_shared<TlsSession>(*this, std::move(socket), &*ssl);
    auto a = Open(Phase::kHandshake, source, s, &victim);
    AbortAll({victim});
    if (!a.admitted) return s->Abort();
    s->set_id(a.id);
    asio::dispatch(s->executor(), [s] { s->Start(); });
  } else {
    auto s = std::make_shared<PlainSession>(*this, std::move(socket), nullptr);
    auto a = Open(Phase::kHeaders, source, s, &victim);
    AbortAll({victim});
    if (!a.admitted) return s->Abort();
    s->set_id(a.id);
    asio::dispatch(s->executor(), [s] { s->Start(); });
  }
}

Server::Server(ServerConfig config, std::vector<Route> routes)
    : impl_(std::make_shared<Impl>(std::move(config), std::move(routes))) {}

Server::~Server() { Stop(); }

void Server::Start() {
  Impl& s = *impl_;
  if (s.started) throw std::logic_error("http::Server::Start called twice");
  if (s.cfg.configure_tls) {
    s.ssl.emplace(asio::ssl::context::tls_server);
    SSL_CTX* ctx = s.ssl->native_handle();
    // Idle TLS connections keep no read/write buffers (a flood of them costs little).
    SSL_CTX_set_mode(ctx, SSL_MODE_RELEASE_BUFFERS);
    if (!s.cfg.configure_tls(ctx)) throw std::runtime_error("cannot set up the TLS context");
  }
  boost::system::error_code ec;
  asio::ip::address addr = asio::ip::make_address(s.cfg.address, ec);
  if (ec) throw std::runtime_error(fmt::format("invalid listen address \"{}\"", s.cfg.address));
  tcp::endpoint ep(addr, static_cast<unsigned short>(s.cfg.port));
  s.acceptor.open(ep.protocol(), ec);
  if (!ec) s.acceptor.set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) s.acceptor.bind(ep, ec);
  if (!ec) s.acceptor.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) {
    throw std::runtime_error(
        fmt::format("cannot listen on {}:{}: {}", s.cfg.address, s.cfg.port, ec.message()));
  }
  s.port = s.acceptor.local_endpoint().port();
  // Started only from here: a Start that threw above (a port in use, bad TLS material) leaves
  // nothing for Stop() or the destructor to stop.
  s.started = true;
  s.pool = std::make_unique<HandlerPool>(s.cfg.handler_threads, s.cfg.handler_queue);
  s.work.emplace(s.ioc.get_executor());
  s.Accept();
  s.ScheduleSweep();
  size_t n = s.cfg.io_threads == 0 ? 1 : s.cfg.io_threads;
  for (size_t i = 0; i < n; ++i) s.threads.emplace_back([&s] { s.ioc.run(); });
}

void Server::Drain() { impl_->draining = true; }

void Server::Stop() {
  Impl& s = *impl_;
  if (!s.started || s.stopped) return;
  s.stopped = true;
  s.stopping = true;
  asio::post(s.acceptor.get_executor(), [&s] {
    boost::system::error_code ignored;
    s.acceptor.close(ignored);
    s.accept_pause.cancel();
  });
  s.CloseIdle();
  {
    // Requests in flight are answered (with Connection: close), then their connections go.
    std::unique_lock<std::mutex> lock(s.mu);
    s.clock.WaitFor(s.cfg.stop_grace, s.drained, lock, [&s] { return s.table.size() == 0; });
  }
  s.work.reset();
  s.ioc.stop();
  for (std::thread& t : s.threads) t.join();
  s.threads.clear();
  // The I/O threads are gone: the posted close above may not have run yet, and the port must
  // be free when Stop() returns.
  boost::system::error_code ignored;
  s.acceptor.close(ignored);
  s.pool->Stop();
}

int Server::port() const { return impl_->port.load(); }

size_t Server::open_connections() const {
  std::scoped_lock lock(impl_->mu);
  return impl_->table.size();
}

size_t Server::held_body_bytes() const { return impl_->held_body.load(); }

bool Server::running() const { return impl_->started && !impl_->stopped; }

size_t Server::answered_inline() const { return impl_->answered_inline.load(); }

size_t Server::deferred_to_pool() const { return impl_->deferred_to_pool.load(); }

}  // namespace kmt::http
