// bench/cluster_ops.h — small helpers the cluster benchmarks share: a client without
// client-side rate limiting (a load generator must not throttle itself), namespaces ready
// for pods, and a parallel loop.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <string>

#include "kube/client.h"

namespace kmt::bench {

// A RestClient for the kubeconfig at `path`, QPS limiting off.
std::unique_ptr<kube::KubeClient> MakeUnthrottledClient(const std::string& kubeconfig);

// Creates namespace `ns` (an existing one is fine) and waits up to 60 s for its "default"
// ServiceAccount, without which the API server refuses pods. Throws on timeout.
void EnsureNamespace(kube::KubeClient& client, const std::string& ns);

// Runs fn(0..n-1) on `threads` threads; the first exception is rethrown after all finish.
void ParallelFor(size_t n, size_t threads, const std::function<void(size_t)>& fn);

}  // namespace kmt::bench
