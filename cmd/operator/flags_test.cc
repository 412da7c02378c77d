// cmd/operator/flags_test.cc
#include "cmd/operator/flags.h"

#include <catch2/catch.hpp>

#include "base/version.h"

namespace kmt::cmd {
namespace {

TEST_CASE("Defaults are controller-runtime's") {
  OperatorFlags f;
  FlagParse p = ParseOperatorFlags({}, &f);
  CHECK(p.exit_code == -1);
  CHECK(f.leader_elect);
  CHECK(f.webhook_port == 9443);
  CHECK(f.health_probe_bind_address == ":8081");
  CHECK(f.metrics_bind_address == ":8443");
  CHECK(f.metrics_secure);
  CHECK(f.metrics_cert_path.empty());
  CHECK(f.webhook_cert_dir == "/tmp/k8s-webhook-server/serving-certs");
  CHECK(f.log_format == "text");
  CHECK(f.workers == 4);
}

TEST_CASE("The Deployment's arguments parse") {
  OperatorFlags f;
  FlagParse p = ParseOperatorFlags(
      {"--leader-elect", "--leader-election-namespace=kubevirt-migration-target",
       "--webhook-port=9443", "--webhook-cert-dir=/certs", "--webhook-cert-mode=self",
       "--health-probe-bind-address=:8081", "--metrics-bind-address=0", "--log-format=json",
       "--workers", "8", "--kubeconfig", "/k", "--context=c", "--log-level=debug"},
      &f);
  CHECK(p.exit_code == -1);
  CHECK(f.leader_elect);
  CHECK(f.leader_election_namespace == "kubevirt-migration-target");
  CHECK(f.webhook_cert_dir == "/certs");
  CHECK(f.webhook_cert_mode == "self");
  CHECK(f.metrics_bind_address == "0");
  CHECK(f.log_format == "json");
  CHECK(f.workers == 8);
  CHECK(f.kubeconfig == "/k");
  CHECK(f.context == "c");
  CHECK(f.log_level == "debug");
}

TEST_CASE("Plain HTTP metrics only when asked for, as kubebuilder's --metrics-secure") {
  OperatorFlags secure;
  CHECK(ParseOperatorFlags({"--metrics-secure", "--metrics-cert-path=/m"}, &secure).exit_code ==
        -1);
  CHECK(secure.metrics_secure);
  CHECK(secure.metrics_cert_path == "/m");
  OperatorFlags plain;
  CHECK(ParseOperatorFlags({"--metrics-secure=false", "--metrics-bind-address=:8080"}, &plain)
            .exit_code == -1);
  CHECK_FALSE(plain.metrics_secure);
  CHECK(plain.metrics_bind_address == ":8080");
  OperatorFlags bad;
  CHECK(ParseOperatorFlags({"--metrics-secure=maybe"}, &bad).exit_code == 2);
}

TEST_CASE("Client rate limits and self-managed certificate hosts") {
  OperatorFlags f;
  CHECK(f.kube_api_qps == 200);
  CHECK(f.kube_api_burst == 400);
  CHECK(f.webhook_cert_hosts.empty());
  FlagParse p = ParseOperatorFlags(
      {"--kube-api-qps=50", "--kube-api-burst", "100", "--webhook-cert-hosts=127.0.0.1,localhost"},
      &f);
  CHECK(p.exit_code == -1);
  CHECK(f.kube_api_qps == 50);
  CHECK(f.kube_api_burst == 100);
  CHECK(f.webhook_cert_hosts == std::vector<std::string>{"127.0.0.1", "localhost"});
  OperatorFlags bad;
  CHECK(ParseOperatorFlags({"--kube-api-qps=0"}, &bad).exit_code == 2);
}

TEST_CASE("The SubjectAccessReview cache's TTLs take a unit") {
  OperatorFlags f;
  CHECK(f.authorization_cache_authorized_ttl_ms == 10'000);
  CHECK(f.authorization_cache_unauthorized_ttl_ms == 2'000);
  FlagParse p = ParseOperatorFlags({"--authorization-cache-authorized-ttl=1m",
                                    "--authorization-cache-unauthorized-ttl", "500ms"},
                                   &f);
  CHECK(p.exit_code == -1);
  CHECK(f.authorization_cache_authorized_ttl_ms == 60'000);
  CHECK(f.authorization_cache_unauthorized_ttl_ms == 500);
  OperatorFlags off;
  CHECK(ParseOperatorFlags({"--authorization-cache-authorized-ttl=0s"}, &off).exit_code == -1);
  CHECK(off.authorization_cache_authorized_ttl_ms == 0);
  for (const char* bad :
       {"--authorization-cache-authorized-ttl=10", "--authorization-cache-authorized-ttl=2h",
        "--authorization-cache-unauthorized-ttl=-1s"}) {
    OperatorFlags g;
    CAPTURE(bad);
    CHECK(ParseOperatorFlags({bad}, &g).exit_code == 2);
  }
}

TEST_CASE("The shutdown delay takes a unit, 0s by default, at most a minute") {
  OperatorFlags f;
  CHECK(ParseOperatorFlags({}, &f).exit_code == -1);
  CHECK(f.shutdown_delay_ms == 0);
  CHECK(ParseOperatorFlags({"--shutdown-delay=5s"}, &f).exit_code == -1);
  CHECK(f.shutdown_delay_ms == 5'000);
  for (const char* bad : {"--shutdown-delay=5", "--shutdown-delay=2m", "--shutdown-delay=-1s"}) {
    OperatorFlags g;
    CAPTURE(bad);
    CHECK(ParseOperatorFlags({bad}, &g).exit_code == 2);
  }
}

TEST_CASE("Boolean flags take an optional value") {
  auto [args, elect] = GENERATE(table<std::vector<std::string>, bool>({
      {{"--leader-elect=false"}, false},
      {{"--leader-elect=true"}, true},
      {{"--leader-elect"}, true},
  }));
  OperatorFlags f;
  REQUIRE(ParseOperatorFlags(args, &f).exit_code == -1);
  CHECK(f.leader_elect == elect);
}

TEST_CASE("Usage errors exit 2 with the reason") {
  struct Row {
    std::vector<std::string> args;
    std::string first_line;
  };
  auto row = GENERATE(values<Row>({
      {{"--bogus"}, "error: The following argument was not expected: --bogus"},
      {{"--log-format=yaml"}, "error: --log-format: yaml not in {text,json}"},
      {{"--workers=0"}, "error: --workers: Value 0 not in range 1 to 64"},
      {{"--webhook-port=http"}, "error: --webhook-port: Value http not in range 1 to 65535"},
      {{"--disable-webhook", "--disable-controller"},
       "error: --disable-webhook and --disable-controller leave nothing to run"},
  }));
  CAPTURE(row.args);
  OperatorFlags f;
  FlagParse p = ParseOperatorFlags(row.args, &f);
  CHECK(p.exit_code == 2);
  CHECK(p.output.substr(0, p.output.find('\n')) == row.first_line);
}

TEST_CASE("--help prints usage and exits 0") {
  OperatorFlags f;
  FlagParse p = ParseOperatorFlags({"--help"}, &f);
  CHECK(p.exit_code == 0);
  CHECK(p.output.find("--leader-election-id") != std::string::npos);
}

TEST_CASE("--version prints the release and commit and exits 0") {
  OperatorFlags f;
  FlagParse p = ParseOperatorFlags({"--version"}, &f);
  CHECK(p.exit_code == 0);
  CHECK(p.output == "migration-target-operator " + std::string(base::kRelease) + " (commit " +
                        std::string(base::Commit()) + ")");
  CHECK(ParseOperatorFlags({"--help"}, &f).output.find("--version") != std::string::npos);
}

TEST_CASE("virt-api's VMIMs: untrusted by default, trusted and renamed by flag") {
  OperatorFlags defaults;
  CHECK_FALSE(defaults.trust_virt_api_added_node_selector);
  CHECK(defaults.virt_api_username == "system:serviceaccount:kubevirt:kubevirt-apiserver");

  OperatorFlags f;
  FlagParse p =
      ParseOperatorFlags({"--trust-virt-api-added-node-selector",
                          "--virt-api-username=system:serviceaccount:kv:kubevirt-apiserver"},
                         &f);
  CHECK(p.exit_code == -1);
  CHECK(f.trust_virt_api_added_node_selector);
  CHECK(f.virt_api_username == "system:serviceaccount:kv:kubevirt-apiserver");
  CHECK(defaults.virt_controller_username == "system:serviceaccount:kubevirt:kubevirt-controller");
  OperatorFlags vc;
  CHECK(ParseOperatorFlags(
            {"--virt-controller-username=system:serviceaccount:kv:kubevirt-controller"}, &vc)
            .exit_code == -1);
  CHECK(vc.virt_controller_username == "system:serviceaccount:kv:kubevirt-controller");

  OperatorFlags off;
  CHECK(ParseOperatorFlags({"--trust-virt-api-added-node-selector=false"}, &off).exit_code == -1);
  CHECK_FALSE(off.trust_virt_api_added_node_selector);
}

}  // namespace
}  // namespace kmt::cmd
