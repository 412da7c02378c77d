// The HTTPS shell against a real local server on 127.0.0.1 (ephemeral port), with an
// httplib client and raw OpenSSL probes.
#include "webhook/server.h"

#include <arpa/inet.h>
#include <httplib.h>
#include <netinet/in.h>
#include <openssl/ssl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "base/blocking.h"
#include "base/fake_clock.h"
#include "base/json.h"
#include "base/poll.h"
#include "http/testing/test_tls.h"
#include "kube/fake_client.h"
#include "kube/resources.h"
#include "webhook/access_review.h"

namespace kmt::webhook {
namespace {

using http::testing::TestAuthority;
using http::testing::WriteFileAtomically;

// A client the server refuses during the TLS handshake may still be writing: its write must
// fail with EPIPE, not end the test binary.
const bool kSigpipeIgnored = [] { return std::signal(SIGPIPE, SIG_IGN) != SIG_ERR; }();

std::string Review(const std::string& uid, const std::string& padding = "") {
  Json review = {{"apiVersion", "admission.k8s.io/v1"},
                 {"kind", "AdmissionReview"},
                 {"request",
                  {{"uid", uid},
                   {"operation", "CREATE"},
                   {"namespace", "ns1"},
                   {"object", {{"metadata", {{"name", "x"}}}, {"padding", padding}}}}}};
  return review.dump();
}

// A started server with its own certificate directory, CA and client.
struct Fixture {
  base::FakeClock clock;  // the certificate poll's and the rejection log's
  static constexpr std::chrono::milliseconds kPollInterval{10};
  TestAuthority ca;
  std::string dir = http::testing::MakeTempDir();
  std::string cert_file = dir + "/tls.crt";
  std::string key_file = dir + "/tls.key";
  std::string ca_file = dir + "/ca.crt";
  std::vector<std::string> logs;
  std::vector<std::string> lines;  // msg and fields
  std::mutex logs_mu;
  std::unique_ptr<AdmissionServer> server;

  explicit Fixture(std::vector<Route> routes, bool with_cert = true,
                   const std::function<void(ServerOptions&)>& tweak = nullptr) {
    if (with_cert) WriteCert(0x100);
    WriteFileAtomically(ca_file, ca.ca_pem());
    ServerOptions opts;
    opts.address = "127.0.0.1";
    opts.port = 0;
    opts.cert_file = cert_file;
    opts.key_file = key_file;
    opts.cert_poll_interval = kPollInterval;
    opts.clock = &clock;
    opts.log = [this](const ServerLogEntry& e) {
      std::scoped_lock lock(logs_mu);
      logs.emplace_back(e.msg);
      std::string line = e.msg;
      for (const auto& [k, v] : e.fields) line.append(" ").append(k).append("=").append(v);
      lines.push_back(std::move(line));
    };
    if (tweak) tweak(opts);
    server = std::make_unique<AdmissionServer>(opts, std::move(routes));
    server->Start();
  }

  void WriteCert(long serial) {
    auto pair = ca.Issue(serial);
    // Key first, then certificate: the reloader must not serve a half-written pair.
    WriteFileAtomically(key_file, pair.key);
    WriteFileAtomically(cert_file, pair.cert);
  }

  std::unique_ptr<httplib::SSLClient> Client() const {
    auto cli = std::make_unique<httplib::SSLClient>("127.0.0.1", server->port());
    cli->set_ca_cert_path(ca_file.c_str());
    cli->enable_server_certificate_verification(true);
    cli->set_connection_timeout(5, 0);
    cli->set_read_timeout(10, 0);
    cli->set_tcp_nodelay(true);
    return cli;
  }

  // Polls `done` until it holds or 10 s pass, moving the server's clock on by one certificate
  // poll interval each time (the poll is a timer on it).
  bool Eventually(const std::function<bool()>& done) {
    return base::PollUntil(base::SystemClock(), std::chrono::seconds(10), base::Duration::zero(),
                           [&] {
                             clock.Advance(kPollInterval);
                             return done();
                           });
  }

