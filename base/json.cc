// base/json.cc
#include "base/json.h"

namespace kmt::base {

std::string_view ToString(Lookup l) {
  switch (l) {
    case Lookup::kPresent:
      return "present";
    case Lookup::kMissing:
      return "missing";
    case Lookup::kNull:
      return "null";
    case Lookup::kWrongType:
      return "wrong type";
    case Lookup::kOutOfRange:
      return "out of range";
  }
  return "unknown";
}

JsonField<const Json*> Find(const Json& root, JsonPath path) {
  const Json* at = &root;
  for (std::string_view key : path) {
    if (at->is_null()) return Lookup::kNull;
    if (!at->is_object()) return Lookup::kWrongType;
    auto it = at->find(key);
    if (it == at->end()) return Lookup::kMissing;
    at = &*it;
  }
  if (at->is_null()) return Lookup::kNull;
  return at;
}

JsonField<const Json*> Object(const Json& root, JsonPath path) {
  auto v = Find(root, path);
  if (v && !(*v)->is_object()) return Lookup::kWrongType;
  return v;
}

JsonField<const Json*> Array(const Json& root, JsonPath path) {
  auto v = Find(root, path);
  if (v && !(*v)->is_array()) return Lookup::kWrongType;
  return v;
}

JsonField<std::string> String(const Json& root, JsonPath path) {
  auto v = Find(root, path);
  if (!v) return v.status();
  if (!(*v)->is_string()) return Lookup::kWrongType;
  return (*v)->get_ref<const std::string&>();
}

JsonField<bool> Bool(const Json& root, JsonPath path) {
  auto v = Find(root, path);
  if (!v) return v.status();
  if (!(*v)->is_boolean()) return Lookup::kWrongType;
  return (*v)->get<bool>();
}

JsonField<int64_t> Int(const Json& root, JsonPath path) {
  auto v = Find(root, path);
  if (!v) return v.status();
  const Json& n = **v;
  if (n.is_number_unsigned()) {
    const uint64_t u = n.get<uint64_t>();
    if (u > static_cast<uint64_t>(INT64_MAX)) return Lookup::kOutOfRange;
    return static_cast<int64_t>(u);
  }
  if (n.is_number_integer()) return n.get<int64_t>();
  return Lookup::kWrongType;
}

const Json* Member(const Json& root, JsonPath path) { return Find(root, path).value_or(nullptr); }

const Json& At(const Json& root, JsonPath path) {
  static const Json kNull;
  const Json* v = Member(root, path);
  return v != nullptr ? *v : kNull;
}

std::string StringAt(const Json& root, JsonPath path) {
  return String(root, path).value_or(std::string());
}

}  // namespace kmt::base
