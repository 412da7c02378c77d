// bench/cluster_ops.h — small helpers the cluster benchmarks share: a client without
// client-side rate limiting (a load generator must not throttle itself), namespaces ready
// for pods, and a parallel loop.
#pragma once

#include <chrono>
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

// Deletes namespace `ns` and lets its VMIMs and VMIs go: virt-api puts KubeVirt's finalizers
// on both, and virt-controller, which would remove them, is stopped while the cluster
// benchmarks run, so this removes them itself. Does not wait for the namespace to be gone.
void DeleteNamespace(kube::KubeClient& client, const std::string& ns);

// Waits until namespace `ns` is gone (its content deleted by kube-controller-manager's
// namespace controller, work that would otherwise overlap the next measurement); throws
// after `timeout`.
void WaitNamespaceGone(kube::KubeClient& client, const std::string& ns,
                       std::chrono::seconds timeout);

// Waits until no VMIM and no virt-launcher pod is left in the cluster (earlier runs'
// namespaces being deleted); throws after `timeout`, naming one that is still there.
void WaitNoMigrations(kube::KubeClient& client, std::chrono::seconds timeout);

// Creates directory `dir` (and its parents) for the operator's logs; throws a message that
// names --log-dir when it cannot.
void EnsureLogDir(const std::string& dir);

// Throws when a port of [first, last] is in the kernel's ephemeral range
// (/proc/sys/net/ipv4/ip_local_port_range), where a client socket can take it at random
// before the operator listens on it, or outside 1024..65535.
void CheckListenPorts(int first, int last);

// Runs fn(0..n-1) on `threads` threads; the first exception is rethrown after all finish.
void ParallelFor(size_t n, size_t threads, const std::function<void(size_t)>& fn);

}  // namespace kmt::bench
