// base/json.h — the one lenient way this project reads JSON it did not write: objects from the
// API server, a watch stream, an AdmissionReview, a kubeconfig's exec plugin, a user's file.
// Nothing here throws, whatever the shape of the input; every typed read says why it found
// nothing, so a caller can tell a missing member from one of another type.
//
//   if (auto name = base::String(pod, {"metadata", "name"})) use(*name);
//   else if (name.status() == base::Lookup::kWrongType) reject("metadata.name: not a string");
//   std::string uid = base::StringAt(pod, {"metadata", "uid"});  // "" when absent
//   if (const Json* spec = base::Member(pod, "spec")) ...        // nullptr when absent or null
//
// A path is a list of object members, outermost first ({"metadata", "name"}); a single key may
// be passed alone ("spec"). Each step must be an object holding the next member. JSON null
// reads as absent everywhere (Go's encoding/json decodes null as the zero value), but is
// reported as kNull where a reason is given. Pointers and references returned point into the
// root (or at a static null) and live as long as it does. The strict reader of AdmissionReviews
// (webhook/admission.cc) is not this one: there a wrong shape is a rejected request.
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>

namespace kmt::base {

using Json = nlohmann::json;

// Why a read found nothing (or kPresent when it found a value of the asked type).
enum class Lookup : uint8_t {
  kPresent,     // found, of the asked type
  kMissing,     // a member on the path is absent
  kNull,        // the value, or an object on the way to it, is JSON null
  kWrongType,   // the value, or a step on the way to it, has another type than needed
  kOutOfRange,  // an integer that does not fit the asked type (Int: above INT64_MAX)
};
std::string_view ToString(Lookup l);  // "present", "missing", "null", "wrong type", "out of range"

// A path of object members, outermost first. Built implicitly from a braced list or from one
// key, or explicitly from keys known only at run time; it refers to its keys, so it lives only
// as long as the call it is passed to.
class JsonPath {
 public:
  JsonPath(std::initializer_list<std::string_view> keys) : list_(keys) {}
  JsonPath(std::string_view key) : one_(key), kind_(Kind::kOne) {}
  JsonPath(const char* key) : JsonPath(std::string_view(key)) {}
  JsonPath(const std::string& key) : JsonPath(std::string_view(key)) {}
  explicit JsonPath(std::span<const std::string_view> keys) : span_(keys), kind_(Kind::kSpan) {}

  const std::string_view* begin() const {
    switch (kind_) {
      case Kind::kOne:
        return &one_;
      case Kind::kSpan:
        return span_.data();
      case Kind::kList:
        break;
    }
    return list_.begin();
  }
  const std::string_view* end() const { return begin() + size(); }
  size_t size() const {
    switch (kind_) {
      case Kind::kOne:
        return 1;
      case Kind::kSpan:
        return span_.size();
      case Kind::kList:
        break;
    }
    return list_.size();
  }

 private:
  enum class Kind : uint8_t { kList, kOne, kSpan };
  std::initializer_list<std::string_view> list_;
  std::span<const std::string_view> span_;
  std::string_view one_;
  Kind kind_ = Kind::kList;
};

// A typed read: the value, or why there is none. Like std::optional, with a reason.
template <typename T>
class JsonField {
 public:
  JsonField(T value) : value_(std::move(value)), status_(Lookup::kPresent) {}
  JsonField(Lookup why) : status_(why) {}  // `why` is not kPresent

  bool ok() const { return status_ == Lookup::kPresent; }
  explicit operator bool() const { return ok(); }
  Lookup status() const { return status_; }
  // The value; only when ok().
  const T& operator*() const { return *value_; }
  const T* operator->() const { return &*value_; }
  T value_or(const T& fallback) const { return ok() ? *value_ : std::move(fallback); }
  const std::optional<T>& optional() const { return value_; }

 private:
  std::optional<T> value_;
  Lookup status_;
};

// The value at `path`, whatever its type but null; the root itself for an empty path.
// kMissing, kNull, or kWrongType when a step is not an object.
JsonField<const Json*> Find(const Json& root, JsonPath path);

// Typed reads at `path`: kWrongType when the value found has another type.
JsonField<const Json*> Object(const Json& root, JsonPath path);
JsonField<const Json*> Array(const Json& root, JsonPath path);
JsonField<std::string> String(const Json& root, JsonPath path);
JsonField<bool> Bool(const Json& root, JsonPath path);
// A JSON integer (a number written with a fraction or exponent is kWrongType); an unsigned
// one above INT64_MAX is kOutOfRange.
JsonField<int64_t> Int(const Json& root, JsonPath path);

// Shorthands for the common "absent means empty" reads.
// The value at `path`, or nullptr when a step is missing, null, or not an object.
const Json* Member(const Json& root, JsonPath path);
// The value at `path`, or a JSON null: for chains like At(At(pod, "spec"), "nodeName").
const Json& At(const Json& root, JsonPath path);
// The string at `path`, or "" when absent or not a string.
std::string StringAt(const Json& root, JsonPath path);

}  // namespace kmt::base
