// Mirrors k8s.io/apimachinery/pkg/util/validation (IsQualifiedName, IsValidLabelValue,
// IsDNS1123Subdomain) at the Kubernetes version the e2e tier and the differential tier pin
// (hack/versions.env, v1.34.2): core/v1 validation of node selector terms calls these. The
// regular expressions are checked by hand; the messages are that version's, verbatim
// (hack/differential.sh compares them with Kubernetes' own).
#include "api/label_validation.h"

#include <algorithm>
#include <initializer_list>

namespace kmt::api {
namespace {

constexpr size_t kLabelKeyMaxLength = 63;
constexpr size_t kLabelValueMaxLength = 63;
constexpr size_t kDNS1123SubdomainMaxLength = 253;

constexpr std::string_view kLabelKeyFmt = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]";
constexpr std::string_view kLabelKeyErrMsg =
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
    "alphanumeric character";
constexpr std::string_view kLabelValueFmt = "(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?";
constexpr std::string_view kLabelValueErrMsg =
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or "
    "'.', and must start and end with an alphanumeric character";
constexpr std::string_view kDNS1123SubdomainFmt =
    "[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*";
constexpr std::string_view kDNS1123SubdomainErrMsg =
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or "
    "'.', and must start and end with an alphanumeric character";

// validation.MaxLenError. (Later Kubernetes versions' content.MaxLenError say "bytes".)
std::string MaxLenError(size_t n) {
  return "must be no more than " + std::to_string(n) + " characters";
}

std::string EmptyError() { return "must be non-empty"; }

std::string RegexError(std::string_view msg, std::string_view re,
                       std::initializer_list<std::string_view> examples) {
  std::string s(msg);
  if (examples.size() == 0) return s + " (regex used for validation is '" + std::string(re) + "')";
  s += " (e.g. ";
  bool first = true;
  for (std::string_view e : examples) {
    if (!first) s += " or ";
    first = false;
    s += "'";
    s += e;
    s += "', ";
  }
  s += "regex used for validation is '";
  s += re;
  s += "')";
  return s;
}

bool IsAlnum(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

// ^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$
bool MatchesLabelKeyName(std::string_view s) {
  if (s.empty() || !IsAlnum(s.front()) || !IsAlnum(s.back())) return false;
  for (char c : s) {
    if (!IsAlnum(c) && c != '-' && c != '_' && c != '.') return false;
  }
  return true;
}

bool IsLowerAlnum(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); }

// ^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$
bool MatchesDNS1123Subdomain(std::string_view s) {
  if (s.empty()) return false;
  size_t start = 0;
  while (true) {
    const size_t dot = s.find('.', start);
    const std::string_view label =
        s.substr(start, dot == std::string_view::npos ? std::string_view::npos : dot - start);
    if (label.empty() || !IsLowerAlnum(label.front()) || !IsLowerAlnum(label.back())) return false;
    for (char c : label) {
      if (!IsLowerAlnum(c) && c != '-') return false;
    }
    if (dot == std::string_view::npos) return true;
    start = dot + 1;
  }
}

}  // namespace

std::vector<std::string> IsQualifiedName(std::string_view value) {
  std::vector<std::string> errs;
  const size_t slashes = static_cast<size_t>(std::count(value.begin(), value.end(), '/'));
  std::string_view name = value;
  if (slashes == 1) {
    const size_t slash = value.find('/');
    const std::string_view prefix = value.substr(0, slash);
    name = value.substr(slash + 1);
    if (prefix.empty()) {
      errs.push_back("prefix part " + EmptyError());
    } else {
      for (std::string& m : IsDNS1123Subdomain(prefix)) errs.push_back("prefix part " + m);
    }
  } else if (slashes > 1) {
    // validation.IsQualifiedName (what core/v1 validation calls) says "a qualified name";
    // content.IsLabelKey, which it does not call at the pinned version, "a valid label key".
    errs.push_back("a qualified name " +
                   RegexError(kLabelKeyErrMsg, kLabelKeyFmt, {"MyName", "my.name", "123-abc"}) +
                   " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')");
    return errs;
  }
  if (name.empty()) {
    errs.push_back("name part " + EmptyError());
  } else if (name.size() > kLabelKeyMaxLength) {
    errs.push_back("name part " + MaxLenError(kLabelKeyMaxLength));
  }
  if (!MatchesLabelKeyName(name)) {
    errs.push_back("name part " +
                   RegexError(kLabelKeyErrMsg, kLabelKeyFmt, {"MyName", "my.name", "123-abc"}));
  }
  return errs;
}

std::vector<std::string> IsValidLabelValue(std::string_view value) {
  std::vector<std::string> errs;
  if (value.size() > kLabelValueMaxLength) errs.push_back(MaxLenError(kLabelValueMaxLength));
  if (!value.empty() && !MatchesLabelKeyName(value)) {
    errs.push_back(RegexError(kLabelValueErrMsg, kLabelValueFmt, {"MyValue", "my_value", "12345"}));
  }
  return errs;
}

std::vector<std::string> IsDNS1123Subdomain(std::string_view value) {
  std::vector<std::string> errs;
  if (value.size() > kDNS1123SubdomainMaxLength) {
    errs.push_back(MaxLenError(kDNS1123SubdomainMaxLength));
  }
  if (!MatchesDNS1123Subdomain(value)) {
    errs.push_back(RegexError(kDNS1123SubdomainErrMsg, kDNS1123SubdomainFmt, {"example.com"}));
  }
  return errs;
}

}  // namespace kmt::api