  // Makes the certificate poll due and waits until the poller has looked (and set its next
  // timer).
  void PollOnce() {
    auto timer_set = [&] {
      return base::PollUntil(base::SystemClock(), std::chrono::seconds(10), base::Duration::zero(),
                             [&] { return clock.PendingTimers() == 1; });
    };
    REQUIRE(timer_set());
    clock.Advance(kPollInterval);  // fires it: none is pending until the poller has looked
    REQUIRE(timer_set());
  }

  std::string ServedSerial() const {
    return http::testing::Probe(server->port(), TLS1_2_VERSION, TLS1_3_VERSION, ca.ca_pem())
        .serial_hex;
  }
};

AdmissionResponse AllowAll(const AdmissionRequest& req) {
  AdmissionResponse r = Allowed();
  r.uid = "not-the-request-uid";  // the shell must overwrite it
  r.warnings = {"saw " + req.ns};
  return r;
}

TEST_CASE("Server answers AdmissionReviews, health and readiness") {
  Fixture f({{"/validate", AllowAll}});
  REQUIRE(f.server->Ready());
  auto cli = f.Client();

  auto healthz = cli->Get("/healthz");
  REQUIRE(healthz);
  CHECK(healthz->status == 200);
  auto readyz = cli->Get("/readyz");
  REQUIRE(readyz);
  CHECK(readyz->status == 200);

  auto res = cli->Post("/validate", Review("uid-1"), "application/json; charset=utf-8");
  REQUIRE(res);
  CHECK(res->status == 200);
  CHECK(res->get_header_value("Content-Type") == "application/json");
  CHECK(Json::parse(res->body) == Json::parse(R"({"apiVersion":"admission.k8s.io/v1",
      "kind":"AdmissionReview","response":{"uid":"uid-1","allowed":true,"warnings":["saw ns1"]}})"));

  auto missing = cli->Post("/other", Review("uid-1"), "application/json");
  REQUIRE(missing);
  CHECK(missing->status == 404);
}

TEST_CASE("Server rejects bad requests with the HTTP status the shell promises") {
  Fixture f({{"/validate", AllowAll}});
  auto cli = f.Client();
  struct Row {
    const char* name;
    std::string body;
    std::string content_type;
    int status;
    std::string reason;
    std::string message;
  };
  auto row = GENERATE(values<Row>({
      {"empty body", "", "application/json", 400, "BadRequest", "request body is empty"},
      {"text", Review("u"), "text/plain", 415, "UnsupportedMediaType",
       "contentType=\"text/plain\", expected application/json"},
      {"yaml", Review("u"), "application/yaml", 415, "UnsupportedMediaType",
       "contentType=\"application/yaml\", expected application/json"},
      {"not json", "{", "application/json", 400, "BadRequest",
       "AdmissionReview is not valid JSON: [json.exception.parse_error.101] parse error at line "
       "1, column 2: syntax error while parsing object key - unexpected end of input; expected "
       "string literal"},
      {"no uid",
       R"({"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"operation":"CREATE"}})",
       "application/json", 400, "BadRequest", "request.uid is missing"},
  }));
  CAPTURE(row.name);
  auto res = cli->Post("/validate", row.body, row.content_type.c_str());
  REQUIRE(res);
  CHECK(res->status == row.status);
  CHECK(Json::parse(res->body) == Json{{"kind", "Status"},
                                       {"apiVersion", "v1"},
                                       {"metadata", Json::object()},
                                       {"status", "Failure"},
                                       {"message", row.message},
                                       {"reason", row.reason},
                                       {"code", row.status}});
}

TEST_CASE("Server echoes the uid of a review it cannot decode fully") {
  Fixture f({{"/validate", AllowAll}});
  auto res = f.Client()->Post(
      "/validate",
      R"({"apiVersion":"admission.k8s.io/v1beta1","kind":"AdmissionReview","request":{"uid":"u-7","operation":"CREATE"}})",
      "application/json");
  REQUIRE(res);
  CHECK(res->status == 200);
  CHECK(Json::parse(res->body)["response"] == Json::parse(R"({"uid":"u-7","allowed":false,
      "status":{"status":"Failure","code":400,"reason":"BadRequest",
      "message":"unsupported AdmissionReview apiVersion \"admission.k8s.io/v1beta1\", want \"admission.k8s.io/v1\""}})"));
}

