// cli/migrate.h — `kubectl migrate NAME ...`: create the VMIM as the caller
// (so the API server and the webhook see the real user), optionally follow it.
//
// Exit codes: 0 created (or, with --wait, Succeeded); 1 the API server refused,
// the migration failed, or --wait timed out (reason on stderr).
#pragma once

#include <chrono>
#include <nlohmann/json.hpp>
#include <ostream>
#include <string>

#include "api/node_selector.h"
#include "base/clock.h"
#include "cli/args.h"
#include "kube/client.h"
#include "kube/error.h"

namespace kmt::cli {

struct Streams {
  std::ostream& out;
  std::ostream& err;
};

// The VMIM the plugin creates: generateName from the VMI name, the request as
// the annotation (compact JSON), spec.vmiName.
nlohmann::json BuildMigration(const std::string& ns, const std::string& vmi,
                              const api::NodeSelectorTerm& term);

// kubectl's rendering of an API error: `Error from server (Forbidden): <message>`,
// the message exactly as the API server returned it (a webhook denial included).
std::string FormatKubeError(const kube::KubeError& e);

int RunMigrate(const Invocation& inv, const std::string& ns, const api::NodeSelectorTerm& term,
               kube::KubeClient& client, Streams io, base::Clock& clock = base::SystemClock());

// Follows VMIM `name` until Succeeded (0), Failed (1) or `timeout` on `clock` (1), printing
// each phase change and each change of this operator's conditions.
int WaitForMigration(const std::string& ns, const std::string& name,
                     const std::string& resource_version, std::chrono::milliseconds timeout,
                     kube::KubeClient& client, Streams io,
                     base::Clock& clock = base::SystemClock());

}  // namespace kmt::cli
