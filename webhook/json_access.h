// webhook/json_access.h — reading members of objects that arrived in an AdmissionReview
// without trusting their shape: a missing member, a null or a value of another type reads
// as "absent", never as an exception.
#pragma once

#include <initializer_list>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace kmt::webhook {

// The value at `path` (object members, outermost first), or nullptr when a step is missing,
// null, or not an object.
const nlohmann::json* Member(const nlohmann::json& root,
                             std::initializer_list<std::string_view> path);

// The string at `path`, or "" when absent or not a string.
std::string StringAt(const nlohmann::json& root, std::initializer_list<std::string_view> path);

}  // namespace kmt::webhook