TEST_CASE("Server turns an admitter's exception into a 500 admission response with the uid") {
  Fixture f(
      {{"/throws",
        [](const AdmissionRequest&) -> AdmissionResponse { throw std::runtime_error("boom"); }},
       {"/throws-int", [](const AdmissionRequest&) -> AdmissionResponse { throw 42; }}});
  auto cli = f.Client();
  auto res = cli->Post("/throws", Review("uid-500"), "application/json");
  REQUIRE(res);
  CHECK(res->status == 200);
  CHECK(Json::parse(res->body)["response"] ==
        Json::parse(R"({"uid":"uid-500","allowed":false,"status":{"status":"Failure",
            "code":500,"reason":"InternalError","message":"internal error: boom"}})"));
  auto res2 = cli->Post("/throws-int", Review("uid-501"), "application/json");
  REQUIRE(res2);
  CHECK(Json::parse(res2->body)["response"]["uid"] == "uid-501");
  CHECK(Json::parse(res2->body)["response"]["status"]["message"] ==
        "internal error: unknown exception");
}

TEST_CASE("Server caps the body at 3.5 MiB, with and without Content-Length") {
  Fixture f({{"/validate", AllowAll}});
  const size_t max = size_t{7} * 512 * 1024;
  const size_t overhead = Review("u-big").size();
  const std::string exact = Review("u-big", std::string(max - overhead, 'a'));
  REQUIRE(exact.size() == max);

  auto cli = f.Client();
  auto ok = cli->Post("/validate", exact, "application/json");
  REQUIRE(ok);
  CHECK(ok->status == 200);
  CHECK(Json::parse(ok->body)["response"]["uid"] == "u-big");

  const std::string over = exact + " ";
  auto big = f.Client()->Post("/validate", over, "application/json");
  REQUIRE(big);
  CHECK(big->status == 413);
  CHECK(Json::parse(big->body)["message"] == "request body exceeds 3670016 bytes");

  // Chunked transfer encoding: no Content-Length for httplib to check up front.
  auto chunked = f.Client()->Post(
      "/validate",
      [&over](size_t offset, httplib::DataSink& sink) {
        if (offset >= over.size()) {
          sink.done();
          return true;
        }
        size_t n = std::min<size_t>(size_t{64} * 1024, over.size() - offset);
        return sink.write(over.data() + offset, n);
      },
      "application/json");
  if (chunked) {  // the server may close before the client finished sending
    CHECK(chunked->status == 413);
  } else {
    CHECK(chunked.error() == httplib::Error::Write);
  }
  // The server is still healthy.
  auto after = f.Client()->Post("/validate", Review("u-after"), "application/json");
  REQUIRE(after);
  CHECK(after->status == 200);
}

TEST_CASE("Server speaks TLS 1.2 and 1.3 and refuses TLS 1.1") {
  Fixture f({{"/validate", AllowAll}});
  auto v11 = http::testing::Probe(f.server->port(), TLS1_1_VERSION, TLS1_1_VERSION, f.ca.ca_pem());
  CHECK_FALSE(v11.connected);
  CHECK(v11.error_reason == SSL_R_TLSV1_ALERT_PROTOCOL_VERSION);
  auto v10 = http::testing::Probe(f.server->port(), TLS1_VERSION, TLS1_VERSION, f.ca.ca_pem());
  CHECK_FALSE(v10.connected);
  CHECK(v10.error_reason == SSL_R_TLSV1_ALERT_PROTOCOL_VERSION);
  auto v12 = http::testing::Probe(f.server->port(), TLS1_2_VERSION, TLS1_2_VERSION, f.ca.ca_pem());
  CHECK(v12.connected);
  CHECK(v12.version == "TLSv1.2");
  CHECK(v12.serial_hex == "0100");
  auto v13 = http::testing::Probe(f.server->port(), TLS1_3_VERSION, TLS1_3_VERSION, f.ca.ca_pem());
  CHECK(v13.connected);
  CHECK(v13.version == "TLSv1.3");
}

