// base/json_patch.h — the one way this project builds a JSON Patch (RFC 6902) and the JSON
// Pointers (RFC 6901) its operations name. Every patch the operator sends (the gate release,
// the status write, the webhooks' gate and policy annotations, the caBundle injection) is
// built here, so escaping and the shape of an operation are decided once.
//
//   base::JsonPatch p;
//   p.Test("/metadata/uid", uid).Add(base::Pointer({"metadata", "annotations", key}), value);
//   client.Patch(..., kube::PatchType::kJsonPatch, p.ToJson());
//
// Operations keep the order they were added in (leading `test`s guard what follows: the API
// server applies a patch in order and refuses all of it when one operation fails).
#pragma once

#include <initializer_list>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

namespace kmt::base {

// One reference token, escaped: '~' → "~0", '/' → "~1" (in that order, RFC 6901 §3).
std::string PointerToken(std::string_view token);

// "/" + each token escaped, joined by "/": Pointer({"metadata", "annotations", "a/b"}) is
// "/metadata/annotations/a~1b". Array indices and "-" are tokens like any other.
std::string Pointer(std::initializer_list<std::string_view> tokens);

class JsonPatch {
 public:
  // `path` is a JSON Pointer (build it with Pointer when a token may hold '/' or '~').
  JsonPatch& Test(std::string path, nlohmann::json value);
  JsonPatch& Add(std::string path, nlohmann::json value);  // also replaces an existing member
  JsonPatch& Replace(std::string path, nlohmann::json value);
  JsonPatch& Remove(std::string path);
  // Appends `other`'s operations after this one's.
  JsonPatch& Append(JsonPatch other);

  bool empty() const { return ops_.empty(); }
  size_t size() const { return ops_.size(); }
  const std::vector<nlohmann::json>& ops() const { return ops_; }
  // The operations, moved out (for callers that keep them as a list).
  std::vector<nlohmann::json> TakeOps() && { return std::move(ops_); }
  // The patch document: a JSON array of the operations.
  // NOLINTNEXTLINE(modernize-return-braced-init-list): {ops_} would be an array of the array.
  nlohmann::json ToJson() const { return nlohmann::json(ops_); }

 private:
  JsonPatch& Op(std::string_view op, std::string path, nlohmann::json value);
  std::vector<nlohmann::json> ops_;
};

}  // namespace kmt::base
