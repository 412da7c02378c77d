#include "bench/cluster_ops.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <exception>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <vector>

#include "kube/error.h"
#include "kube/kubeconfig.h"
#include "kube/resources.h"
#include "kube/rest_client.h"

namespace kmt::bench {

namespace {
const kube::Resource kServiceAccounts{"", "v1", "serviceaccounts", true, "ServiceAccount"};
}  // namespace

std::unique_ptr<kube::KubeClient> MakeUnthrottledClient(const std::string& kubeconfig) {
  kube::KubeconfigOptions ko;
  ko.explicit_path = kubeconfig;
  kube::TransportOptions to;
  to.qps = 0;
  to.user_agent = "kmt-bench";
  return std::make_unique<kube::RestClient>(kube::LoadClientConfig(ko), to);
}

void EnsureNamespace(kube::KubeClient& client, const std::string& ns) {
  try {
    client.Create(kube::kNamespaces, "",
                  {{"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", ns}}}});
  } catch (const kube::KubeError& e) {
    if (e.kind() != kube::ErrorKind::kConflict) throw;  // 409 AlreadyExists
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  for (;;) {
    try {
      client.Get(kServiceAccounts, ns, "default");
      return;
    } catch (const kube::KubeError& e) {
      if (e.kind() != kube::ErrorKind::kNotFound) throw;
    }
    if (std::chrono::steady_clock::now() > deadline) {
      throw std::runtime_error("namespace " + ns + " has no default ServiceAccount after 60 s");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

void ParallelFor(size_t n, size_t threads, const std::function<void(size_t)>& fn) {
  std::atomic<size_t> next{0};
  std::mutex mu;
  std::exception_ptr first;
  std::vector<std::thread> pool;
  for (size_t t = 0; t < std::max<size_t>(threads, 1); ++t) {
    pool.emplace_back([&] {
      for (size_t i = next.fetch_add(1); i < n; i = next.fetch_add(1)) {
        try {
          fn(i);
        } catch (...) {
          std::lock_guard<std::mutex> lock(mu);
          if (!first) first = std::current_exception();
        }
      }
    });
  }
  for (auto& t : pool) t.join();
  if (first) std::rethrow_exception(first);
}

}  // namespace kmt::bench
