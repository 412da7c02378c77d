// kube/rest_client_test.cc — the REST client against a local HTTPS server
// (httplib::SSLServer with the throwaway certificates in kube/testdata).
#include "kube/rest_client.h"

#include <httplib.h>

#include <algorithm>
#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <fstream>
#include <mutex>
#include <optional>
#include <thread>

#include "base/poll.h"
#include "base/testing/files.h"
#include "kube/error.h"
#include "kube/resources.h"

namespace kmt::kube {
namespace {

using base::testing::ReadTestFile;

// An HTTPS server on 127.0.0.1 with a random port, optionally requiring a
// client certificate signed by the test CA.
struct TestServer {
  explicit TestServer(bool require_client_cert = false, int fixed_port = 0)
      : srv("kube/testdata/server.crt", "kube/testdata/server.key",
            require_client_cert ? "kube/testdata/ca.crt" : nullptr) {
    srv.set_tcp_nodelay(true);  // as kube-apiserver (Go sets TCP_NODELAY on every connection)
    if (fixed_port != 0) {
      REQUIRE(srv.bind_to_port("127.0.0.1", fixed_port));
      port = fixed_port;
    } else {
      port = srv.bind_to_any_port("127.0.0.1");
    }
    thread = std::thread([this] { srv.listen_after_bind(); });
    while (!srv.is_running()) std::this_thread::yield();
  }
  ~TestServer() {
    stop = true;
    srv.stop();
    thread.join();
  }
  std::string Url() const { return "https://127.0.0.1:" + std::to_string(port); }
  ClientConfig Config() const {
    ClientConfig c;
    c.server = Url();
    c.ca_pem = ReadTestFile("kube/testdata/ca.crt");
    c.token = "secret";
    c.source = "test";
    return c;
  }