TEST_CASE("Server becomes ready when a certificate appears") {
  Fixture f({{"/validate", AllowAll}}, /*with_cert=*/false);
  CHECK_FALSE(f.server->Ready());
  auto before =
      http::testing::Probe(f.server->port(), TLS1_2_VERSION, TLS1_3_VERSION, f.ca.ca_pem());
  CHECK_FALSE(before.connected);
  for (int i = 0; i < 3; ++i) f.PollOnce();  // each poll fails again
  f.WriteCert(0x200);
  REQUIRE(f.Eventually([&] { return f.server->Ready(); }));
  CHECK(f.ServedSerial() == "0200");
  std::scoped_lock lock(f.logs_mu);
  size_t failures = 0;
  for (const auto& l : f.logs) {
    if (l.find("Failed to load serving certificate") != std::string::npos) ++failures;
  }
  CHECK(failures == 1);  // reported once, not on every poll
}

TEST_CASE("Mutual TLS: only clients with a certificate of the client CA are served") {
  TestAuthority clients;  // the API server's client CA (another CA than the serving one)
  TestAuthority stranger;
  std::string client_ca_file;
  Fixture f({{"/validate", AllowAll}}, /*with_cert=*/true, [&](ServerOptions& o) {
    client_ca_file = o.cert_file + ".client-ca";
    WriteFileAtomically(client_ca_file, clients.ca_pem());
    o.client_ca_file = client_ca_file;
  });
  REQUIRE(f.Eventually([&] { return f.server->Ready(); }));
  auto write_pair = [&](const std::string& name, const http::testing::PemPair& pair) {
    WriteFileAtomically(f.dir + "/" + name + ".crt", pair.cert);
    WriteFileAtomically(f.dir + "/" + name + ".key", pair.key);
  };
  write_pair("apiserver", clients.IssueClient(0x10, "kube-apiserver"));
  write_pair("forger", stranger.IssueClient(0x11, "kube-apiserver"));
  write_pair("server-only", clients.IssueClient(0x12, "kube-apiserver", "serverAuth"));
  auto post_as = [&](const std::string& name) {
    std::unique_ptr<httplib::SSLClient> cli =
        name.empty() ? std::make_unique<httplib::SSLClient>("127.0.0.1", f.server->port())
                     : std::make_unique<httplib::SSLClient>("127.0.0.1", f.server->port(),
                                                            f.dir + "/" + name + ".crt",
                                                            f.dir + "/" + name + ".key");
    cli->set_ca_cert_path(f.ca_file.c_str());
    cli->enable_server_certificate_verification(true);
    cli->set_connection_timeout(5, 0);
    cli->set_read_timeout(5, 0);
    auto res = cli->Post("/validate", Review("u-1"), "application/json");
    return res ? res->status : -1;
  };
  CHECK(post_as("apiserver") == 200);
  CHECK(post_as("") == -1);             // no certificate: no handshake, no HTTP
  CHECK(post_as("forger") == -1);       // another CA
  CHECK(post_as("server-only") == -1);  // not for client authentication
  // Probes verify only the server: the handshake without a client certificate fails.
  CHECK_FALSE(http::testing::Probe(f.server->port(), TLS1_2_VERSION, TLS1_2_VERSION, f.ca.ca_pem())
                  .connected);

  SECTION("a rotated client CA applies from the next handshake") {
    WriteFileAtomically(client_ca_file, stranger.ca_pem());
    REQUIRE(f.Eventually([&] { return post_as("forger") == 200; }));
    CHECK(post_as("apiserver") == -1);
  }
  SECTION("a client CA file that breaks keeps the last bundle, and says so once") {
    WriteFileAtomically(client_ca_file, "not a certificate");
    REQUIRE(f.Eventually([&] {
      std::scoped_lock lock(f.logs_mu);
      return std::count(f.logs.begin(), f.logs.end(), "Failed to load client CA") == 1;
    }));
    CHECK(post_as("apiserver") == 200);
    CHECK(f.server->Ready());
  }
}

