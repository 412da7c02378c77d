// kube/selector.cc
#include "kube/selector.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <stdexcept>

#include "api/label_requirement.h"
#include "api/label_validation.h"

namespace kmt::kube {
namespace {

std::string_view Trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

// Tokens of the label selector language.
enum class Tok { kIdent, kNot, kEq, kDoubleEq, kNotEq, kGt, kLt, kOpen, kClose, kComma, kEnd };

struct Token {
  Tok tok;
  std::string text;
};

bool IsSpecial(char c) {
  return c == '!' || c == '=' || c == '<' || c == '>' || c == '(' || c == ')' || c == ',';
}

std::vector<Token> Lex(std::string_view s) {
  std::vector<Token> out;
  size_t i = 0;
  while (i < s.size()) {
    char c = s[i];
    if (std::isspace(static_cast<unsigned char>(c))) {
      ++i;
    } else if (c == '!' && i + 1 < s.size() && s[i + 1] == '=') {
      out.push_back({Tok::kNotEq, "!="});
      i += 2;
    } else if (c == '=' && i + 1 < s.size() && s[i + 1] == '=') {
      out.push_back({Tok::kDoubleEq, "=="});
      i += 2;
    } else if (IsSpecial(c)) {
      static constexpr std::pair<char, Tok> kSingle[] = {
          {'!', Tok::kNot},  {'=', Tok::kEq},    {'<', Tok::kLt},   {'>', Tok::kGt},
          {'(', Tok::kOpen}, {')', Tok::kClose}, {',', Tok::kComma}};
      for (const auto& [ch, t] : kSingle) {
        if (ch == c) out.push_back({t, std::string(1, c)});
      }
      ++i;
    } else {
      size_t j = i;
      while (j < s.size() && !IsSpecial(s[j]) && !std::isspace(static_cast<unsigned char>(s[j]))) {
        ++j;
      }
      out.push_back({Tok::kIdent, std::string(s.substr(i, j - i))});
      i = j;
    }
  }
  out.push_back({Tok::kEnd, ""});
  return out;
}

class LabelParser {
 public:
  explicit LabelParser(std::string_view text) : text_(text), toks_(Lex(text)) {}

  std::vector<LabelRequirement> Parse() {
    std::vector<LabelRequirement> reqs;
    if (Peek().tok == Tok::kEnd) return reqs;
    while (true) {
      reqs.push_back(Requirement());
      const Token& t = Take();
      if (t.tok == Tok::kEnd) return reqs;
      if (t.tok != Tok::kComma) Fail(fmt::format("unexpected '{}' after a requirement", t.text));
    }
  }

 private:
  [[noreturn]] void Fail(const std::string& why) const {
    throw std::invalid_argument(fmt::format("label selector \"{}\": {}", text_, why));
  }
  const Token& Peek() const { return toks_[pos_]; }
  const Token& Take() {
    const Token& t = toks_[pos_];
    if (t.tok != Tok::kEnd) ++pos_;
    return t;
  }

  std::string Key() {
    const Token& t = Take();
    if (t.tok != Tok::kIdent) {
      Fail(t.tok == Tok::kEnd ? "missing key" : fmt::format("expected a key, found '{}'", t.text));
    }
    if (!IsValidLabelKey(t.text)) Fail(fmt::format("invalid label key \"{}\"", t.text));
    return t.text;
  }

  // A value may be empty ("a=" selects a="" labels).
  std::string Value() {
    if (Peek().tok != Tok::kIdent) return "";
    std::string v = Take().text;
    if (!IsValidLabelValue(v)) Fail(fmt::format("invalid label value \"{}\"", v));
    return v;
  }

  LabelRequirement Requirement() {
    LabelRequirement r;
    if (Peek().tok == Tok::kNot) {
      Take();
      r.key = Key();
      r.op = LabelRequirement::Op::kDoesNotExist;
      return r;
    }
    r.key = Key();
    const Token& op = Peek();
    switch (op.tok) {
      case Tok::kComma:
      case Tok::kEnd:
        r.op = LabelRequirement::Op::kExists;
        return r;
      case Tok::kEq:
      case Tok::kDoubleEq:
      case Tok::kNotEq:
        Take();
        r.op = op.tok == Tok::kNotEq ? LabelRequirement::Op::kNotEquals
                                     : LabelRequirement::Op::kEquals;
        r.values.push_back(Value());
        return r;
      case Tok::kGt:
      case Tok::kLt: {
        const bool gt = op.tok == Tok::kGt;
        Take();
        r.op = gt ? LabelRequirement::Op::kGt : LabelRequirement::Op::kLt;
        const Token& v = Take();
        int64_t ignored = 0;
        if (v.tok != Tok::kIdent || !api::ParseInt64(v.text, ignored)) {
          Fail(fmt::format("'{}' needs an integer value", gt ? ">" : "<"));
        }
        // labels.NewRequirement: the operand is a label value too ("+5", "-1" are not).
        if (!IsValidLabelValue(v.text)) Fail(fmt::format("invalid label value \"{}\"", v.text));
        r.values.push_back(v.text);
        return r;
      }
      case Tok::kIdent:
        if (op.text == "in" || op.text == "notin") {
          const bool in = op.text == "in";
          Take();
          r.op = in ? LabelRequirement::Op::kIn : LabelRequirement::Op::kNotIn;
          r.values = Set(in ? "in" : "notin");
          return r;
        }
        [[fallthrough]];
      default:
        Fail(fmt::format("expected an operator after \"{}\", found '{}'", r.key, op.text));
    }
  }