  httplib::SSLServer srv;
  int port = 0;
  std::thread thread;
  std::atomic<bool> stop{false};
};

const std::string kPodJson = R"({"kind":"Pod","metadata":{"name":"a","namespace":"ns"}})";

template <typename F>
KubeError Catch(F&& f) {
  try {
    f();
  } catch (const KubeError& e) {
    return e;
  }
  FAIL("no KubeError thrown");
  throw std::logic_error("unreachable");
}

TEST_CASE("GET over verified TLS with token, User-Agent and Host") {
  TestServer s;
  httplib::Headers seen;
  s.srv.Get("/api/v1/namespaces/ns/pods/a",
            [&](const httplib::Request& req, httplib::Response& res) {
              seen = req.headers;
              res.set_content(kPodJson, "application/json");
            });
  RestClient c(s.Config());
  Json pod = c.Get(kPods, "ns", "a");
  CHECK(pod["metadata"]["name"] == "a");
  auto header = [&](const std::string& k) {
    auto it = seen.find(k);
    return it == seen.end() ? std::string() : it->second;
  };
  CHECK(header("Authorization") == "Bearer secret");
  CHECK(header("User-Agent") == "kubevirt-migration-target/0.1");
  CHECK(header("Accept") == "application/json");
  CHECK(header("Host") == "127.0.0.1:" + std::to_string(s.port));
  // Connection reuse: a second call works on the pooled connection.
  CHECK(c.Get(kPods, "ns", "a")["kind"] == "Pod");
}

TEST_CASE("Query parameters are escaped and decoded back exactly") {
  TestServer s;
  std::string target;
  httplib::Params params;
  s.srv.Get("/apis/kubevirt.io/v1/virtualmachineinstancemigrations",
            [&](const httplib::Request& req, httplib::Response& res) {
              target = req.target;
              params = req.params;
              res.set_content(R"({"kind":"List","items":[],"metadata":{}})", "application/json");
            });
  RestClient c(s.Config());
  ListOptions o;
  o.label_selector = "app in (a,b),!x,kubevirt.io/migrationJobUID!=u-1";
  o.field_selector = "metadata.name=m 1";
  o.limit = 50;
  o.continue_token = "eyJ2Ijoi+/=";
  o.resource_version = "0";
  o.resource_version_match = "NotOlderThan";
  c.List(kVirtualMachineInstanceMigrations, "", o);
  auto param = [&](const std::string& k) {
    auto it = params.find(k);
    return it == params.end() ? std::string("<missing>") : it->second;
  };
  CHECK(param("labelSelector") == o.label_selector);
  CHECK(param("fieldSelector") == o.field_selector);
  CHECK(param("limit") == "50");
  CHECK(param("continue") == o.continue_token);
  CHECK(param("resourceVersion") == "0");
  CHECK(param("resourceVersionMatch") == "NotOlderThan");
  CHECK(target.find("labelSelector=app%20in%20%28a%2Cb%29%2C%21x%2C") != std::string::npos);
}

TEST_CASE("Writes: methods, content types, dry run, field validation, preconditions") {
  TestServer s;
  struct Seen {
    std::string method, path, content_type, body;
    httplib::Params params;
  };
  std::vector<Seen> seen;
  auto record = [&](const httplib::Request& req, httplib::Response& res) {
    seen.push_back(
        {req.method, req.path, req.get_header_value("Content-Type"), req.body, req.params});
    res.set_content(kPodJson, "application/json");
  };
  s.srv.Post("/api/v1/namespaces/ns/pods", record);
  s.srv.Put("/api/v1/namespaces/ns/pods/a/status", record);
  s.srv.Patch("/api/v1/namespaces/ns/pods/a", record);
  s.srv.Delete("/api/v1/namespaces/ns/pods/a", record);
  RestClient c(s.Config());
  WriteOptions w;
  w.dry_run = true;
  w.field_validation = "Strict";
  w.field_manager = "kmt";
  const Json pod = Json::parse(kPodJson);
  c.Create(kPods, "ns", pod, w);
  c.Update(kPods, "ns", pod, "status");
  c.Patch(kPods, "ns", "a", PatchType::kJsonPatch,
          Json::array({{{"op", "test"}, {"path", "/a"}, {"value", 1}}}));
  c.Patch(kPods, "ns", "a", PatchType::kMergePatch, {{"metadata", {{"labels", {{"x", "y"}}}}}});
  DeleteOptions d;
  d.precondition_uid = "u";
  d.precondition_resource_version = "7";
  d.grace_period_seconds = 0;
  d.dry_run = true;
  c.Delete(kPods, "ns", "a", d);
  REQUIRE(seen.size() == 5);
  CHECK(seen[0].method == "POST");
  CHECK(seen[0].params ==
        httplib::Params{{"dryRun", "All"}, {"fieldManager", "kmt"}, {"fieldValidation", "Strict"}});
  CHECK(Json::parse(seen[0].body) == pod);
  CHECK(seen[1].method == "PUT");
  CHECK(seen[1].params.empty());
  CHECK(seen[2].content_type == "application/json-patch+json");
  CHECK(seen[3].content_type == "application/merge-patch+json");
  CHECK(seen[4].method == "DELETE");
  CHECK(Json::parse(seen[4].body) ==
        Json{{"kind", "DeleteOptions"},
             {"apiVersion", "v1"},
             {"preconditions", {{"uid", "u"}, {"resourceVersion", "7"}}},
             {"gracePeriodSeconds", 0},
             {"dryRun", {"All"}}});
}

TEST_CASE("Writes on a kept-alive connection are not held back by Nagle's algorithm") {
  // A request's headers and body leave in separate writes. Without TCP_NODELAY the body waits
  // for the ACK of the headers, which the server's kernel delays (~40 ms on Linux), so every
  // POST on a reused connection took ~40 ms.
  TestServer s;
  s.srv.Post("/api/v1/namespaces/ns/pods", [](const httplib::Request&, httplib::Response& res) {
    res.set_content(kPodJson, "application/json");
  });
  RestClient c(s.Config());
  const Json pod = Json::parse(kPodJson);
  c.Create(kPods, "ns", pod);  // the connection, then reused
  std::vector<double> ms;
  for (int i = 0; i < 21; ++i) {
    const base::Stopwatch t0;
    c.Create(kPods, "ns", pod);
    ms.push_back(std::chrono::duration<double, std::milli>(t0.Elapsed()).count());
  }
  std::ranges::sort(ms);
  CAPTURE(ms);
  CHECK(ms[ms.size() / 2] < 20.0);
}

TEST_CASE("Non-2xx answers become KubeErrors through ErrorFromResponse") {
  TestServer s;
  s.srv.Get("/api/v1/namespaces/ns/pods/missing", [](const auto&, httplib::Response& res) {
    res.status = 404;
    res.set_content(
        R"({"kind":"Status","apiVersion":"v1","status":"Failure","message":"pods \"missing\" not found","reason":"NotFound","code":404})",
        "application/json");
  });
  s.srv.Get("/api/v1/namespaces/ns/pods/busy", [](const auto&, httplib::Response& res) {
    res.status = 429;
    res.set_header("Retry-After", "3");
    res.set_content("slow down", "text/plain");
  });
  s.srv.Get("/api/v1/namespaces/ns/pods/html", [](const auto&, httplib::Response& res) {
    res.set_content("<html>not json</html>", "text/html");
  });
  RestClient c(s.Config());
  KubeError nf = Catch([&] { c.Get(kPods, "ns", "missing"); });
  CHECK(nf.kind() == ErrorKind::kNotFound);
  CHECK(std::string(nf.what()) ==
        "get pods ns/missing: HTTP 404 NotFound: pods \"missing\" not found");
  KubeError busy = Catch([&] { c.Get(kPods, "ns", "busy"); });
  CHECK(busy.kind() == ErrorKind::kUnavailable);
  CHECK(busy.retry_after() == std::chrono::seconds(3));
  KubeError html = Catch([&] { c.Get(kPods, "ns", "html"); });
  CHECK(html.kind() == ErrorKind::kInternal);
  CHECK(std::string(html.what()) ==
        "get pods ns/html: HTTP 200 with a body that is not JSON (21 bytes)");
}

