// kube/paths.h — how a Resource is named in URLs, messages and Status objects.
// Shared by the REST client and the fake so both describe a call the same way.
#pragma once

#include <string>
#include <string_view>

#include "kube/client.h"

namespace kmt::kube {

// "v1" for the core group, otherwise "group/version".
std::string ApiVersion(const Resource& r);

// "pods" for the core group, otherwise "resource.group" (as in Status messages
// such as `virtualmachineinstancemigrations.kubevirt.io "m1" not found`).
std::string GroupResourceName(const Resource& r);

// The REST path, e.g. /api/v1/namespaces/ns/pods/name/status. Namespace, name
// and subresource are percent-escaped; an empty namespace on a namespaced
// resource addresses all namespaces; empty name addresses the collection.
std::string ResourcePath(const Resource& r, std::string_view ns, std::string_view name = {},
                         std::string_view subresource = {});

// "get pods ns/name status" for error messages and logs.
std::string DescribeCall(std::string_view verb, const Resource& r, std::string_view ns,
                         std::string_view name = {}, std::string_view subresource = {});

// Percent-escapes everything outside RFC 3986 unreserved characters, so a
// label selector like `app in (a,b),!x` survives as a query parameter value.
std::string EscapeQueryValue(std::string_view s);
std::string EscapePathSegment(std::string_view s);

}  // namespace kmt::kube
