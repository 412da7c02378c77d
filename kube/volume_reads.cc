#include "kube/volume_reads.h"

#include "kube/reads.h"
#include "kube/resources.h"

namespace kmt::kube {

api::VolumeReader VolumeReads(KubeClient& client, std::string ns) {
  // kube:: spelled out: hack/rbac_check.py finds the verbs by the resource constants' uses.
  return [&client, ns = std::move(ns)](api::VolumeObject kind, const std::string& name) {
    switch (kind) {
      case api::VolumeObject::kClaim:
        return GetIfExists(client, kube::kPersistentVolumeClaims, ns, name);
      case api::VolumeObject::kStorageClass:
        return GetIfExists(client, kube::kStorageClasses, "", name);
      case api::VolumeObject::kVolume:
        break;
    }
    return GetIfExists(client, kube::kPersistentVolumes, "", name);
  };
}

}  // namespace kmt::kube