TEST_CASE("A 401 re-reads a rotated token file and retries once") {
  TestServer s;
  const char* base = std::getenv("TEST_TMPDIR");
  const std::string token_path = std::string(base ? base : "/tmp") + "/rotating-token";
  std::ofstream(token_path) << "old";
  std::vector<std::string> tokens;
  s.srv.Get("/api/v1/nodes/n", [&](const httplib::Request& req, httplib::Response& res) {
    tokens.push_back(req.get_header_value("Authorization"));
    if (req.get_header_value("Authorization") != "Bearer new") {
      std::ofstream(token_path) << "new";  // the kubelet rotated it meanwhile
      res.status = 401;
      res.set_content(
          R"({"kind":"Status","code":401,"reason":"Unauthorized","message":"Unauthorized"})",
          "application/json");
      return;
    }
    res.set_content(R"({"kind":"Node"})", "application/json");
  });
  ClientConfig cfg = s.Config();
  cfg.token.clear();
  cfg.token_file = token_path;
  RestClient c(cfg);
  CHECK(c.Get(kNodes, "", "n")["kind"] == "Node");
  CHECK(tokens == std::vector<std::string>{"Bearer old", "Bearer new"});
}

TEST_CASE("TLS failures name the server and the reason") {
  TestServer s;
  s.srv.Get("/api/v1/nodes/n", [](const auto&, httplib::Response& res) {
    res.set_content(R"({"kind":"Node"})", "application/json");
  });
  ClientConfig wrong_ca = s.Config();
  wrong_ca.ca_pem = ReadTestFile("kube/testdata/other-ca.crt");
  KubeError e = Catch([&] { RestClient(wrong_ca).Get(kNodes, "", "n"); });
  CHECK(e.kind() == ErrorKind::kTransport);
  CHECK(std::string(e.what()) == "get nodes n: TLS verification of " + s.Url() +
                                     " failed: unable to get local issuer certificate");

  ClientConfig insecure = wrong_ca;
  insecure.ca_pem.clear();
  insecure.insecure_skip_tls_verify = true;
  CHECK(RestClient(insecure).Get(kNodes, "", "n")["kind"] == "Node");

  ClientConfig system_roots = s.Config();
  system_roots.ca_pem.clear();
  CHECK(Catch([&] { RestClient(system_roots).Get(kNodes, "", "n"); }).kind() ==
        ErrorKind::kTransport);

  // tls-server-name: verify (and send SNI) for a name the certificate has,
  // while connecting to 127.0.0.1.
  ClientConfig named = s.Config();
  named.tls_server_name = "kubernetes.default";
  CHECK(RestClient(named).Get(kNodes, "", "n")["kind"] == "Node");
  named.tls_server_name = "wrong.example";
  KubeError mismatch = Catch([&] { RestClient(named).Get(kNodes, "", "n"); });
  CHECK(std::string(mismatch.what()) == "get nodes n: TLS verification of " + s.Url() +
                                            " failed: certificate does not match the host name");

  ClientConfig garbage_ca = s.Config();
  garbage_ca.ca_pem = "not a certificate";
  KubeError bad_pem = Catch([&] { RestClient{garbage_ca}; });
  CHECK(bad_pem.kind() == ErrorKind::kConfig);
  CHECK(std::string(bad_pem.what()) == "test: certificate authority: no PEM certificate found");
}