TEST_CASE("Mutual TLS: no client CA loaded, no handshake and not ready") {
  TestAuthority clients;
  std::string client_ca_file;
  Fixture f({{"/validate", AllowAll}}, /*with_cert=*/true, [&](ServerOptions& o) {
    client_ca_file = o.cert_file + ".client-ca";  // not written yet
    o.client_ca_file = client_ca_file;
  });
  CHECK_FALSE(f.server->Ready());
  const auto pair = clients.IssueClient(0x20, "kube-apiserver");
  WriteFileAtomically(f.dir + "/c.crt", pair.cert);
  WriteFileAtomically(f.dir + "/c.key", pair.key);
  auto post = [&] {
    httplib::SSLClient cli("127.0.0.1", f.server->port(), f.dir + "/c.crt", f.dir + "/c.key");
    cli.set_ca_cert_path(f.ca_file.c_str());
    cli.enable_server_certificate_verification(true);
    auto res = cli.Post("/validate", Review("u-2"), "application/json");
    return res ? res->status : -1;
  };
  CHECK(post() == -1);
  WriteFileAtomically(client_ca_file, clients.ca_pem());
  REQUIRE(f.Eventually([&] { return f.server->Ready(); }));
  CHECK(post() == 200);
}

TEST_CASE("Rejected requests are logged at most once a second, with how many were not") {
  Fixture f({{"/validate", AllowAll}});
  auto cli = f.Client();
  for (int i = 0; i < 20; ++i) {
    auto res = cli->Post("/validate", "not json", "application/json");
    REQUIRE(res);
    CHECK(res->status == 400);
  }
  auto rejected = [&] {
    std::scoped_lock lock(f.logs_mu);
    std::vector<std::string> out;
    for (const auto& l : f.lines) {
      if (l.starts_with("Rejected admission request")) out.push_back(l);
    }
    return out;
  };
  REQUIRE(rejected().size() == 1);
  CHECK(rejected()[0] ==
        "Rejected admission request path=/validate status=400 rejectedUnloggedSinceLast=0");
  f.clock.Advance(std::chrono::milliseconds(1100));
  auto res = cli->Post("/validate", "not json", "application/json");
  REQUIRE(res);
  auto after = rejected();
  REQUIRE(after.size() == 2);
  CHECK(after[1] ==
        "Rejected admission request path=/validate status=400 rejectedUnloggedSinceLast=19");
}

TEST_CASE("Certificate rotation while requests run loses no request") {
  // In-flight: this admitter holds its request until the rotation is done.
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  std::promise<void> held_started;
  std::atomic<bool> hold{true};
  Fixture f({{"/validate", AllowAll}, {"/hold", [&](const AdmissionRequest& req) {
                                         if (hold.exchange(false)) {
                                           held_started.set_value();
                                           released.wait();
                                         }
                                         return AllowAll(req);
                                       }}});
  REQUIRE(f.ServedSerial() == "0100");

  auto held = std::async(std::launch::async, [&] {
    return f.Client()->Post("/hold", Review("uid-held"), "application/json");
  });
  held_started.get_future().wait();

  // A request loop on fresh connections (each one a new handshake) and one on a
  // keep-alive connection, both running across two rotations.
  std::atomic<bool> stop{false};
  std::atomic<int> fresh_count{0};
  std::atomic<int> kept_count{0};
  auto loop = [&](bool keep_alive, std::atomic<int>* count) {
    std::vector<std::string> failures;
    auto cli = f.Client();
    cli->set_keep_alive(keep_alive);
    while (!stop) {
      std::string uid = (keep_alive ? "ka-" : "new-") + std::to_string(count->load());
      auto res = cli->Post("/validate", Review(uid), "application/json");
      if (!res) {
        failures.push_back(uid + ": " + httplib::to_string(res.error()));
      } else if (res->status != 200 || Json::parse(res->body)["response"]["uid"] != uid) {
        failures.push_back(uid + ": status " + std::to_string(res->status));
      }
      ++*count;
    }
    return failures;
  };
  auto fresh = std::async(std::launch::async, loop, false, &fresh_count);
  auto kept = std::async(std::launch::async, loop, true, &kept_count);
  // Each loop gets at least 10 more requests through in every phase.
  auto progress = [&] {
    int f0 = fresh_count, k0 = kept_count;
    return f.Eventually([&] { return fresh_count >= f0 + 10 && kept_count >= k0 + 10; });
  };

  CHECK(progress());
  f.WriteCert(0x300);
  REQUIRE(f.Eventually([&] { return f.ServedSerial() == "0300"; }));
  CHECK(progress());
  f.WriteCert(0x400);
  REQUIRE(f.Eventually([&] { return f.ServedSerial() == "0400"; }));
  CHECK(progress());
  release.set_value();
  auto held_res = held.get();
  stop = true;
  auto fresh_failures = fresh.get();
  auto kept_failures = kept.get();

  REQUIRE(held_res);
  CHECK(held_res->status == 200);
  CHECK(Json::parse(held_res->body)["response"]["uid"] == "uid-held");
  CHECK(fresh_failures.empty());
  CHECK(kept_failures.empty());
  std::scoped_lock lock(f.logs_mu);
  size_t loaded = 0;
  for (const auto& l : f.logs) {
    if (l.find("Loaded serving certificate") != std::string::npos) ++loaded;
  }
  CHECK(loaded == 3);
}

