#include "api/node_selector.h"

#include <algorithm>
#include <string_view>

#include "base/json.h"

namespace kmt::api {
namespace {

using json = nlohmann::json;

std::string Render(const json& j) {
  // error_handler_t::replace: a dump never throws on invalid UTF-8.
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

std::string_view TypeName(const json& j) {
  switch (j.type()) {
    case json::value_t::null:
      return "null";
    case json::value_t::object:
      return "object";
    case json::value_t::array:
      return "array";
    case json::value_t::string:
      return "string";
    case json::value_t::boolean:
      return "boolean";
    case json::value_t::number_integer:
    case json::value_t::number_unsigned:
      return "integer";
    case json::value_t::number_float:
      return "number";
    default:
      return "unknown";
  }
}

Cause WrongType(const std::string& field, const json& value, std::string_view want) {
  return TypeInvalidCause(
      field, Render(value),
      "must be of type " + std::string(want) + ", not " + std::string(TypeName(value)));
}

void RejectUnknownMembers(const json& obj, const std::string& path,
                          const std::vector<std::string_view>& known, std::vector<Cause>& causes) {
  for (const auto& [name, value] : obj.items()) {
    if (std::ranges::find(known, name) == known.end()) {
      causes.push_back(NotSupportedCause(ChildPath(path, name), name, known));
    }
  }
}

std::optional<NodeSelectorRequirement> ParseRequirement(const json& j, const std::string& path,
                                                        std::vector<Cause>& causes) {
  if (!j.is_object()) {
    causes.push_back(WrongType(path, j, "object"));
    return std::nullopt;
  }
  const size_t before = causes.size();
  RejectUnknownMembers(j, path, {"key", "operator", "values"}, causes);
  NodeSelectorRequirement r;
  if (const json* it = base::Member(j, "key")) {
    if (it->is_string()) {
      r.key = it->get<std::string>();
    } else {
      causes.push_back(WrongType(ChildPath(path, "key"), *it, "string"));
    }
  }
  if (const json* it = base::Member(j, "operator")) {
    if (it->is_string()) {
      r.op = it->get<std::string>();
    } else {
      causes.push_back(WrongType(ChildPath(path, "operator"), *it, "string"));
    }
  }
  if (const json* it = base::Member(j, "values")) {
    const std::string vpath = ChildPath(path, "values");
    if (!it->is_array()) {
      causes.push_back(WrongType(vpath, *it, "array"));
    } else {
      for (size_t i = 0; i < it->size(); ++i) {
        const json& v = (*it)[i];
        if (v.is_string()) {
          r.values.push_back(v.get<std::string>());
        } else {
          causes.push_back(WrongType(IndexPath(vpath, i), v, "string"));
        }
      }
    }
  }
  if (causes.size() != before) return std::nullopt;
  return r;
}

void ParseRequirementList(const json& term, std::string_view member, const std::string& path,
                          std::vector<NodeSelectorRequirement>& out, std::vector<Cause>& causes) {
  auto it = term.find(member);
  if (it == term.end() || it->is_null()) return;
  const std::string lpath = ChildPath(path, member);
  if (!it->is_array()) {
    causes.push_back(WrongType(lpath, *it, "array"));
    return;
  }
  for (size_t i = 0; i < it->size(); ++i) {
    if (auto r = ParseRequirement((*it)[i], IndexPath(lpath, i), causes)) {
      out.push_back(std::move(*r));
    }
  }
}

std::string JoinValues(const std::vector<std::string>& values) {
  std::string s = "[";
  for (size_t i = 0; i < values.size(); ++i) {
    if (i > 0) s += ", ";
    s += values[i];
  }
  return s + "]";
}

std::vector<NodeSelectorRequirement> LenientList(const json& j, std::string_view member) {
  std::vector<NodeSelectorRequirement> out;
  const auto list = base::Array(j, member);
  if (!list) return out;
  for (const json& r : **list) {
    if (r.is_object()) out.push_back(RequirementFromJsonLenient(r));
  }
  return out;
}

}  // namespace

json ToJson(const NodeSelectorRequirement& r) {
  json j = {{"key", r.key}, {"operator", r.op}};
  if (!r.values.empty()) j["values"] = r.values;
  return j;
}

json ToJson(const NodeSelectorTerm& t) {
  json j = json::object();
  if (!t.match_expressions.empty()) {
    json& list = j["matchExpressions"] = json::array();
    for (const auto& r : t.match_expressions) list.push_back(ToJson(r));
  }
  if (!t.match_fields.empty()) {
    json& list = j["matchFields"] = json::array();
    for (const auto& r : t.match_fields) list.push_back(ToJson(r));
  }
  return j;
}

json ToJson(const NodeSelector& s) {
  json terms = json::array();
  for (const auto& t : s.terms) terms.push_back(ToJson(t));
  return {{"nodeSelectorTerms", std::move(terms)}};
}

std::string ToString(const NodeSelectorRequirement& r) {
  std::string s = r.key + " " + r.op;
  if (!r.values.empty() || (r.op != kOpExists && r.op != kOpDoesNotExist)) {
    s += " " + JoinValues(r.values);
  }
  return s;
}

std::string ToString(const NodeSelectorTerm& t) {
  std::string s;
  for (const auto* list : {&t.match_expressions, &t.match_fields}) {
    for (const auto& r : *list) {
      if (!s.empty()) s += ", ";
      s += ToString(r);
    }
  }
  return s;
}

bool SameRequirement(const NodeSelectorRequirement& a, const NodeSelectorRequirement& b) {
  if (a.key != b.key || a.op != b.op || a.values.size() != b.values.size()) return false;
  if (a.values == b.values) return true;
  std::vector<std::string> va = a.values, vb = b.values;
  std::ranges::sort(va);
  std::ranges::sort(vb);
  return va == vb;
}

TermParse ParseNodeSelectorTerm(const json& j, const std::string& path) {
  TermParse out;
  try {
    if (!j.is_object()) {
      out.causes.push_back(WrongType(path, j, "object"));
      return out;
    }
    RejectUnknownMembers(j, path, {"matchExpressions", "matchFields"}, out.causes);
    NodeSelectorTerm term;
    ParseRequirementList(j, "matchExpressions", path, term.match_expressions, out.causes);
    ParseRequirementList(j, "matchFields", path, term.match_fields, out.causes);
    if (out.causes.empty()) out.term = std::move(term);
  } catch (const json::exception& e) {
    // Not expected (every access above is type-checked); never let it escape.
    out.term.reset();
    out.causes.push_back(InvalidCauseOmitValue(path, e.what()));
  }
  return out;
}

NodeSelectorRequirement RequirementFromJsonLenient(const json& j) {
  NodeSelectorRequirement r;
  r.key = base::StringAt(j, "key");
  r.op = base::StringAt(j, "operator");
  if (const auto values = base::Array(j, "values")) {
    for (const json& v : **values) {
      if (v.is_string()) r.values.push_back(v.get<std::string>());
    }
  }
  return r;
}

NodeSelectorTerm TermFromJsonLenient(const json& j) {
  NodeSelectorTerm t;
  t.match_expressions = LenientList(j, "matchExpressions");
  t.match_fields = LenientList(j, "matchFields");
  return t;
}

NodeSelector NodeSelectorFromJsonLenient(const json& j) {
  NodeSelector s;
  const auto terms = base::Array(j, "nodeSelectorTerms");
  if (!terms) return s;
  for (const json& t : **terms) s.terms.push_back(TermFromJsonLenient(t));
  return s;
}

}  // namespace kmt::api