TEST_CASE("Client certificates authenticate") {
  TestServer s(/*require_client_cert=*/true);
  s.srv.Get("/api/v1/nodes/n", [&](const httplib::Request&, httplib::Response& res) {
    res.set_content(R"({"kind":"Node"})", "application/json");
  });
  ClientConfig anonymous = s.Config();
  anonymous.token.clear();
  CHECK(Catch([&] { RestClient(anonymous).Get(kNodes, "", "n"); }).kind() == ErrorKind::kTransport);
  ClientConfig with_cert = anonymous;
  with_cert.client_cert_pem = ReadTestFile("kube/testdata/client.crt");
  with_cert.client_key_pem = ReadTestFile("kube/testdata/client.key");
  CHECK(RestClient(with_cert).Get(kNodes, "", "n")["kind"] == "Node");
  ClientConfig bad_key = with_cert;
  bad_key.client_key_pem = "garbage";
  KubeError e = Catch([&] { RestClient(bad_key).Get(kNodes, "", "n"); });
  CHECK(e.kind() == ErrorKind::kConfig);
  CHECK(std::string(e.what()).rfind("test: client certificate/key: ", 0) == 0);
}

TEST_CASE("A restarted server's stale keep-alive connections are not used") {
  auto s = std::make_unique<TestServer>();
  const int port = s->port;
  auto serve = [](TestServer& t) {
    t.srv.Post("/api/v1/namespaces/ns/pods", [](const auto&, httplib::Response& res) {
      res.set_content(kPodJson, "application/json");
    });
    t.srv.Get("/api/v1/namespaces/ns/pods/a", [](const auto&, httplib::Response& res) {
      res.set_content(kPodJson, "application/json");
    });
  };
  serve(*s);
  RestClient c(s->Config());
  c.Get(kPods, "ns", "a");  // leaves a pooled keep-alive connection
  s.reset();                // the server goes away, closing it
  TestServer again(false, port);
  serve(again);
  // A POST is never retried blindly; it must not be sent on the dead connection.
  CHECK(c.Create(kPods, "ns", Json::parse(kPodJson))["kind"] == "Pod");
  CHECK(c.Get(kPods, "ns", "a")["kind"] == "Pod");
}

