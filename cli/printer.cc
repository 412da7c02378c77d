#include "cli/printer.h"

#include <algorithm>
#include <cctype>

#include "base/json.h"

namespace kmt::cli {
namespace {

bool NeedsQuotes(const std::string& s) {
  if (s.empty()) return true;
  static const char* kReserved[] = {"true", "false", "null", "yes",  "no",   "on",    "off", "~",
                                    "True", "False", "Null", "NULL", "TRUE", "FALSE", "Yes", "No",
                                    "On",   "Off",   "YES",  "NO",   "ON",   "OFF"};
  for (const char* r : kReserved) {
    if (s == r) return true;
  }
  if (std::isspace(static_cast<unsigned char>(s.front())) ||
      std::isspace(static_cast<unsigned char>(s.back()))) {
    return true;
  }
  // Anything that starts like a number, or a YAML indicator.
  if (std::isdigit(static_cast<unsigned char>(s[0])) || s[0] == '-' || s[0] == '+' || s[0] == '.') {
    return true;
  }
  for (char c : s) {
    if (c == ':' || c == '#' || c == '{' || c == '}' || c == '[' || c == ']' || c == ',' ||
        c == '&' || c == '*' || c == '!' || c == '|' || c == '>' || c == '\'' || c == '"' ||
        c == '%' || c == '@' || c == '`' || c == '\n' || c == '\t' || c == '\\' ||
        static_cast<unsigned char>(c) < 0x20) {
      return true;
    }
  }
  return false;
}

std::string Scalar(const nlohmann::json& v) {
  if (v.is_string()) {
    const auto& s = v.get_ref<const std::string&>();
    return NeedsQuotes(s) ? v.dump() : s;  // JSON string syntax is valid YAML double-quoted
  }
  return v.dump();
}

bool IsEmptyContainer(const nlohmann::json& v) {
  return (v.is_object() || v.is_array()) && v.empty();
}

void Emit(const nlohmann::json& v, int indent, std::string& out);

void EmitValueAfterKey(const nlohmann::json& v, int indent, std::string& out) {
  if (IsEmptyContainer(v)) {
    out += v.is_object() ? " {}\n" : " []\n";
  } else if (v.is_object()) {
    out += "\n";
    Emit(v, indent + 2, out);
  } else if (v.is_array()) {
    out += "\n";
    Emit(v, indent, out);  // kubectl indents lists at the key's level
  } else {
    out += " " + Scalar(v) + "\n";
  }
}

void Emit(const nlohmann::json& v, int indent, std::string& out) {
  std::string pad(static_cast<size_t>(indent), ' ');
  if (v.is_object()) {
    for (auto it = v.begin(); it != v.end(); ++it) {
      std::string key = NeedsQuotes(it.key()) ? nlohmann::json(it.key()).dump() : it.key();
      out += pad + key + ":";
      EmitValueAfterKey(*it, indent, out);
    }
  } else if (v.is_array()) {
    for (const auto& item : v) {
      if (item.is_object() && !item.empty()) {
        // First member on the dash line, the rest aligned under it.
        std::string sub;
        Emit(item, indent + 2, sub);
        sub.replace(static_cast<size_t>(indent), 2, "- ");
        out += sub;
      } else if (item.is_array() && !item.empty()) {
        out += pad + "-\n";
        Emit(item, indent + 2, out);
      } else if (IsEmptyContainer(item)) {
        out += pad + (item.is_object() ? "- {}\n" : "- []\n");
      } else {
        out += pad + "- " + Scalar(item) + "\n";
      }
    }
  } else {
    out += pad + Scalar(v) + "\n";
  }
}

}  // namespace

std::string ToYaml(const nlohmann::json& doc) {
  std::string out;
  if (IsEmptyContainer(doc)) return doc.is_object() ? "{}\n" : "[]\n";
  Emit(doc, 0, out);
  return out;
}

std::string ResourceName(const nlohmann::json& obj) {
  std::string kind = base::StringAt(obj, "kind");
  std::string api_version = base::StringAt(obj, "apiVersion");
  std::string group = api_version.find('/') == std::string::npos
                          ? std::string()
                          : api_version.substr(0, api_version.find('/'));
  std::string lower;
  for (char c : kind) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  std::string name = base::StringAt(obj, {"metadata", "name"});
  if (name.empty()) name = base::StringAt(obj, {"metadata", "generateName"});
  return lower + (group.empty() ? "" : "." + group) + "/" + name;
}

std::string Render(const nlohmann::json& obj, const std::string& format, const std::string& verb,
                   const std::string& dry_run_suffix) {
  if (format == "json") return obj.dump(4) + "\n";
  if (format == "yaml") return ToYaml(obj);
  if (format == "name") return ResourceName(obj) + "\n";
  return ResourceName(obj) + " " + verb + dry_run_suffix + "\n";
}

std::string RenderTable(const std::vector<std::vector<std::string>>& rows) {
  std::vector<size_t> width;
  for (const auto& row : rows) {
    if (row.size() > width.size()) width.resize(row.size(), 0);
    for (size_t i = 0; i < row.size(); ++i) width[i] = std::max(width[i], row[i].size());
  }
  std::string out;
  for (const auto& row : rows) {
    for (size_t i = 0; i < row.size(); ++i) {
      out += row[i];
      if (i + 1 < row.size()) out += std::string(width[i] - row[i].size() + 3, ' ');
    }
    out += "\n";
  }
  return out;
}

}  // namespace kmt::cli
