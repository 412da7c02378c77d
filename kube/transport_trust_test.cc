// Which certificate authorities a connection to the API server trusts, as client-go: the
// kubeconfig's certificate-authority alone when it names one, the system's when it names none.
// A process of its own: the system's store is read once per process, and here the system's
// bundle is the test CA (OpenSSL reads SSL_CERT_FILE for its default file).
#include <httplib.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <string>
#include <thread>

#include "base/testing/files.h"
#include "kube/error.h"
#include "kube/resources.h"
#include "kube/rest_client.h"

namespace kmt::kube {
namespace {

using base::testing::ReadTestFile;

// An HTTPS server on 127.0.0.1 whose certificate the test CA signed.
struct TestServer {
  TestServer() : srv("kube/testdata/server.crt", "kube/testdata/server.key") {
    srv.Get("/api/v1/nodes/n", [](const auto&, httplib::Response& res) {
      res.set_content(R"({"kind":"Node"})", "application/json");
    });
    port = srv.bind_to_any_port("127.0.0.1");
    thread = std::thread([this] { srv.listen_after_bind(); });
    while (!srv.is_running()) std::this_thread::yield();
  }
  ~TestServer() {
    srv.stop();
    thread.join();
  }
  ClientConfig Config(const std::string& ca_file) const {
    ClientConfig c;
    c.server = "https://127.0.0.1:" + std::to_string(port);
    if (!ca_file.empty()) c.ca_pem = ReadTestFile(ca_file);
    c.token = "secret";
    c.source = "test";
    return c;
  }

  httplib::SSLServer srv;
  int port = 0;
  std::thread thread;
};

TEST_CASE("A kubeconfig's certificate authority is the only one trusted, else the system's") {
  // The system's bundle holds the CA that signed the server's certificate.
  REQUIRE(setenv("SSL_CERT_FILE", "kube/testdata/ca.crt", 1) == 0);
  TestServer s;

  // The kubeconfig names another CA: refused, although the system trusts the server's.
  // (Before, the system's bundle was added to the kubeconfig's CA on every connection.)
  const ClientConfig other = s.Config("kube/testdata/other-ca.crt");
  for (int i = 0; i < 2; ++i) {  // a second connection too
    try {
      RestClient(other).Get(kNodes, "", "n");
      FAIL("a server certificate the kubeconfig's CA did not sign was accepted");
    } catch (const KubeError& e) {
      CHECK(e.kind() == ErrorKind::kTransport);
      CHECK(std::string(e.what()) == "get nodes n: TLS verification of " + other.server +
                                         " failed: unable to get local issuer certificate");
    }
  }
  // The kubeconfig names the server's CA: accepted.
  CHECK(RestClient(s.Config("kube/testdata/ca.crt")).Get(kNodes, "", "n")["kind"] == "Node");
  // It names none: the system's are trusted.
  CHECK(RestClient(s.Config("")).Get(kNodes, "", "n")["kind"] == "Node");
}

}  // namespace
}  // namespace kmt::kube
