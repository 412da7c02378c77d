// kube/paths.cc
#include "kube/paths.h"

#include <fmt/format.h>

namespace kmt::kube {
namespace {

bool Unreserved(unsigned char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
         c == '.' || c == '_' || c == '~';
}

std::string Escape(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (unsigned char c : s) {
    if (Unreserved(c)) {
      out += static_cast<char>(c);
    } else {
      out += fmt::format("%{:02X}", c);
    }
  }
  return out;
}

}  // namespace

std::string ApiVersion(const Resource& r) {
  return r.group.empty() ? r.version : r.group + "/" + r.version;
}

std::string GroupResourceName(const Resource& r) {
  return r.group.empty() ? r.resource : r.resource + "." + r.group;
}

std::string ResourcePath(const Resource& r, std::string_view ns, std::string_view name,
                         std::string_view subresource) {
  std::string path = r.group.empty() ? "/api/" + r.version : "/apis/" + r.group + "/" + r.version;
  if (r.namespaced && !ns.empty()) path += "/namespaces/" + EscapePathSegment(ns);
  path += "/" + r.resource;
  if (!name.empty()) {
    path += "/" + EscapePathSegment(name);
    if (!subresource.empty()) path += "/" + EscapePathSegment(subresource);
  }
  return path;
}

std::string DescribeCall(std::string_view verb, const Resource& r, std::string_view ns,
                         std::string_view name, std::string_view subresource) {
  std::string out = fmt::format("{} {}", verb, GroupResourceName(r));
  if (r.namespaced && !ns.empty() && !name.empty()) {
    out += fmt::format(" {}/{}", ns, name);
  } else if (!name.empty()) {
    out += fmt::format(" {}", name);
  } else if (r.namespaced && !ns.empty()) {
    out += fmt::format(" -n {}", ns);
  }
  if (!subresource.empty()) out += fmt::format(" ({})", subresource);
  return out;
}

std::string EscapeQueryValue(std::string_view s) { return Escape(s); }
std::string EscapePathSegment(std::string_view s) { return Escape(s); }

}  // namespace kmt::kube
