#include "webhook/certs/bootstrap.h"

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "base/fake_clock.h"
#include "kube/base64.h"
#include "kube/fake_client.h"
#include "kube/resources.h"
#include "webhook/certs/self_signed.h"

namespace kmt::webhook::certs {
namespace {

using namespace std::chrono;
using nlohmann::json;

std::string Slurp(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

json WebhookConfig(const char* kind, const std::vector<std::string>& names) {
  json hooks = json::array();
  for (const auto& n : names) {
    hooks.push_back({{"name", n},
                     {"admissionReviewVersions", {"v1"}},
                     {"sideEffects", "None"},
                     {"clientConfig", {{"url", "https://127.0.0.1:9443/x"}}}});
  }
  return {{"apiVersion", "admissionregistration.k8s.io/v1"},
          {"kind", kind},
          {"metadata", {{"name", "migration-target"}}},
          {"webhooks", hooks}};
}

struct Fixture {
  kube::FakeClient fake;
  std::filesystem::path dir;
  base::FakeClock clock{base::SystemClock().WallNow()};  // wall time starts at the real time
  Fixture() {
    dir = std::filesystem::temp_directory_path() /
          ("kmt-certs-" + std::to_string(::getpid()) + "-" + std::to_string(counter++));
    std::filesystem::remove_all(dir);
    fake.Create(kube::kValidatingWebhookConfigurations, "",
                WebhookConfig("ValidatingWebhookConfiguration", {"vmim.x"}));
    fake.Create(kube::kMutatingWebhookConfigurations, "",
                WebhookConfig("MutatingWebhookConfiguration", {"pod.x"}));
  }
  ~Fixture() { std::filesystem::remove_all(dir); }
  BootstrapOptions Options(std::vector<std::string> hosts = {"127.0.0.1", "localhost"}) {
    BootstrapOptions o;
    o.ns = "kmt";
    o.hosts = std::move(hosts);
    o.cert_dir = dir.string();
    return o;
  }
  CertBootstrap Make(BootstrapOptions o) { return {fake, std::move(o), clock}; }
  std::string CaBundle(const kube::Resource& r) {
    return fake.Get(r, "", "migration-target")["webhooks"][0]["clientConfig"].value("caBundle", "");
  }
  static inline int counter = 0;
};

TEST_CASE("first run creates the Secret, writes the files and injects the CA") {
  Fixture f;
  auto boot = f.Make(f.Options());
  BootstrapResult r = boot.Ensure();
  CHECK(r.secret_created);
  CHECK(r.files_written);
  CHECK(r.webhooks_patched == 2);
  std::string ca = Slurp(f.dir / "ca.crt");
  std::string crt = Slurp(f.dir / "tls.crt");
  std::string key = Slurp(f.dir / "tls.key");
  CHECK(Verifies(ca, crt, key));
  // The private key is the operator's alone; the certificates are public.
  auto mode = [&](const char* name) {
    return static_cast<int>(std::filesystem::status(f.dir / name).permissions() &
                            std::filesystem::perms::all);
  };
  CHECK(mode("tls.key") == 0600);
  CHECK(mode("tls.crt") == 0644);
  CHECK(mode("ca.crt") == 0644);
  CHECK_FALSE(std::filesystem::exists(f.dir / "tls.key.tmp"));
  CHECK(Inspect(crt)->hosts == std::vector<std::string>{"127.0.0.1", "localhost"});
  CHECK(f.CaBundle(kube::kValidatingWebhookConfigurations) == kube::EncodeBase64(ca));
  CHECK(f.CaBundle(kube::kMutatingWebhookConfigurations) == kube::EncodeBase64(ca));
  json secret = f.fake.Get(kube::kSecrets, "kmt", "migration-target-webhook-cert");
  CHECK(kube::DecodeBase64(secret["data"]["tls.crt"].get<std::string>()) == crt);
  // Scrapers read the CA certificate from a ConfigMap that holds nothing else: no key.
  CHECK(r.ca_published);
  json cm = f.fake.Get(kube::kConfigMaps, "kmt", "migration-target-webhook-ca");
  CHECK(cm["data"] == json{{"ca.crt", ca}});

  SECTION("a second run changes nothing") {
    auto rv = f.fake.ResourceVersion();
    BootstrapResult again = boot.Ensure();
    CHECK_FALSE(again.secret_created);
    CHECK_FALSE(again.secret_renewed);
    CHECK_FALSE(again.files_written);
    CHECK(again.webhooks_patched == 0);
    CHECK_FALSE(again.ca_published);
    CHECK(f.fake.ResourceVersion() == rv);
  }

  SECTION("the CA ConfigMap is put back as it was: a key added by hand goes, an edit is undone") {
    json cm = f.fake.Get(kube::kConfigMaps, "kmt", "migration-target-webhook-ca");
    cm["data"]["ca.crt"] = "tampered";
    cm["data"]["extra"] = "x";
    f.fake.Update(kube::kConfigMaps, "kmt", cm);
    BootstrapResult again = boot.Ensure();
    CHECK(again.ca_published);
    CHECK(f.fake.Get(kube::kConfigMaps, "kmt", "migration-target-webhook-ca")["data"] ==
          json{{"ca.crt", ca}});
  }

  SECTION("a new CA is published with the new caBundle") {
    f.clock.Advance(hours(24 * 365 * 10));  // the CA itself is near its end
    BootstrapResult renewed = boot.Ensure();
    CHECK(renewed.secret_renewed);
    CHECK(renewed.ca_published);
    const std::string new_ca = Slurp(f.dir / "ca.crt");
    CHECK(new_ca != ca);
    CHECK(f.fake.Get(kube::kConfigMaps, "kmt", "migration-target-webhook-ca")["data"]["ca.crt"] ==
          new_ca);
    CHECK(f.CaBundle(kube::kValidatingWebhookConfigurations) == kube::EncodeBase64(new_ca));
  }

  SECTION("near expiry the serving certificate is renewed under the same CA") {
    f.clock.Advance(hours(24 * 340));
    BootstrapResult renewed = boot.Ensure();
    CHECK(renewed.secret_renewed);
    CHECK(renewed.files_written);
    CHECK(renewed.webhooks_patched == 0);  // same CA: the caBundle stays
    CHECK(Slurp(f.dir / "ca.crt") == ca);
    CHECK(Slurp(f.dir / "tls.crt") != crt);
    CHECK(Verifies(ca, Slurp(f.dir / "tls.crt"), Slurp(f.dir / "tls.key")));
  }

  SECTION("a key file written before with a wider mode is rewritten 0600") {
    std::filesystem::permissions(f.dir / "tls.key", std::filesystem::perms::owner_read |
                                                        std::filesystem::perms::owner_write |
                                                        std::filesystem::perms::group_read |
                                                        std::filesystem::perms::others_read);
    CHECK(boot.Ensure().files_written);
    CHECK(mode("tls.key") == 0600);
    CHECK(Slurp(f.dir / "tls.key") == key);
  }

  SECTION("a changed host list gets a new serving certificate") {
    auto other = f.Make(f.Options({"127.0.0.1"}));
    CHECK(other.Ensure().secret_renewed);
    CHECK(Inspect(Slurp(f.dir / "tls.crt"))->hosts == std::vector<std::string>{"127.0.0.1"});
  }

  SECTION("a replaced caBundle is put back") {
    json vwc = f.fake.Get(kube::kValidatingWebhookConfigurations, "", "migration-target");
    vwc["webhooks"][0]["clientConfig"]["caBundle"] = kube::EncodeBase64("stale");
    f.fake.Update(kube::kValidatingWebhookConfigurations, "", vwc);
    CHECK(boot.Ensure().webhooks_patched == 1);
    CHECK(f.CaBundle(kube::kValidatingWebhookConfigurations) == kube::EncodeBase64(ca));
  }
}

TEST_CASE("two replicas racing on the first run agree on one certificate") {
  Fixture f;
  auto a = f.Make(f.Options());
  auto b = f.Make(f.Options());
  bool raced = false;
  // Replica b creates the Secret right after replica a read "not found".
  f.fake.SetCallHook([&](const kube::FakeCall& call) {
    if (!raced && call.verb == kube::Verb::kCreate && call.resource == "secrets") {
      raced = true;
      b.Ensure();
    }
  });
  BootstrapResult r = a.Ensure();
  CHECK(raced);
  CHECK_FALSE(r.secret_created);  // a lost the create and used b's Secret
  json secret = f.fake.Get(kube::kSecrets, "kmt", "migration-target-webhook-cert");
  CHECK(kube::DecodeBase64(secret["data"]["tls.crt"].get<std::string>()) ==
        Slurp(f.dir / "tls.crt"));
}

TEST_CASE("missing webhook configurations are skipped; API errors surface") {
  kube::FakeClient fake;
  BootstrapOptions o;
  o.ns = "kmt";
  o.hosts = {"127.0.0.1"};
  CertBootstrap boot(fake, o);
  BootstrapResult r = boot.Ensure();
  CHECK(r.secret_created);
  CHECK(r.webhooks_patched == 0);
  CHECK_FALSE(r.files_written);  // no cert_dir

  kube::FakeClient broken;
  broken.FailNext(kube::Verb::kGet, 1, kube::ErrorKind::kUnavailable);
  CertBootstrap failing(broken, o);
  CHECK_THROWS_AS(failing.Ensure(), kube::KubeError);
}

}  // namespace
}  // namespace kmt::webhook::certs
