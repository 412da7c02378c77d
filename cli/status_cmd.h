// cli/status_cmd.h — `kubectl migrate status MIGRATION`: phase, VMI, source and
// target node, this operator's conditions and the migration's recent Events.
#pragma once

#include <string>

#include "cli/migrate.h"
#include "kube/client.h"

namespace kmt::cli {

int RunStatus(const std::string& ns, const std::string& name, kube::KubeClient& client, Streams io);

}  // namespace kmt::cli
