#include "base/json_patch.h"

#include <utility>

namespace kmt::base {

std::string PointerToken(std::string_view token) {
  std::string out;
  out.reserve(token.size());
  for (char c : token) {
    if (c == '~') {
      out += "~0";
    } else if (c == '/') {
      out += "~1";
    } else {
      out += c;
    }
  }
  return out;
}

std::string Pointer(std::initializer_list<std::string_view> tokens) {
  std::string out;
  for (std::string_view t : tokens) {
    out += '/';
    out += PointerToken(t);
  }
  return out;
}

JsonPatch& JsonPatch::Op(std::string_view op, std::string path, nlohmann::json value) {
  ops_.push_back({{"op", op}, {"path", std::move(path)}, {"value", std::move(value)}});
  return *this;
}

JsonPatch& JsonPatch::Test(std::string path, nlohmann::json value) {
  return Op("test", std::move(path), std::move(value));
}

JsonPatch& JsonPatch::Add(std::string path, nlohmann::json value) {
  return Op("add", std::move(path), std::move(value));
}

JsonPatch& JsonPatch::Replace(std::string path, nlohmann::json value) {
  return Op("replace", std::move(path), std::move(value));
}

JsonPatch& JsonPatch::Remove(std::string path) {
  ops_.push_back({{"op", "remove"}, {"path", std::move(path)}});
  return *this;
}

JsonPatch& JsonPatch::Append(JsonPatch other) {
  ops_.insert(ops_.end(), std::make_move_iterator(other.ops_.begin()),
              std::make_move_iterator(other.ops_.end()));
  return *this;
}

}  // namespace kmt::base