TEST_CASE("A server that does not answer within the read timeout is a clear error") {
  TestServer s;
  std::mutex mu;
  std::condition_variable cv;
  bool release = false;
  s.srv.Get("/api/v1/nodes/slow", [&](const auto&, httplib::Response& res) {
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, [&] { return release || s.stop.load(); });  // holds until the client gave up
    res.set_content(R"({"kind":"Node"})", "application/json");
  });
  TransportOptions o;
  o.read_timeout = std::chrono::milliseconds(200);
  RestClient c(s.Config(), o);
  KubeError e = Catch([&] { c.Get(kNodes, "", "slow"); });
  {
    std::scoped_lock lock(mu);
    release = true;
  }
  cv.notify_all();
  CHECK(e.kind() == ErrorKind::kTransport);
  CHECK(std::string(e.what()) ==
        "get nodes slow: reading from " + s.Url() + " failed (connection closed or read timeout)");
}

TEST_CASE("An unreachable server is named") {
  int port = 0;
  {
    TestServer s;  // take a free port, then close it
    port = s.port;
  }
  ClientConfig c;
  c.server = "https://127.0.0.1:" + std::to_string(port);
  c.source = "test";
  KubeError e = Catch([&] { RestClient(c).Get(kPods, "ns", "a"); });
  CHECK(e.kind() == ErrorKind::kTransport);
  CHECK(std::string(e.what()) == "get pods ns/a: cannot connect to " + c.server);
}

TEST_CASE("A 50 MiB response over the cap is refused without buffering it") {
  TestServer s;
  const size_t size = size_t{50} << 20;
  s.srv.Get("/api/v1/pods", [&](const httplib::Request& req, httplib::Response& res) {
    if (req.has_param("limit")) {  // chunked: no Content-Length to check up front
      res.set_chunked_content_provider("application/json",
                                       [&](size_t offset, httplib::DataSink& sink) {
                                         if (offset >= size || s.stop) {
                                           sink.done();
                                           return true;
                                         }
                                         std::string chunk(1 << 20, ' ');
                                         return sink.write(chunk.data(), chunk.size());
                                       });
      return;
    }
    res.set_content(std::string(size, ' '), "application/json");
  });
  TransportOptions o;
  o.max_response_bytes = size_t{16} << 20;
  RestClient c(s.Config(), o);
  KubeError sized = Catch([&] { c.List(kPods, ""); });
  CHECK(sized.kind() == ErrorKind::kTooLarge);
  CHECK(std::string(sized.what()) == "list pods: response larger than the 16 MiB cap");
  ListOptions chunked;
  chunked.limit = 1;
  KubeError streamed = Catch([&] { c.List(kPods, "", chunked); });
  CHECK(streamed.kind() == ErrorKind::kTooLarge);
  // The client is still usable afterwards.
  s.srv.Get("/api/v1/nodes", [](const auto&, httplib::Response& res) {
    res.set_content(R"({"items":[]})", "application/json");
  });
  CHECK(c.List(kNodes, "")["items"].empty());
}

// Serves a watch body in the given pieces, then ends (or holds the
// connection open when hold is set, until the test ends).
void ServeWatch(TestServer& s, const std::vector<std::string>& pieces, bool hold = false) {
  s.srv.Get("/api/v1/namespaces/ns/pods", [&s, pieces, hold](const httplib::Request& req,
                                                             httplib::Response& res) {
    CHECK(req.get_param_value("watch") == "true");
    CHECK(req.get_param_value("allowWatchBookmarks") == "true");
    CHECK(req.get_param_value("resourceVersion") == "5");
    CHECK(req.get_param_value("timeoutSeconds") == "300");
    auto i = std::make_shared<size_t>(0);
    res.set_chunked_content_provider(
        "application/json", [&s, pieces, hold, i](size_t, httplib::DataSink& sink) {
          if (*i < pieces.size()) {
            const std::string& p = pieces[(*i)++];
            return sink.write(p.data(), p.size());
          }
          if (hold && !s.stop) {
            base::PollUntil(base::SystemClock(), std::chrono::milliseconds(5),  // server side only
                            std::chrono::milliseconds(5), [&s] { return s.stop.load(); });
            return sink.is_writable();
          }
          sink.done();
          return true;
        });
  });
}

