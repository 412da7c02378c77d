// kubectl-migrate — the kubectl plugin (kubectl discovers `kubectl-migrate` on PATH).
// Exit codes: 0 success, 1 failure (API error, failed or timed-out migration,
// nothing fits), 2 usage error.
#include <chrono>
#include <csignal>
#include <fstream>
#include <iostream>
#include <iterator>
#include <memory>
#include <sstream>

#include "base/clock.h"
#include "base/version.h"
#include "cli/args.h"
#include "cli/cancel_cmd.h"
#include "cli/completion.h"
#include "cli/explain_cmd.h"
#include "cli/list_cmd.h"
#include "cli/migrate.h"
#include "cli/policy_explain_cmd.h"
#include "cli/status_cmd.h"
#include "cli/term_builder.h"
#include "kube/error.h"
#include "kube/kubeconfig.h"
#include "kube/rest_client.h"

namespace {

using kmt::cli::Command;

int UsageError(const std::string& why) {
  std::cerr << "error: " << why << "\nSee 'kubectl migrate --help' for usage.\n";
  return 2;
}

std::optional<std::string> ReadTermFile(const std::string& path, std::string* error) {
  std::ostringstream s;
  if (path == "-") {
    s << std::cin.rdbuf();
    return s.str();
  }
  std::ifstream in(path);
  if (!in) {
    *error = "cannot read --term-file " + path;
    return std::nullopt;
  }
  s << in.rdbuf();
  return s.str();
}

// `kubectl-migrate __complete WORDS...` (what kubectl_complete-migrate runs): the candidates
// for the last word, in the protocol kubectl reads (cli/completion.h). Always exits 0;
// trouble reaching the cluster is the error directive, so the shell offers nothing.
int RunComplete(const std::vector<std::string>& words, bool descriptions) {
  kmt::cli::CompletionRequest req = kmt::cli::ReadCompletionLine(words);
  std::unique_ptr<kmt::kube::RestClient> client;
  std::string ns = req.ns.value_or("default");
  if (req.NeedsCluster()) {
    try {
      kmt::kube::KubeconfigOptions ko;
      ko.explicit_path = req.kubeconfig;
      ko.context = req.context;
      kmt::kube::ClientConfig config = kmt::kube::LoadClientConfig(ko);
      ns = req.ns.value_or(config.namespace_name);
      kmt::kube::TransportOptions to;
      to.user_agent = "kubectl-migrate/0.1 (completion)";
      // A TAB must answer quickly or not at all.
      to.connect_timeout = std::chrono::seconds(2);
      to.read_timeout = std::chrono::seconds(5);
      client = std::make_unique<kmt::kube::RestClient>(config, to);
    } catch (const std::exception& e) {
      std::cerr << "kubectl-migrate completion: " << e.what() << "\n";
    }
  }
  std::cout << kmt::cli::FormatCompletion(kmt::cli::Complete(req, ns, client.get()), descriptions);
  return 0;
}

int Run(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (!args.empty() && (args[0] == "__complete" || args[0] == "__completeNoDesc")) {
    return RunComplete({args.begin() + 1, args.end()}, args[0] == "__complete");
  }
  for (const std::string& a : args) {
    if (a == "--") break;
    if (a == "--version") {
      std::cout << kmt::base::VersionLine("kubectl-migrate") << "\n";
      return 0;
    }
  }
  auto parsed = kmt::cli::ParseArgs(args);
  if (!parsed.invocation) return UsageError(parsed.error);
  const auto& inv = *parsed.invocation;
  if (inv.command == Command::kHelp) {
    std::cout << kmt::cli::HelpText(inv.help_for);
    return 0;
  }

  std::optional<kmt::api::NodeSelectorTerm> term;
  if (inv.HasRequest()) {
    std::optional<std::string> file_text;
    if (inv.term_file) {
      std::string err;
      file_text = ReadTermFile(*inv.term_file, &err);
      if (!file_text) {
        std::cerr << "error: " << err << "\n";
        return 1;
      }
    }
    auto built = kmt::cli::BuildTerm(inv, file_text);
    if (!built.term) {
      std::cerr << "error: " << built.error << "\n";
      return 1;
    }
    term = built.term;
  }

  kmt::kube::KubeconfigOptions ko;
  ko.explicit_path = inv.kubeconfig;
  ko.context = inv.context;
  kmt::kube::ClientConfig config = kmt::kube::LoadClientConfig(ko);
  std::string ns = inv.ns.value_or(config.namespace_name);
  kmt::kube::TransportOptions to;
  to.user_agent = "kubectl-migrate/0.1";
  kmt::kube::RestClient client(config, to);
  kmt::cli::Streams io{std::cout, std::cerr};
  kmt::base::RealClock clock;  // --wait's deadline and backoff, list's ages

  switch (inv.command) {
    case Command::kMigrate:
      return kmt::cli::RunMigrate(inv, ns, *term, client, io, clock);
    case Command::kExplain:
      return kmt::cli::RunExplain(ns, inv.name, term, client, io);
    case Command::kStatus:
      return kmt::cli::RunStatus(ns, inv.name, client, io);
    case Command::kCancel:
      return kmt::cli::RunCancel(inv, ns, client, io);
    case Command::kList:
      return kmt::cli::RunList(inv, ns, client, io, clock.WallNow());
    case Command::kPolicyExplain:
      // Every namespace unless -n says otherwise: a drain moves them all.
      return kmt::cli::RunPolicyExplain(inv.name, inv.ns, inv.origin, inv.output, client, io);
    case Command::kHelp:
      break;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  // A peer that closes a kept-alive connection must surface as an error, not kill us.
  std::signal(SIGPIPE, SIG_IGN);
  try {
    return Run(argc, argv);
  } catch (const kmt::kube::KubeError& e) {
    std::cerr << kmt::cli::FormatKubeError(e) << "\n";
    return 1;
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  }
}
