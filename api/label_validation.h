// api/label_validation.h — Kubernetes' name and label syntax checks, with its exact
// error strings (k8s.io/apimachinery/pkg/util/validation/validation.go:
// IsQualifiedName, IsValidLabelValue, IsDNS1123Subdomain). Each returns every
// problem found; an empty vector means valid.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace kmt::api {

// [prefix/]name: name ≤ 63 chars of [A-Za-z0-9_.-] starting and ending alphanumeric;
// the optional prefix is a DNS-1123 subdomain.
std::vector<std::string> IsQualifiedName(std::string_view value);

// Empty, or ≤ 63 chars of [A-Za-z0-9_.-] starting and ending alphanumeric.
std::vector<std::string> IsValidLabelValue(std::string_view value);

// ≤ 253 chars, lower-case RFC 1123 labels joined by '.'.
std::vector<std::string> IsDNS1123Subdomain(std::string_view value);

}  // namespace kmt::api
