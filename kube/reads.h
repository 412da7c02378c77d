// kube/reads.h — reads that treat absence as an answer, not an error: an object that
// does not exist (a 404). Members of API objects that may be missing, null or of another
// type are read with base/json.h.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "kube/client.h"

namespace kmt::kube {

// The object, or nullopt when it does not exist (404). Every other failure is thrown as
// the KubeError the client raised.
std::optional<Json> GetIfExists(KubeClient& client, const Resource& r, std::string_view ns,
                                std::string_view name);

}  // namespace kmt::kube