WatchOptions From5() {
  WatchOptions o;
  o.resource_version = "5";
  return o;
}

TEST_CASE("Watch streams events split across chunks, then ends cleanly") {
  TestServer s;
  ServeWatch(s, {R"({"type":"ADDED","object":{"metadata":{"name":"a","resourceVersion":"6"}}})"
                 "\n{\"ty",
                 R"(pe":"BOOKMARK","object":{"metadata":{"resourceVersion":"9"}}})", "\n"});
  RestClient c(s.Config());
  auto w = c.Watch(kPods, "ns", From5());
  auto e1 = w->Next();
  REQUIRE(e1);
  CHECK(e1->type == "ADDED");
  CHECK(e1->object["metadata"]["name"] == "a");
  auto e2 = w->Next();
  REQUIRE(e2);
  CHECK(e2->type == "BOOKMARK");
  CHECK_FALSE(w->Next().has_value());
}

TEST_CASE("omit_managed_fields drops metadata.managedFields from listed and watched objects") {
  TestServer s;
  const std::string fields = R"("managedFields":[{"manager":"m","fieldsV1":{"f:spec":{}}}])";
  s.srv.Get("/api/v1/pods", [&](const httplib::Request&, httplib::Response& res) {
    res.set_content(R"({"kind":"PodList","metadata":{"resourceVersion":"5"},"items":[)"
                    R"({"metadata":{"name":"a",)" +
                        fields + R"(}}]})",
                    "application/json");
  });
  ServeWatch(s, {R"({"type":"ADDED","object":{"metadata":{"name":"b","resourceVersion":"6",)" +
                 fields + "}}}\n"});
  RestClient c(s.Config());
  ListOptions keep;
  CHECK(c.List(kPods, "", keep)["items"][0]["metadata"].contains("managedFields"));
  ListOptions omit;
  omit.omit_managed_fields = true;
  const Json list = c.List(kPods, "", omit);
  CHECK(list["items"][0]["metadata"] == Json::parse(R"({"name":"a"})"));
  WatchOptions w = From5();
  w.omit_managed_fields = true;
  auto stream = c.Watch(kPods, "ns", w);
  auto e = stream->Next();
  REQUIRE(e);
  CHECK(e->object["metadata"] == Json::parse(R"({"name":"b","resourceVersion":"6"})"));
}