TEST_CASE("A stalled client delays no one, and is closed at its header deadline") {
  Fixture f({{"/validate", AllowAll}}, true, [](ServerOptions& o) {
    o.workers = 1;
    o.limits.headers = std::chrono::milliseconds(300);
  });
  // Connects and sends half a request line, then stalls.
  SSL_CTX* ctx = SSL_CTX_new(TLS_client_method());
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(f.server->port()));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0);
  SSL* ssl = SSL_new(ctx);
  SSL_set_fd(ssl, fd);
  REQUIRE(SSL_connect(ssl) == 1);
  const std::string partial = "POST /validate HTTP/1.1\r\nHost: x\r\n";
  REQUIRE(SSL_write(ssl, partial.data(), static_cast<int>(partial.size())) > 0);

  const base::Stopwatch started;  // the server's deadlines are real time
  auto res = f.Client()->Post("/validate", Review("uid-after-slow"), "application/json");
  auto waited = started.Elapsed();
  REQUIRE(res);
  CHECK(res->status == 200);
  CHECK(waited < std::chrono::milliseconds(250));  // it did not wait for the stalled one
  // The stalled connection is closed (without an answer) once its header deadline passes.
  std::string answer;
  char buf[4096];
  for (int n; (n = SSL_read(ssl, buf, sizeof(buf))) > 0;)
    answer.append(buf, static_cast<size_t>(n));
  CHECK(answer.empty());
  CHECK(started.Elapsed() >= std::chrono::milliseconds(250));
  SSL_free(ssl);
  close(fd);
  SSL_CTX_free(ctx);
}

// A review by `user`, asking nothing else of the admitter.
std::string ReviewBy(const std::string& uid, const std::string& user) {
  Json review = Json::parse(Review(uid));
  review["request"]["userInfo"] = {{"username", user}};
  return review.dump();
}

