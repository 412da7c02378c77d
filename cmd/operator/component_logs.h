// cmd/operator/component_logs.h — where the reports of the packages below become the
// operator's log lines: one function per kind of report, each into the operator's one
// base::Logger, each choosing the message and the level once.
//
// The packages below hand their reports out as data, so that their tests read them and the
// binary decides how they are logged: http/ servers (the webhook's, the probes', the
// metrics') a http::LogRecord, rendered by http::LogTo; kube/'s informers a kube::KubeError
// per watch error they handled (kube::InformerOptions::on_error, through
// controller::InformerViewOptions::on_error); the leader elector a failed Lease call
// (controller::LeaderElectionConfig::on_error).
#pragma once

#include <functional>
#include <string>

#include "base/log.h"
#include "http/server.h"
#include "kube/error.h"

namespace kmt::cmd {

// A server's records, each with component=`component` before its own fields (error or
// info, as the record says).
http::LogSink ServerLog(base::Logger& log, std::string component);

// A watch error an informer handled (it retries): error "Failed to watch" error=<what>.
std::function<void(const kube::KubeError&)> WatchErrorLog(base::Logger& log);

// A failed Lease call (the elector retries): warn "Leader election: failed to <what>"
// lease=<lease> error=<error>.
std::function<void(const std::string& what, const std::string& error)> LeaseErrorLog(
    base::Logger& log, std::string lease);

}  // namespace kmt::cmd
