#include "webhook/vmi_node_cache.h"

#include <memory>
#include <utility>

#include "base/json.h"
#include "kube/resources.h"

namespace kmt::webhook {

VmiPlacement VmiPlacement::FromJson(const Json& vmi) {
  return {base::StringAt(vmi, {"status", "nodeName"})};
}

const base::ObjectReads& VmiPlacement::Reads() {
  static const base::ObjectReads reads{{"status", "nodeName"}};
  return reads;
}

kube::InformerOptions VmiNodeCache::InformerOptionsFor(const VmiNodeCacheOptions& options) {
  kube::InformerOptions opts;
  opts.watch.resource = kube::kVirtualMachineInstances;
  opts.watch.reads = &VmiPlacement::Reads();
  opts.watch.page_size = options.page_size;
  opts.on_error = options.on_error;
  return opts;
}

VmiNodeCache::VmiNodeCache(kube::KubeClient& client, const VmiNodeCacheOptions& options,
                           base::Clock& clock)
    : informer_(
          client, InformerOptionsFor(options),
          [](const Json& vmi) {
            return std::make_shared<const VmiPlacement>(VmiPlacement::FromJson(vmi));
          },
          clock) {
  if (options.on_synced) {
    kube::Informer<VmiPlacement>::Handlers synced;
    synced.on_initial_list_done = [this, done = options.on_synced] { done(informer_.Size()); };
    informer_.AddHandlers(std::move(synced));
  }
}

VmiNodeCache::~VmiNodeCache() { Stop(); }

void VmiNodeCache::Start() { informer_.Start(); }

void VmiNodeCache::Stop() { informer_.Stop(); }

void VmiNodeCache::StepForTest() { informer_.StepForTest(); }

bool VmiNodeCache::HasSynced() const { return informer_.HasSynced(); }

bool VmiNodeCache::WaitForSync(std::chrono::milliseconds timeout) const {
  return informer_.WaitForSync(timeout);
}

std::optional<std::string> VmiNodeCache::NodeName(std::string_view ns,
                                                  std::string_view name) const {
  if (!informer_.HasSynced()) return std::nullopt;
  std::string key;
  key.reserve(ns.size() + 1 + name.size());
  key.append(ns).append("/").append(name);
  const kube::Informer<VmiPlacement>::Ptr vmi = informer_.Get(key);
  if (vmi == nullptr) return std::nullopt;
  return vmi->node_name;
}

size_t VmiNodeCache::Size() const { return informer_.Size(); }

}  // namespace kmt::webhook