  std::vector<std::string> Set(std::string_view op) {
    if (Take().tok != Tok::kOpen) Fail(fmt::format("'{}' must be followed by '('", op));
    std::vector<std::string> values;
    while (true) {
      values.push_back(Value());
      const Token& t = Take();
      if (t.tok == Tok::kClose) break;
      if (t.tok != Tok::kComma) Fail("missing ')'");
    }
    if (values.size() == 1 && values[0].empty()) {
      Fail(fmt::format("'{}' needs at least one value", op));
    }
    std::ranges::sort(values);
    values.erase(std::ranges::unique(values).begin(), values.end());
    return values;
  }

  std::string_view text_;
  std::vector<Token> toks_;
  size_t pos_ = 0;
};

const std::string* Label(const nlohmann::json& labels, const std::string& key) {
  if (!labels.is_object()) return nullptr;
  auto it = labels.find(key);
  if (it == labels.end() || !it->is_string()) return nullptr;
  return &it->get_ref<const std::string&>();
}

api::LabelOp ToLabelOp(LabelRequirement::Op op) {
  using Op = LabelRequirement::Op;
  switch (op) {
    case Op::kExists:
      return api::LabelOp::kExists;
    case Op::kDoesNotExist:
      return api::LabelOp::kDoesNotExist;
    case Op::kEquals:
      return api::LabelOp::kEquals;
    case Op::kNotEquals:
      return api::LabelOp::kNotEquals;
    case Op::kIn:
      return api::LabelOp::kIn;
    case Op::kNotIn:
      return api::LabelOp::kNotIn;
    case Op::kGt:
      return api::LabelOp::kGt;
    case Op::kLt:
      return api::LabelOp::kLt;
  }
  return api::LabelOp::kUnknown;
}

}  // namespace

bool IsValidLabelKey(std::string_view key) { return api::IsQualifiedName(key).empty(); }

bool IsValidLabelValue(std::string_view value) { return api::IsValidLabelValue(value).empty(); }

LabelSelector LabelSelector::Parse(std::string_view text) {
  LabelSelector s;
  s.requirements_ = LabelParser(text).Parse();
  return s;
}

bool RequirementMatches(const LabelRequirement& r, const nlohmann::json& labels) {
  return api::LabelRequirement(r.key, ToLabelOp(r.op), r.values).Matches(Label(labels, r.key));
}

bool LabelSelector::Matches(const nlohmann::json& labels) const {
  return std::ranges::all_of(
      requirements_, [&](const LabelRequirement& r) { return RequirementMatches(r, labels); });
}

FieldSelector FieldSelector::Parse(std::string_view text) {
  FieldSelector s;
  if (Trim(text).empty()) return s;
  size_t start = 0;
  while (start <= text.size()) {
    size_t comma = text.find(',', start);
    std::string_view part =
        Trim(text.substr(start, comma == std::string_view::npos ? text.npos : comma - start));
    FieldRequirement r;
    size_t op_pos = part.find("!=");
    size_t op_len = 2;
    if (op_pos != std::string_view::npos) {
      r.negate = true;
    } else {
      op_pos = part.find("==");
      if (op_pos == std::string_view::npos) {
        op_pos = part.find('=');
        op_len = 1;
      }
    }
    if (op_pos == std::string_view::npos || op_pos == 0) {
      throw std::invalid_argument(fmt::format(
          R"(field selector "{}": invalid requirement "{}" (want field=value or field!=value))",
          text, part));
    }
    r.field = std::string(Trim(part.substr(0, op_pos)));
    r.value = std::string(Trim(part.substr(op_pos + op_len)));
    s.requirements_.push_back(std::move(r));
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return s;
}

bool FieldSelector::Matches(const nlohmann::json& object) const {
  return std::ranges::all_of(requirements_, [&](const FieldRequirement& r) {
    return (FieldValue(object, r.field) == r.value) != r.negate;
  });
}

std::string FieldValue(const nlohmann::json& object, std::string_view path) {
  const nlohmann::json* cur = &object;
  size_t start = 0;
  while (true) {
    size_t dot = path.find('.', start);
    std::string key(path.substr(start, dot == std::string_view::npos ? path.npos : dot - start));
    if (!cur->is_object()) return "";
    auto it = cur->find(key);
    if (it == cur->end()) return "";
    cur = &*it;
    if (dot == std::string_view::npos) break;
    start = dot + 1;
  }
  if (cur->is_string()) return cur->get<std::string>();
  if (cur->is_null()) return "";
  return cur->dump();
}

}  // namespace kmt::kube
