// kube/volume_reads.h — the reads api::ResolveClaims needs (api/pod_volumes.h), through a
// client, for the operator and the plugin alike: a GET of the claim in the pod's namespace,
// of a StorageClass, of a PersistentVolume. A 404 answers nullopt; every other failure is
// thrown as the client's KubeError.
#pragma once

#include <string>

#include "api/pod_volumes.h"
#include "kube/client.h"

namespace kmt::kube {

// A reader for the claims of a pod in `ns`. It keeps `client` by reference: use it while
// the client lives.
api::VolumeReader VolumeReads(KubeClient& client, std::string ns);

}  // namespace kmt::kube