TEST_CASE("A review the cache can decide is answered on the I/O thread; a miss waits on a worker") {
  // The operator's stack: the answer cache in front of SubjectAccessReviews sent through a
  // client (the fake API server). One worker, held by a review whose SubjectAccessReview
  // hangs: reviews the cache answers keep being answered meanwhile.
  kube::FakeClient api;
  std::promise<void> release;
  std::shared_future<void> gate = release.get_future().share();
  std::atomic<int> asked{0};
  api.SetCreateHandler(kube::kSubjectAccessReviews, [&](const Json& review) {
    ++asked;
    if (base::StringAt(review, {"spec", "user"}) == "slow") gate.wait();
    Json answer = review;
    answer["status"] = {{"allowed", true}};
    return answer;
  });
  SubjectAccessReviewer reviewer(api);
  CachingAccessReviewer cache(reviewer);
  std::mutex seen_mu;
  std::vector<bool> seen_u1;  // each admitter run on review u1: whether it could wait
  Admitter admit = [&](const AdmissionRequest& req) {
    if (req.uid == "u1") {
      std::scoped_lock lock(seen_mu);
      seen_u1.push_back(base::BlockingAllowed());
    }
    AccessDecision d = cache.Review({req.user_info, req.ns, "use", "g", "r", ""});
    return d.allowed ? Allowed() : Denied(403, "Forbidden", "no");
  };
  Fixture f({{"/validate", admit}}, true, [](ServerOptions& o) { o.workers = 1; });
  auto cli = f.Client();
  auto allowed = [](const httplib::Result& r) {
    return r && r->status == 200 && Json::parse(r->body)["response"]["allowed"] == true;
  };

  CHECK(allowed(cli->Post("/validate", ReviewBy("u1", "admin"), "application/json")));
  CHECK(asked == 1);  // a miss: decided on the worker
  CHECK(f.server->deferred_to_workers() == 1);
  CHECK(f.server->answered_inline() == 0);
  {
    // Tried on the I/O thread (no waiting), then decided on the worker (waiting allowed).
    std::scoped_lock lock(seen_mu);
    CHECK(seen_u1 == std::vector<bool>{false, true});
  }

  auto slow = std::async(std::launch::async, [&] {
    auto c = f.Client();
    return allowed(c->Post("/validate", ReviewBy("u2", "slow"), "application/json"));
  });
  REQUIRE(f.Eventually([&] { return asked == 2; }));  // the one worker waits on it

  for (int i = 0; i < 3; ++i) {
    CHECK(allowed(cli->Post("/validate", ReviewBy("u3", "admin"), "application/json")));
  }
  CHECK(asked == 2);
  CHECK(f.server->answered_inline() == 3);
  CHECK(f.server->deferred_to_workers() == 2);
  release.set_value();
  CHECK(slow.get());
}

// An admitter that must wait (as a SubjectAccessReview the cache does not hold): each run
// records where its request lives and whether it may wait, then answers with the request's
// namespace as a warning. The runs of review "hold" wait for `gate` on the worker.
struct WaitingAdmitter {
  struct Run {
    std::string uid;
    // Where the request's object keeps its metadata (moving the decoded review keeps it).
    uintptr_t request;
    bool may_wait;
  };
  std::mutex mu;
  std::vector<Run> runs;
  std::shared_future<void> gate;
  std::atomic<bool> holding{false};

  std::vector<Run> RunsOf(const std::string& uid) {
    std::scoped_lock lock(mu);
    std::vector<Run> out;
    for (const Run& r : runs) {
      if (r.uid == uid) out.push_back(r);
    }
    return out;
  }

  Admitter Admit() {
    return [this](const AdmissionRequest& req) {
      {
        std::scoped_lock lock(mu);
        runs.push_back({req.uid, reinterpret_cast<uintptr_t>(&req.object.at("metadata")),
                        base::BlockingAllowed()});
      }
      base::MayBlock();
      if (req.uid == "hold") {
        holding = true;
        gate.wait();
      }
      AdmissionResponse r = Allowed();
      r.warnings = {"saw " + req.ns + " " + Json(req.object).dump()};
      return r;
    };
  }
};

TEST_CASE("A deferred review is decided on the worker from the review the I/O thread decoded") {
  WaitingAdmitter waiting;
  Fixture f({{"/validate", waiting.Admit()}});
  auto cli = f.Client();
  auto r = cli->Post("/validate", Review("u1", "pad"), "application/json");
  REQUIRE(r);
  CHECK(r->status == 200);
  const Json response = Json::parse(r->body)["response"];
  CHECK(response["uid"] == "u1");
  CHECK(response["allowed"] == true);
  CHECK(response["warnings"] ==
        Json::array({R"(saw ns1 {"metadata":{"name":"x"},"padding":"pad"})"}));
  CHECK(f.server->deferred_to_workers() == 1);
  CHECK(f.server->answered_inline() == 0);
  const std::vector<WaitingAdmitter::Run> runs = waiting.RunsOf("u1");
  REQUIRE(runs.size() == 2);
  CHECK_FALSE(runs[0].may_wait);              // the attempt on the I/O thread
  CHECK(runs[1].may_wait);                    // the worker's
  CHECK(runs[0].request == runs[1].request);  // one decoded review, not parsed again
  // Given back once the review is answered.
  CHECK(f.Eventually([&] { return f.server->kept_review_bytes() == 0; }));
}

