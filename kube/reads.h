// kube/reads.h — a read that treats "not found" as an answer, not an error.
#pragma once

#include <optional>
#include <string_view>

#include "kube/client.h"

namespace kmt::kube {

// The object, or nullopt when it does not exist (404). Every other failure is thrown as
// the KubeError the client raised.
std::optional<Json> GetIfExists(KubeClient& client, const Resource& r, std::string_view ns,
                                std::string_view name);

}  // namespace kmt::kube
