#include "bench/cluster_ops.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <exception>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <vector>

#include "base/poll.h"
#include "kube/error.h"
#include "kube/kubeconfig.h"
#include "kube/paging.h"
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
  const bool has_account = base::PollUntil(base::SystemClock(), std::chrono::seconds(60),
                                           std::chrono::milliseconds(100), [&] {
                                             try {
                                               client.Get(kServiceAccounts, ns, "default");
                                               return true;
                                             } catch (const kube::KubeError& e) {
                                               if (e.kind() != kube::ErrorKind::kNotFound) throw;
                                               return false;
                                             }
                                           });
  if (!has_account) {
    throw std::runtime_error("namespace " + ns + " has no default ServiceAccount after 60 s");
  }
}

void DeleteNamespace(kube::KubeClient& client, const std::string& ns) {
  try {
    client.Delete(kube::kNamespaces, "", ns);
  } catch (const kube::KubeError& e) {
    if (e.kind() != kube::ErrorKind::kNotFound) throw;
  }
  const kube::Json no_finalizers = {{"metadata", {{"finalizers", nullptr}}}};
  for (const kube::Resource* r :
       {&kube::kVirtualMachineInstanceMigrations, &kube::kVirtualMachineInstances}) {
    const kube::Json items = kube::ListAll(client, *r, ns)["items"];
    ParallelFor(items.size(), 16, [&](size_t i) {
      const kube::Json& meta = items[i]["metadata"];
      if (!meta.contains("finalizers") || meta["finalizers"].empty()) return;
      try {
        client.Patch(*r, ns, meta.value("name", ""), kube::PatchType::kMergePatch, no_finalizers);
      } catch (const kube::KubeError& e) {
        if (e.kind() != kube::ErrorKind::kNotFound) throw;
      }
    });
  }
}

void WaitNamespaceGone(kube::KubeClient& client, const std::string& ns,
                       std::chrono::seconds timeout) {
  const bool gone =
      base::PollUntil(base::SystemClock(), timeout, std::chrono::milliseconds(200), [&] {
        try {
          client.Get(kube::kNamespaces, "", ns);
          return false;
        } catch (const kube::KubeError& e) {
          if (e.kind() == kube::ErrorKind::kNotFound) return true;
          throw;
        }
      });
  if (!gone) {
    throw std::runtime_error("namespace " + ns + " is still there after " +
                             std::to_string(timeout.count()) + "s");
  }
}

void WaitNoMigrations(kube::KubeClient& client, std::chrono::seconds timeout) {
  kube::ListOptions one_vmim;
  one_vmim.limit = 1;
  kube::ListOptions one_pod = one_vmim;
  one_pod.label_selector = "kubevirt.io=virt-launcher";
  kube::Json left;
  std::string kind;
  if (base::PollUntil(base::SystemClock(), timeout, std::chrono::milliseconds(500), [&] {
        left = client.List(kube::kVirtualMachineInstanceMigrations, "", one_vmim)["items"];
        kind = "VMIM";
        if (left.empty()) {
          left = client.List(kube::kPods, "", one_pod)["items"];
          kind = "virt-launcher pod";
        }
        return left.empty();
      })) {
    return;
  }
  const kube::Json& meta = left[0]["metadata"];
  throw std::runtime_error(kind + " " + meta.value("namespace", "") + "/" + meta.value("name", "") +
                           " of an earlier run still exists after " +
                           std::to_string(timeout.count()) + " s");
}

void EnsureLogDir(const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec || !std::filesystem::is_directory(dir)) {
    throw std::runtime_error("--log-dir=" + dir + ": cannot create it as a directory" +
                             (ec ? ": " + ec.message() : std::string()));
  }
}

void CheckListenPorts(int first, int last) {
  if (first < 1024 || last > 65535 || first > last) {
    throw std::runtime_error("ports " + std::to_string(first) + "-" + std::to_string(last) +
                             " are outside 1024-65535");
  }
  std::ifstream range_file("/proc/sys/net/ipv4/ip_local_port_range");
  int low = 0, high = 0;
  if (!(range_file >> low >> high)) {
    throw std::runtime_error(
        "cannot read /proc/sys/net/ipv4/ip_local_port_range to check the operator's ports");
  }
  if (first <= high && last >= low) {
    throw std::runtime_error("ports " + std::to_string(first) + "-" + std::to_string(last) +
                             " overlap the kernel's ephemeral port range " + std::to_string(low) +
                             "-" + std::to_string(high) +
                             " (a client socket can take one first); choose a --port-base below " +
                             std::to_string(low - (last - first)));
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
          std::scoped_lock lock(mu);
          if (!first) first = std::current_exception();
        }
      }
    });
  }
  for (auto& t : pool) t.join();
  if (first) std::rethrow_exception(first);
}

}  // namespace kmt::bench