TEST_CASE("With no budget for kept reviews, a deferred review is decoded again, same answer") {
  WaitingAdmitter waiting;
  Fixture f({{"/validate", waiting.Admit()}}, true,
            [](ServerOptions& o) { o.max_kept_review_bytes = 0; });
  auto cli = f.Client();
  auto r = cli->Post("/validate", Review("u1", "pad"), "application/json");
  REQUIRE(r);
  CHECK(r->status == 200);
  const Json response = Json::parse(r->body)["response"];
  CHECK(response["uid"] == "u1");
  CHECK(response["warnings"] ==
        Json::array({R"(saw ns1 {"metadata":{"name":"x"},"padding":"pad"})"}));
  const std::vector<WaitingAdmitter::Run> runs = waiting.RunsOf("u1");
  CHECK(runs.size() == 2);
  CHECK(f.server->kept_review_bytes() == 0);  // nothing was kept
}

TEST_CASE("Decoded reviews kept for the workers stay within max_kept_review_bytes") {
  // One worker, held by the first deferred review; the second waits in the queue. The budget
  // has room for one decoded review: the second holds only its body and is decoded again.
  const std::string held = Review("hold", std::string(100, 'a'));
  const std::string queued = Review("next", std::string(100, 'b'));
  const size_t held_bytes = held.size() + 64 * DecodeAdmissionReview(held).json_nodes;
  const size_t queued_bytes = queued.size() + 64 * DecodeAdmissionReview(queued).json_nodes;
  std::promise<void> release;
  WaitingAdmitter waiting;
  waiting.gate = release.get_future().share();
  Fixture f({{"/validate", waiting.Admit()}}, true, [&](ServerOptions& o) {
    o.workers = 1;
    o.max_kept_review_bytes = held_bytes + queued_bytes - 1;
  });
  auto post = [&](const std::string& body) {
    return std::async(std::launch::async, [&f, body] {
      auto r = f.Client()->Post("/validate", body, "application/json");
      return r && r->status == 200 ? Json::parse(r->body)["response"] : Json();
    });
  };
  auto first = post(held);
  REQUIRE(f.Eventually([&] { return waiting.holding.load(); }));
  CHECK(f.server->kept_review_bytes() == held_bytes);
  auto second = post(queued);
  REQUIRE(f.Eventually([&] { return f.server->deferred_to_workers() == 2; }));
  CHECK(f.server->kept_review_bytes() == held_bytes);  // the second is not kept
  release.set_value();
  const Json a = first.get();
  const Json b = second.get();
  CHECK(a["uid"] == "hold");
  CHECK(a["allowed"] == true);
  CHECK(b["uid"] == "next");
  CHECK(b["allowed"] == true);
  CHECK(b["warnings"] ==
        Json::array({"saw ns1 " + Json::parse(queued)["request"]["object"].dump()}));
  const std::vector<WaitingAdmitter::Run> held_runs = waiting.RunsOf("hold");
  const std::vector<WaitingAdmitter::Run> queued_runs = waiting.RunsOf("next");
  REQUIRE(held_runs.size() == 2);
  REQUIRE(queued_runs.size() == 2);
  CHECK(held_runs[0].request == held_runs[1].request);
  CHECK(f.Eventually([&] { return f.server->kept_review_bytes() == 0; }));
}

TEST_CASE("Stop is idempotent and the port is released") {
  Fixture f({{"/validate", AllowAll}});
  int port = f.server->port();
  f.server->Stop();
  f.server->Stop();
  CHECK_FALSE(f.server->Ready());
  auto probe = http::testing::Probe(port, TLS1_2_VERSION, TLS1_3_VERSION, f.ca.ca_pem());
  CHECK_FALSE(probe.connected);
}

}  // namespace
}  // namespace kmt::webhook
