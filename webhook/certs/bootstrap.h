// webhook/certs/bootstrap.h — the default certificate story, without manual steps.
//
// With --webhook-cert-mode=self, every replica runs CertBootstrap::Ensure() at
// start and then periodically. The Secret is the single source of truth:
//   1. read Secret <ns>/<secret_name>; if it is missing, make a CA and a serving
//      certificate and create it (409 AlreadyExists: another replica won the race,
//      re-read and use theirs);
//   2. if the serving certificate expires within renew_before, or its hosts differ
//      from the wanted ones, sign a new one with the same CA and update the Secret
//      (409 Conflict: re-read, start over);
//   3. write ca.crt, tls.crt, tls.key into cert_dir when they differ (atomic
//      rename; the webhook server's hot reload picks them up);
//   4. set clientConfig.caBundle of every webhook of the Validating- and
//      MutatingWebhookConfiguration <webhook_config_name> when it differs, with a
//      JSON Patch whose `test` ops pin each webhook's name;
//   5. publish the CA certificate alone in ConfigMap <ns>/<ca_config_map_name> (key
//      ca.crt) when it differs: what a metrics scraper verifies the operator with. The
//      Secret holds both private keys (the CA's and the serving one): whoever reads it can
//      sign or present a webhook certificate the API server trusts, so nothing but the
//      operator needs to read it.
// A webhook configuration that does not exist is skipped (not yet applied).
#pragma once

#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include "base/clock.h"
#include "kube/client.h"

namespace kmt::webhook::certs {

struct BootstrapOptions {
  std::string ns = "kubevirt-migration-target";
  std::string secret_name = "migration-target-webhook-cert";
  std::string webhook_config_name = "migration-target";
  // The CA certificate, public, for scrapers (manifests/monitoring); "" publishes none.
  std::string ca_config_map_name = "migration-target-webhook-ca";
  // Subject alternative names of the serving certificate (DNS names or IPs).
  std::vector<std::string> hosts = {"migration-target-webhook.kubevirt-migration-target.svc",
                                    "migration-target-webhook.kubevirt-migration-target.svc."
                                    "cluster.local"};
  std::string cert_dir;  // gets ca.crt, tls.crt, tls.key
  std::chrono::hours ca_validity{24 * 365 * 10};
  std::chrono::hours serving_validity{24 * 365};
  std::chrono::hours renew_before{24 * 30};
};

struct BootstrapResult {
  bool secret_created = false;
  bool secret_renewed = false;
  bool files_written = false;
  int webhooks_patched = 0;   // webhook entries whose caBundle changed
  bool ca_published = false;  // the CA ConfigMap was created or updated
};

class CertBootstrap {
 public:
  // Certificates are dated by `clock`'s wall time.
  CertBootstrap(kube::KubeClient& client, BootstrapOptions options,
                base::Clock& clock = base::SystemClock());

  // One idempotent pass. Throws kube::KubeError when the API server fails (the
  // caller retries later) and std::runtime_error when cert_dir cannot be written.
  BootstrapResult Ensure();

 private:
  nlohmann::json EnsureSecret(BootstrapResult& result);
  bool WriteFiles(const std::string& ca, const std::string& cert, const std::string& key);
  int InjectCa(const kube::Resource& r, const std::string& ca_b64);
  bool PublishCa(const std::string& ca);

  kube::KubeClient& client_;
  BootstrapOptions options_;
  base::Clock& clock_;
};

}  // namespace kmt::webhook::certs
