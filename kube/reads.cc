// kube/reads.cc
#include "kube/reads.h"

#include "kube/error.h"

namespace kmt::kube {

std::optional<Json> GetIfExists(KubeClient& client, const Resource& r, std::string_view ns,
                                std::string_view name) {
  try {
    return client.Get(r, ns, name);
  } catch (const KubeError& e) {
    if (DispositionOf(e) == Disposition::kAbsent) return std::nullopt;
    throw;
  }
}

}  // namespace kmt::kube
