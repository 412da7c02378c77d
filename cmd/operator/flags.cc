// cmd/operator/flags.cc
#include "cmd/operator/flags.h"

#include <CLI/CLI.hpp>
#include <map>
#include <string>

#include "base/log.h"
#include "base/version.h"

namespace kmt::cmd {

FlagParse ParseOperatorFlags(const std::vector<std::string>& args, OperatorFlags* f) {
  CLI::App app{
      "The kubevirt-migration-target operator: the reconcile loop (on the leader) and "
      "the admission webhook (on every replica).",
      "operator"};
  app.option_defaults()->always_capture_default();
  app.add_option(
      "--kubeconfig", f->kubeconfig,
      "Path to a kubeconfig; default $KUBECONFIG, then the in-cluster config, then ~/.kube/config");
  app.add_option("--context", f->context, "The kubeconfig context to use");
  app.add_option("--leader-elect", f->leader_elect,
                 "Elect a leader with a Lease; only the leader reconciles")
      ->expected(0, 1)
      ->default_str("true");
  app.add_option("--leader-election-namespace", f->leader_election_namespace,
                 "Namespace of the Lease; default the pod's own namespace");
  app.add_option("--leader-election-id", f->leader_election_id, "Name of the Lease");
  app.add_option("--webhook-port", f->webhook_port, "Port of the admission webhook (HTTPS)")
      ->check(CLI::Range(1, 65535));
  app.add_option("--webhook-cert-dir", f->webhook_cert_dir,
                 "Directory with tls.crt and tls.key, reloaded when they change");
  app.add_option("--webhook-cert-mode", f->webhook_cert_mode,
                 "files: read the certificate from --webhook-cert-dir; self: the operator "
                 "manages it")
      ->check(CLI::IsMember({"files", "self"}));
  app.add_option("--webhook-cert-hosts", f->webhook_cert_hosts,
                 "With --webhook-cert-mode=self: DNS names or IPs of the serving certificate "
                 "(default: the Service's DNS names)")
      ->delimiter(',');
  app.add_option("--webhook-client-ca", f->webhook_client_ca,
                 "PEM file of the CAs whose client certificates the webhook port requires "
                 "(mutual TLS with the API server), reloaded when it changes; empty: any "
                 "client may connect");
  app.add_option("--kube-api-qps", f->kube_api_qps, "Requests per second to the API server")
      ->check(CLI::PositiveNumber);
  app.add_option("--kube-api-burst", f->kube_api_burst, "Burst of requests to the API server")
      ->check(CLI::PositiveNumber);
  app.add_option("--health-probe-bind-address", f->health_probe_bind_address,
                 "Address of /healthz and /readyz (\"0\" disables)");
  app.add_option("--metrics-bind-address", f->metrics_bind_address,
                 "Address of /metrics (\"0\" disables)");
  app.add_option("--metrics-secure", f->metrics_secure,
                 "Serve /metrics over HTTPS to authenticated and authorized scrapers only "
                 "(TokenReview, then SubjectAccessReview of get on /metrics); false: plain HTTP "
                 "to anyone")
      ->expected(0, 1)
      ->default_str("true");
  app.add_option("--metrics-cert-path", f->metrics_cert_path,
                 "Directory with tls.crt and tls.key of the metrics server (default: "
                 "--webhook-cert-dir, the webhook's certificate)");
  app.add_option("--log-level", f->log_level, "debug, info, warn or error")
      ->check(CLI::IsMember({"debug", "info", "warn", "error"}));
  app.add_option("--log-format", f->log_format, "text (key=value) or json")
      ->check(CLI::IsMember({"text", "json"}));
  app.add_option("--workers", f->workers, "Concurrent reconciles")->check(CLI::Range(1, 64));
  app.add_flag("--disable-webhook", f->disable_webhook, "Do not serve the admission webhook");
  app.add_flag("--disable-controller", f->disable_controller, "Do not run the reconcile loop");
  app.add_flag("--fail-fast-unschedulable", f->fail_fast_unschedulable,
               "Delete a placed migration's target pod when no node its term allows can ever "
               "take it (only the VM's own node, nodes that do not exist, or nodes the VM's own "
               "affinity excludes), so KubeVirt fails the migration at once instead of after its "
               "unschedulable timeout; a node labelled to match later is not waited for");
  app.add_option("--check-kubevirt-added-node-selector", f->check_kubevirt_added_node_selector,
                 "Require the admin permission for KubeVirt's spec.addedNodeSelector too")
      ->expected(0, 1)
      ->default_str("true");
  app.add_flag("--trust-virt-api-added-node-selector", f->trust_virt_api_added_node_selector,
               "Let VMIMs that virt-api creates for virtctl migrate (the virtualmachines/migrate "
               "subresource, which virt-api authorises itself) carry spec.addedNodeSelector "
               "without the admin check");
  app.add_option("--virt-api-username", f->virt_api_username,
                 "The user KubeVirt's virt-api creates VMIMs as")
      ->capture_default_str();
  app.add_option("--virt-controller-username", f->virt_controller_username,
                 "The user KubeVirt's virt-controller creates evacuation VMIMs as (only those get "
                 "a MigrationTargetPolicy's term)")
      ->capture_default_str();

  const std::map<std::string, int> kDurationUnits{{"ms", 1}, {"s", 1000}, {"m", 60'000}};
  const auto kUnitRequired = static_cast<CLI::AsNumberWithUnit::Options>(
      CLI::AsNumberWithUnit::CASE_SENSITIVE | CLI::AsNumberWithUnit::UNIT_REQUIRED);
  app.add_option("--authorization-cache-authorized-ttl", f->authorization_cache_authorized_ttl_ms,
                 "How long the webhook remembers that a user may set the added term (e.g. 10s, "
                 "500ms, 1m; at most 60m; 0s = ask every time): the longest a revoked admin can "
                 "still place migrations")
      ->transform(CLI::AsNumberWithUnit(kDurationUnits, kUnitRequired, "DURATION"))
      ->check(CLI::Range(0, 3'600'000).description(""))
      ->type_name("DURATION")
      ->default_str("10s");
  app.add_option("--authorization-cache-unauthorized-ttl",
                 f->authorization_cache_unauthorized_ttl_ms,
                 "How long the webhook remembers that a user may not set the added term: the "
                 "longest a newly granted admin waits")
      ->transform(CLI::AsNumberWithUnit(kDurationUnits, kUnitRequired, "DURATION"))
      ->check(CLI::Range(0, 3'600'000).description(""))
      ->type_name("DURATION")
      ->default_str("2s");
  app.add_option("--shutdown-delay", f->shutdown_delay_ms,
                 "After SIGTERM, keep answering admission reviews this long (each answer closes "
                 "its connection; /readyz fails) before stopping, so that the Service stops "
                 "routing here first (e.g. 5s; at most 60s; 0s = stop at once)")
      ->transform(CLI::AsNumberWithUnit(kDurationUnits, kUnitRequired, "DURATION"))
      ->check(CLI::Range(0, 60'000).description(""))
      ->type_name("DURATION")
      ->default_str("0s");

  app.set_version_flag("--version", base::VersionLine("migration-target-operator"),
                       "Print the release and commit, then exit");

  FlagParse out;
  std::vector<std::string> reversed(args.rbegin(), args.rend());  // CLI11 parses a reversed list
  try {
    app.parse(reversed);
  } catch (const CLI::CallForHelp&) {
    out.exit_code = 0;
    out.output = app.help();
    return out;
  } catch (const CLI::CallForVersion&) {
    out.exit_code = 0;
    out.output = base::VersionLine("migration-target-operator");
    return out;
  } catch (const CLI::ParseError& e) {
    out.exit_code = 2;
    out.output = std::string("error: ") + e.what() + "\nRun with --help for usage.";
    return out;
  }
  if (f->disable_webhook && f->disable_controller) {
    out.exit_code = 2;
    out.output = "error: --disable-webhook and --disable-controller leave nothing to run";
  }
  return out;
}

}  // namespace kmt::cmd
