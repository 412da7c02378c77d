// kube/credentials_test.cc
#include "kube/credentials.h"

#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "base/fake_clock.h"
#include "kube/error.h"

namespace kmt::kube {
namespace {

using Clock = std::chrono::system_clock;

TEST_CASE("A static token and certificate are returned as configured") {
  ClientConfig c;
  c.token = "t";
  c.client_cert_pem = "CERT";
  c.client_key_pem = "KEY";
  CredentialSource s(c);
  Credential got = s.Get();
  CHECK(got.bearer_token == "t");
  CHECK(got.client_cert_pem == "CERT");
  CHECK(got.client_key_pem == "KEY");
}

TEST_CASE("A token file is re-read once a minute and after Invalidate") {
  const char* base = std::getenv("TEST_TMPDIR");
  const std::string path = std::string(base ? base : "/tmp") + "/token-rotation";
  std::ofstream(path) << "first\n";
  ClientConfig c;
  c.token_file = path;
  c.source = "in-cluster";
  base::FakeClock t{Clock::from_time_t(1767225600)};  // 2026-01-01T00:00:00Z
  CredentialSource s(c, t);
  CHECK(s.Get().bearer_token == "first");
  std::ofstream(path) << "second";
  t.Advance(std::chrono::seconds(59));
  CHECK(s.Get().bearer_token == "first");
  t.Advance(std::chrono::seconds(1));
  CHECK(s.Get().bearer_token == "second");
  std::ofstream(path) << "third";
  s.Invalidate();
  CHECK(s.Get().bearer_token == "third");
  std::filesystem::remove(path);
  s.Invalidate();
  CHECK_THROWS_WITH(s.Get(),
                    "in-cluster: token file " + path + ": cannot read: No such file or directory");
}

struct PluginCall {
  std::string command;
  std::vector<std::string> args;
  std::vector<std::pair<std::string, std::string>> env;
};

ClientConfig ExecConfigFor(const std::string& api_version) {
  ClientConfig c;
  c.server = "https://api:6443";
  c.ca_pem = "hello";
  c.source = "kubeconfig /k, context \"x\"";
  c.exec = ExecConfig{api_version, "get-token", {"--x"}, {{"A", "1"}}, true, "brew it"};
  return c;
}

TEST_CASE("Exec plugin: environment, caching until expiry, re-run after Invalidate") {
  const std::string api =
      GENERATE("client.authentication.k8s.io/v1", "client.authentication.k8s.io/v1beta1");
  CAPTURE(api);
  base::FakeClock t{Clock::from_time_t(1767225600)};  // 2026-01-01T00:00:00Z
  std::vector<PluginCall> calls;
  int serial = 0;
  CredentialSource s(ExecConfigFor(api), t,
                     [&](const std::string& cmd, const std::vector<std::string>& args,
                         const std::vector<std::pair<std::string, std::string>>& env) {
                       calls.push_back({cmd, args, env});
                       ++serial;
                       nlohmann::json out = {{"apiVersion", api},
                                             {"kind", "ExecCredential"},
                                             {"status",
                                              {{"token", "tok-" + std::to_string(serial)},
                                               {"expirationTimestamp", "2026-01-01T00:10:00Z"}}}};
                       return ExecResult{0, out.dump(), ""};
                     });
  CHECK(s.Get().bearer_token == "tok-1");
  REQUIRE(calls.size() == 1);
  CHECK(calls[0].command == "get-token");
  CHECK(calls[0].args == std::vector<std::string>{"--x"});
  REQUIRE(calls[0].env.size() == 2);
  CHECK(calls[0].env[0] == std::pair<std::string, std::string>{"A", "1"});
  CHECK(calls[0].env[1].first == "KUBERNETES_EXEC_INFO");
  const nlohmann::json info = nlohmann::json::parse(calls[0].env[1].second);
  CHECK(info ==
        nlohmann::json{
            {"apiVersion", api},
            {"kind", "ExecCredential"},
            {"spec",
             {{"interactive", false},
              {"cluster",
               {{"server", "https://api:6443"}, {"certificate-authority-data", "aGVsbG8="}}}}}});
  t.Advance(std::chrono::minutes(9));
  CHECK(s.Get().bearer_token == "tok-1");  // cached
  t.Advance(std::chrono::minutes(1));
  CHECK(s.Get().bearer_token == "tok-2");  // expired: re-run
  s.Invalidate();                          // a 401
  CHECK(s.Get().bearer_token == "tok-3");
}

TEST_CASE("Exec plugin failures are clear") {
  struct Row {
    ExecResult result;
    std::string message;
  };
  const std::string who = "kubeconfig /k, context \"x\": exec plugin get-token";
  const Row row = GENERATE_COPY(values<Row>({
      {{1, "", "login expired\n"}, who + ": exited with status 1: login expired"},
      {{127, "", "No such file or directory"},
       who + ": exited with status 127: No such file or directory (brew it)"},
      {{0, "not json", ""}, who + ": answer is not a JSON object"},
      {{0, R"({"kind":"Other"})", ""}, who + ": answer is not an ExecCredential"},
      {{0,
        R"({"kind":"ExecCredential","apiVersion":"client.authentication.k8s.io/v1beta1","status":{"token":"t"}})",
        ""},
       who + ": answered apiVersion \"client.authentication.k8s.io/v1beta1\", want "
             "\"client.authentication.k8s.io/v1\""},
      {{0,
        R"({"kind":"ExecCredential","apiVersion":"client.authentication.k8s.io/v1","status":{}})",
        ""},
       who + ": answer has neither status.token nor a client certificate"},
      {{0,
        R"({"kind":"ExecCredential","apiVersion":"client.authentication.k8s.io/v1","status":{"clientKeyData":"k"}})",
        ""},
       who + ": clientCertificateData and clientKeyData must come together"},
      {{0,
        R"({"kind":"ExecCredential","apiVersion":"client.authentication.k8s.io/v1","status":{"token":"t","expirationTimestamp":"soon"}})",
        ""},
       who + ": bad expirationTimestamp \"soon\""},
      // Odd JSON: an error naming the member, never another exception.
      {{0, "[]", ""}, who + ": answer is not a JSON object"},
      {{0, R"({"kind":5})", ""}, who + ": answer is not an ExecCredential"},
      {{0, R"({"kind":"ExecCredential","apiVersion":["v1"]})", ""},
       who + ": answered apiVersion \"\", want \"client.authentication.k8s.io/v1\""},
      {{0,
        R"({"kind":"ExecCredential","apiVersion":"client.authentication.k8s.io/v1","status":[]})",
        ""},
       who + ": status is not an object"},
      {{0,
        R"({"kind":"ExecCredential","apiVersion":"client.authentication.k8s.io/v1","status":{"token":5}})",
        ""},
       who + ": status.token: must be a string, not number"},
      {{0,
        R"({"kind":"ExecCredential","apiVersion":"client.authentication.k8s.io/v1","status":{"token":"t","clientCertificateData":{}}})",
        ""},
       who + ": status.clientCertificateData: must be a string, not object"},
      {{0,
        R"({"kind":"ExecCredential","apiVersion":"client.authentication.k8s.io/v1","status":{"token":"t","expirationTimestamp":1767225600}})",
        ""},
       who + ": status.expirationTimestamp: must be a string, not number"},
      {{0,
        R"({"kind":"ExecCredential","apiVersion":"client.authentication.k8s.io/v1","status":null})",
        ""},
       who + ": answer has neither status.token nor a client certificate"},
  }));
  CAPTURE(row.message);
  CredentialSource s(ExecConfigFor("client.authentication.k8s.io/v1"), base::SystemClock(),
                     [&](auto&&...) { return row.result; });
  try {
    s.Get();
    FAIL("no error");
  } catch (const KubeError& e) {
    CHECK(e.kind() == ErrorKind::kConfig);
    CHECK(std::string(e.what()) == row.message);
  }
}

TEST_CASE("RunProcess runs a real command with the extra environment") {
  ExecResult r = RunProcess("/bin/sh", {"-c", "echo \"$KMT_X\"; echo err >&2; exit 3"},
                            {{"KMT_X", "from-env"}});
  CHECK(r.exit_code == 3);
  CHECK(r.stdout_text == "from-env\n");
  CHECK(r.stderr_text == "err\n");
  ExecResult missing = RunProcess("/nonexistent/plugin", {}, {});
  CHECK(missing.exit_code == 127);
  CHECK(missing.stderr_text == "No such file or directory");
  CHECK_THROWS_WITH(RunProcess("/bin/sleep", {"5"}, {}, std::chrono::seconds(0)),
                    "exec plugin /bin/sleep: no answer within 0s");
}

TEST_CASE("ParseRfc3339") {
  using std::chrono::seconds;
  CHECK(ParseRfc3339("2026-01-01T00:00:00Z") == Clock::from_time_t(1767225600));
  CHECK(ParseRfc3339("2026-01-01T00:00:00.123456Z") == Clock::from_time_t(1767225600));
  CHECK(ParseRfc3339("2026-01-01T01:00:00+01:00") == Clock::from_time_t(1767225600));
  CHECK(ParseRfc3339("2025-12-31T23:00:00-01:00") == Clock::from_time_t(1767225600));
  CHECK_FALSE(ParseRfc3339("2026-01-01").has_value());
  CHECK_FALSE(ParseRfc3339("2026-01-01T00:00:00").has_value());
  CHECK_FALSE(ParseRfc3339("2026-01-01T00:00:00Zjunk").has_value());
}

}  // namespace
}  // namespace kmt::kube