TEST_CASE("A truncated watch stream is an error after the complete events") {
  TestServer s;
  ServeWatch(s, {R"({"type":"ADDED","object":{"metadata":{"resourceVersion":"6"}}})"
                 "\n",
                 R"({"type":"MODIFIED","obj)"});
  RestClient c(s.Config());
  auto w = c.Watch(kPods, "ns", From5());
  CHECK(w->Next()->type == "ADDED");
  KubeError e = Catch([&] { w->Next(); });
  CHECK(e.kind() == ErrorKind::kTransport);
  CHECK(std::string(e.what()) ==
        "watch pods -n ns: stream ended in the middle of an event (23 bytes)");
}

TEST_CASE("A malformed watch line is an error; an unknown type is passed on") {
  TestServer s;
  ServeWatch(s, {"{\"type\":\"SURPRISE\",\"object\":{}}\n", "not json\n"});
  RestClient c(s.Config());
  auto w = c.Watch(kPods, "ns", From5());
  CHECK(w->Next()->type == "SURPRISE");
  KubeError e = Catch([&] { w->Next(); });
  CHECK(e.kind() == ErrorKind::kInternal);
  CHECK(std::string(e.what()) == "watch pods -n ns: malformed watch event (not JSON): not json");
}

TEST_CASE("HTTP 410 on a watch request surfaces as Gone") {
  TestServer s;
  s.srv.Get("/api/v1/namespaces/ns/pods", [](const auto&, httplib::Response& res) {
    res.status = 410;
    res.set_content(
        R"J({"kind":"Status","code":410,"reason":"Expired","message":"too old resource version: 5 (9)"})J",
        "application/json");
  });
  RestClient c(s.Config());
  auto w = c.Watch(kPods, "ns", From5());
  KubeError e = Catch([&] { w->Next(); });
  CHECK(e.kind() == ErrorKind::kGone);
  CHECK(std::string(e.what()) ==
        "watch pods -n ns: HTTP 410 Gone: too old resource version: 5 (9)");
}

// Serves a watch of `count` ADDED events of about 4 KiB each as fast as the client reads
// them, counting the bytes the server managed to write.
struct FloodServer {
  static constexpr size_t kCount = 16384;  // 64 MiB: far more than the kernel buffers
  FloodServer() {
    s.srv.Get("/api/v1/namespaces/ns/pods", [this](const httplib::Request&,
                                                   httplib::Response& res) {
      res.set_chunked_content_provider("application/json", [this](size_t, httplib::DataSink& sink) {
        if (next == kCount || s.stop) {
          sink.done();
          return true;
        }
        const std::string line = Line(next);
        if (!sink.write(line.data(), line.size())) return false;
        ++next;
        written += line.size();
        return true;
      });
    });
  }
  static std::string Line(size_t i) {
    return R"({"type":"ADDED","object":{"metadata":{"name":"p)" + std::to_string(i) +
           R"(","resourceVersion":")" + std::to_string(i + 6) + R"("},"pad":")" +
           std::string(4000, 'x') + "\"}}\n";
  }
  static size_t Total() {
    size_t n = 0;
    for (size_t i = 0; i < kCount; ++i) n += Line(i).size();
    return n;
  }
  // Waits until the server has not written anything for 300 ms (or wrote everything).
  void WaitUntilStalled() {
    std::optional<size_t> last;  // none yet: the first look starts the count
    int quiet = 0;
    base::PollUntil(base::SystemClock(), std::chrono::seconds(30), std::chrono::milliseconds(100),
                    [&] {
                      const size_t now = written;
                      quiet = now == last ? quiet + 1 : 0;
                      last = now;
                      return quiet >= 3 || next >= kCount;
                    });
  }
  TestServer s;
  std::atomic<size_t> next{0};
  std::atomic<size_t> written{0};
};

TEST_CASE("A slow consumer holds the watch stream back instead of queuing all of it") {
  FloodServer f;
  TransportOptions o;
  o.max_watch_queue_bytes = 64 << 10;
  RestClient c(f.s.Config(), o);
  auto w = c.Watch(kPods, "ns", From5());
  REQUIRE(w->Next()->object["metadata"]["name"] == "p0");
  f.WaitUntilStalled();
  // The reader stopped reading: the server is stuck with what the queue (64 KiB) and
  // the kernel's socket buffers hold, a small part of the stream.
  const size_t total = FloodServer::Total();
  CAPTURE(f.written.load(), total);
  CHECK(f.written < total / 2);
  // Nothing was dropped: the consumer catching up gets every event, in order.
  size_t seen = 1;
  while (auto e = w->Next()) {
    if (e->object["metadata"]["name"] != "p" + std::to_string(seen)) {
      FAIL_CHECK("event " << seen << " is " << e->object["metadata"]["name"]);
      break;
    }
    ++seen;
  }
  CHECK(seen == FloodServer::kCount);
}

TEST_CASE("Cancel releases a watch reader waiting for room in its queue") {
  FloodServer f;
  TransportOptions o;
  o.max_watch_queue_bytes = 64 << 10;
  RestClient c(f.s.Config(), o);
  auto w = c.Watch(kPods, "ns", From5());
  f.WaitUntilStalled();
  const base::Stopwatch t0;
  w->Cancel();
  CHECK_FALSE(w->Next().has_value());
  w.reset();  // joins the reader thread
  CHECK(t0.Elapsed() < std::chrono::seconds(5));
}

