// kube/reads.h — reads that treat absence as an answer, not an error: an object that
// does not exist (a 404), and a member of an API object that is missing, null or of
// another type than expected (what the API server, a proxy or a webhook might send).
// None of the JSON reads throws; callers that need the member say what its absence
// means.
#pragma once

#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>

#include "kube/client.h"

namespace kmt::kube {

// The object, or nullopt when it does not exist (404). Every other failure is thrown as
// the KubeError the client raised.
std::optional<Json> GetIfExists(KubeClient& client, const Resource& r, std::string_view ns,
                                std::string_view name);

// The value at `path` (object members, outermost first), or nullptr when a step is
// missing, null, or not an object. (The admitters use these too, through
// webhook/json_access.h.)
const Json* Member(const Json& root, std::initializer_list<std::string_view> path);

// The string at `path`, or "" when absent or not a string.
std::string StringAt(const Json& root, std::initializer_list<std::string_view> path);

}  // namespace kmt::kube
