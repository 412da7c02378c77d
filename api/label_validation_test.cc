#include "api/label_validation.h"

#include <catch2/catch.hpp>

namespace kmt::api {
namespace {

using Errs = std::vector<std::string>;

// The texts below are Kubernetes' (k8s.io/apimachinery/pkg/api/validate/content), including
// RegexError's double space before "or".
const std::string kNameRegex =
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
    "alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for "
    "validation "
    "is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";
const std::string kValueRegex =
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or "
    "'.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  "
    "or "
    "'12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')";
const std::string kDNSRegex =
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or "
    "'.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used "
    "for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";

TEST_CASE("IsQualifiedName") {
  auto [value, want] = GENERATE_REF(table<std::string, Errs>({
      {"zone", {}},
      {"topology.kubernetes.io/zone", {}},
      {"node-labeller.kubevirt.io/obsolete-host-model", {}},
      {"A_b.C-9", {}},
      {std::string(63, 'a'), {}},
      {"", {"name part must be non-empty", "name part " + kNameRegex}},
      {std::string(64, 'a'), {"name part must be no more than 63 characters"}},
      {"-zone", {"name part " + kNameRegex}},
      {"zone_", {"name part " + kNameRegex}},
      {"zo ne", {"name part " + kNameRegex}},
      {"/zone", {"prefix part must be non-empty"}},
      {"Example.com/zone", {"prefix part " + kDNSRegex}},
      {"example.com/", {"name part must be non-empty", "name part " + kNameRegex}},
      {"a/b/c",
       {"a qualified name " + kNameRegex +
        " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"}},
      {std::string(254, 'a') + "/x", {"prefix part must be no more than 253 characters"}},
  }));
  CAPTURE(value);
  CHECK(IsQualifiedName(value) == want);
}

TEST_CASE("IsValidLabelValue") {
  auto [value, want] = GENERATE_REF(table<std::string, Errs>({
      {"", {}},
      {"a", {}},
      {"Skylake-Client-IBRS", {}},
      {"1.2_3-x", {}},
      {std::string(63, 'v'), {}},
      {std::string(64, 'v'), {"must be no more than 63 characters"}},
      {"-a", {kValueRegex}},
      {"a.", {kValueRegex}},
      {"a b", {kValueRegex}},
      {"a/b", {kValueRegex}},
      {"-" + std::string(63, 'v'), {"must be no more than 63 characters", kValueRegex}},
  }));
  CAPTURE(value);
  CHECK(IsValidLabelValue(value) == want);
}

TEST_CASE("IsDNS1123Subdomain") {
  auto [value, want] = GENERATE_REF(table<std::string, Errs>({
      {"node-1", {}},
      {"worker-0.example.com", {}},
      {"1", {}},
      {"", {kDNSRegex}},
      {"Node-1", {kDNSRegex}},
      {"node_1", {kDNSRegex}},
      {"a..b", {kDNSRegex}},
      {".a", {kDNSRegex}},
      {"a-", {kDNSRegex}},
      {std::string(254, 'a'), {"must be no more than 253 characters"}},
  }));
  CAPTURE(value);
  CHECK(IsDNS1123Subdomain(value) == want);
}

}  // namespace
}  // namespace kmt::api
