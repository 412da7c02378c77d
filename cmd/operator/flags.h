// cmd/operator/flags.h — the operator binary's command line (CLI11), with
// controller-runtime's flag names and defaults where they exist.
#pragma once

#include <string>
#include <vector>

namespace kmt::cmd {

struct OperatorFlags {
  std::string kubeconfig;  // "" = $KUBECONFIG, then in-cluster
  std::string context;
  bool leader_elect = true;
  std::string leader_election_namespace;  // "" = the pod's own namespace (in cluster)
  std::string leader_election_id = "migration-target-operator";
  int webhook_port = 9443;
  std::string webhook_cert_dir = "/tmp/k8s-webhook-server/serving-certs";
  std::string webhook_cert_mode = "files";  // files | self
  // With webhook_cert_mode "self": the serving certificate's names ("" = the Service's).
  std::vector<std::string> webhook_cert_hosts;
  // Mutual TLS on the webhook port: a PEM bundle of the CAs whose client certificates it
  // accepts ("" = any client may connect; see docs/security.md).
  std::string webhook_client_ca;
  std::string health_probe_bind_address = ":8081";
  // kubebuilder v4's metrics: HTTPS on :8443, the scraper's token checked by a TokenReview
  // and its right to `get` /metrics by a SubjectAccessReview (cmd/operator/metrics_auth.h).
  // Plain, unauthenticated HTTP only with --metrics-secure=false.
  std::string metrics_bind_address = ":8443";
  bool metrics_secure = true;
  // tls.crt and tls.key of the metrics server ("" = the webhook's, --webhook-cert-dir).
  std::string metrics_cert_path;
  std::string log_level = "info";
  std::string log_format = "text";
  int workers = 4;
  bool fail_fast_unschedulable = false;
  // Client-side rate limit towards the API server (client-go's QPS/Burst), per client
  // (controller, webhook, events, leader election). KubeVirt's virt-controller defaults.
  double kube_api_qps = 200;
  int kube_api_burst = 400;
  bool disable_webhook = false;
  bool disable_controller = false;
  // Apply the admin check to KubeVirt's own spec.addedNodeSelector too.
  bool check_kubevirt_added_node_selector = true;
  // Let VMIMs created by virt-api (virtctl migrate, the virtualmachines/migrate
  // subresource) carry spec.addedNodeSelector without that check, trusting virt-api's
  // own authorisation of the person; and who virt-api is.
  bool trust_virt_api_added_node_selector = false;
  std::string virt_api_username = "system:serviceaccount:kubevirt:kubevirt-apiserver";
  // The user KubeVirt's evacuation controller creates VMIMs as: only its evacuation VMIMs
  // get a MigrationTargetPolicy's term.
  std::string virt_controller_username = "system:serviceaccount:kubevirt:kubevirt-controller";
  // How long the webhook remembers a SubjectAccessReview's answer (0 = not at all): the
  // longest a revoked admin can still place migrations, and a new one waits.
  int authorization_cache_authorized_ttl_ms = 10'000;
  int authorization_cache_unauthorized_ttl_ms = 2'000;
  // After SIGTERM: how long the replica keeps answering admission reviews, each answer closing
  // its connection, with /readyz failing, before it stops (0 = stop at once). Time for the
  // Service to stop routing to it and for the API server's pooled connections to retire, so
  // that a rolling update or a drain fails no review.
  int shutdown_delay_ms = 0;
};

struct FlagParse {
  int exit_code = -1;  // >= 0: exit now with this code (help: 0, usage error: 2)
  std::string output;  // what to print (help text or the error with usage hint)
};

// Parses argv into *flags. Unknown flags, bad values and conflicting
// switches are usage errors (exit code 2, as kubectl and Go's flag package).
FlagParse ParseOperatorFlags(const std::vector<std::string>& args, OperatorFlags* flags);

}  // namespace kmt::cmd
