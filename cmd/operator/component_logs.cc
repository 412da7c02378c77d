#include "cmd/operator/component_logs.h"

#include <utility>

namespace kmt::cmd {

http::LogSink ServerLog(base::Logger& log, std::string component) {
  return http::SinkTo(log, {{"component", std::move(component)}});
}

std::function<void(const kube::KubeError&)> WatchErrorLog(base::Logger& log) {
  return [&log](const kube::KubeError& e) { log.Error("Failed to watch", {{"error", e.what()}}); };
}

std::function<void(const std::string& what, const std::string& error)> LeaseErrorLog(
    base::Logger& log, std::string lease) {
  return [&log, lease = std::move(lease)](const std::string& what, const std::string& error) {
    log.Warn("Leader election: failed to " + what, {{"lease", lease}, {"error", error}});
  };
}

}  // namespace kmt::cmd