TEST_CASE("A 429 on a watch request keeps its Retry-After") {
  TestServer s;
  s.srv.Get("/api/v1/namespaces/ns/pods", [](const auto&, httplib::Response& res) {
    res.status = 429;
    res.set_header("Retry-After", "4");
    res.set_content(R"({"kind":"Status","code":429,"reason":"TooManyRequests",)"
                    R"("message":"too many requests, please try again later"})",
                    "application/json");
  });
  RestClient c(s.Config());
  auto w = c.Watch(kPods, "ns", From5());
  KubeError e = Catch([&] { w->Next(); });
  CHECK(e.kind() == ErrorKind::kUnavailable);
  CHECK(e.retry_after() == std::chrono::seconds(4));
}

TEST_CASE("Cancel unblocks a watch waiting on a silent server") {
  TestServer s;
  ServeWatch(s,
             {R"({"type":"ADDED","object":{"metadata":{"resourceVersion":"6"}}})"
              "\n"},
             /*hold=*/true);
  RestClient c(s.Config());
  auto w = c.Watch(kPods, "ns", From5());
  CHECK(w->Next()->type == "ADDED");
  std::thread t([&] { w->Cancel(); });
  const base::Stopwatch t0;
  CHECK_FALSE(w->Next().has_value());
  t.join();
  w.reset();  // joins the reader thread
  CHECK(t0.Elapsed() < std::chrono::seconds(5));
}

TEST_CASE("A server URL with an odd host or port is a config error, not an exception") {
  struct Row {
    const char* server;
    const char* why;
  };
  const Row row = GENERATE(values<Row>({
      {"https://127.0.0.1:abc", "port \"abc\" is not a number from 1 to 65535"},
      {"https://127.0.0.1:", "port \"\" is not a number from 1 to 65535"},
      {"https://127.0.0.1:99999999999", "port \"99999999999\" is not a number from 1 to 65535"},
      {"https://127.0.0.1:0", "port \"0\" is not a number from 1 to 65535"},
      {"https://127.0.0.1:-443", "port \"-443\" is not a number from 1 to 65535"},
      {"https://127.0.0.1:6443x/", "port \"6443x\" is not a number from 1 to 65535"},
      {"https://[::1:6443", "unterminated [IPv6 address]"},
      {"https://[::1]6443", "unexpected text after the [IPv6 address]"},
      {"https://[::1]:x", "port \"x\" is not a number from 1 to 65535"},
      {"https://:6443", "no host"},
      {"https://", "no host"},
  }));
  CAPTURE(row.server);
  ClientConfig c;
  c.server = row.server;
  c.source = "test";
  KubeError e = Catch([&] { RestClient client(c); });
  CHECK(e.kind() == ErrorKind::kConfig);
  CHECK(std::string(e.what()) == "test: server \"" + std::string(row.server) + "\": " + row.why);
}

TEST_CASE("Server URLs with a port, with or without a trailing slash, reach the server") {
  TestServer s;
  s.srv.Get("/api/v1/namespaces/ns/pods/a", [](const auto&, httplib::Response& res) {
    res.set_content(kPodJson, "application/json");
  });
  for (const std::string& server : {s.Url(), s.Url() + "/"}) {
    CAPTURE(server);
    ClientConfig c = s.Config();
    c.server = server;
    RestClient client(c);
    CHECK(client.Get(kPods, "ns", "a")["kind"] == "Pod");
  }
}

TEST_CASE("QueryString") {
  CHECK(QueryString({}) == "");
  CHECK(QueryString({{"a", "x y"}, {"b", "1"}}) == "?a=x%20y&b=1");
}

}  // namespace
}  // namespace kmt::kube
