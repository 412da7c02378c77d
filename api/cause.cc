#include "api/cause.h"

#include <algorithm>
#include <cstdio>
#include <iterator>
#include <ostream>

namespace kmt::api {
namespace {

// field.ErrorType.String() (k8s.io/apimachinery/pkg/util/validation/field/errors.go).
constexpr std::string_view kRequiredText = "Required value";
constexpr std::string_view kInvalidText = "Invalid value";
constexpr std::string_view kNotSupportedText = "Unsupported value";
constexpr std::string_view kForbiddenText = "Forbidden";
constexpr std::string_view kTooLongText = "Too long";
constexpr std::string_view kTooManyText = "Too many";

// ErrorBody: "<type text>[: <value>][: <detail>]".
std::string Body(std::string_view type_text, std::string_view value, std::string_view detail) {
  std::string s(type_text);
  if (!value.empty()) {
    s += ": ";
    s += value;
  }
  if (!detail.empty()) {
    s += ": ";
    s += detail;
  }
  return s;
}

// Length of the valid UTF-8 sequence starting at s[i], or 0.
// One UTF-8 sequence at s[i] as utf8.DecodeRuneInString accepts it (no overlong forms, no
// surrogates, at most U+10FFFF): its length, or 0 for an invalid byte.
size_t Utf8Decode(std::string_view s, size_t i, char32_t& rune) {
  const auto c = static_cast<unsigned char>(s[i]);
  size_t n = 0;
  char32_t r = 0, min = 0;
  if (c >= 0xC2 && c <= 0xDF) {
    n = 2, r = c & 0x1F, min = 0x80;
  } else if (c >= 0xE0 && c <= 0xEF) {
    n = 3, r = c & 0x0F, min = 0x800;
  } else if (c >= 0xF0 && c <= 0xF4) {
    n = 4, r = c & 0x07, min = 0x10000;
  } else {
    return 0;
  }
  if (i + n > s.size()) return 0;
  for (size_t k = 1; k < n; ++k) {
    const auto cc = static_cast<unsigned char>(s[i + k]);
    if ((cc & 0xC0) != 0x80) return 0;
    r = (r << 6) | (cc & 0x3F);
  }
  if (r < min || r > 0x10FFFF || (r >= 0xD800 && r <= 0xDFFF)) return 0;
  rune = r;
  return n;
}

// Code points from U+0080 that Go's strconv.IsPrint rejects (generated from Go itself).
constexpr char32_t kNotPrintable[][2] = {
#include "api/go_not_printable.inc"
};

bool GoIsPrint(char32_t r) {
  const auto* end = std::end(kNotPrintable);
  const auto* it =
      std::upper_bound(std::begin(kNotPrintable), end, r,
                       [](char32_t v, const char32_t(&range)[2]) { return v < range[0]; });
  return it == std::begin(kNotPrintable) || r > (*(it - 1))[1];
}

}  // namespace

std::string QuoteValue(std::string_view s) {
  std::string out = "\"";
  for (size_t i = 0; i < s.size(); ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    switch (c) {
      case '"':
        out += "\\\"";
        continue;
      case '\\':
        out += "\\\\";
        continue;
      case '\a':
        out += "\\a";
        continue;
      case '\b':
        out += "\\b";
        continue;
      case '\f':
        out += "\\f";
        continue;
      case '\n':
        out += "\\n";
        continue;
      case '\r':
        out += "\\r";
        continue;
      case '\t':
        out += "\\t";
        continue;
      case '\v':
        out += "\\v";
        continue;
      default:
        break;
    }
    if (c < 0x20 || c == 0x7F) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    } else if (c < 0x80) {
      out += static_cast<char>(c);
    } else if (char32_t r = 0; size_t n = Utf8Decode(s, i, r)) {
      if (GoIsPrint(r)) {
        out.append(s.substr(i, n));
      } else {  // as strconv.Quote: a 4-digit escape in the BMP, an 8-digit one beyond
        char buf[16];
        std::snprintf(buf, sizeof buf, r < 0x10000 ? "\\u%04x" : "\\U%08x",
                      static_cast<unsigned>(r));
        out += buf;
      }
      i += n - 1;
    } else {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    }
  }
  out += '"';
  return out;
}

Cause RequiredCause(std::string field, std::string_view detail) {
  return {std::string(kCauseRequired), std::move(field), Body(kRequiredText, "", detail)};
}

Cause InvalidCause(std::string field, std::string_view value, std::string_view detail) {
  return {std::string(kCauseInvalid), std::move(field),
          Body(kInvalidText, QuoteValue(value), detail)};
}

Cause InvalidCauseOmitValue(std::string field, std::string_view detail) {
  return {std::string(kCauseInvalid), std::move(field), Body(kInvalidText, "", detail)};
}

Cause NotSupportedCause(std::string field, std::string_view value,
                        const std::vector<std::string_view>& valid) {
  std::string detail;
  if (!valid.empty()) {
    detail = "supported values: ";
    for (size_t i = 0; i < valid.size(); ++i) {
      if (i > 0) detail += ", ";
      detail += QuoteValue(valid[i]);
    }
  }
  return {std::string(kCauseNotSupported), std::move(field),
          Body(kNotSupportedText, QuoteValue(value), detail)};
}

Cause ForbiddenCause(std::string field, std::string_view detail) {
  return {std::string(kCauseForbidden), std::move(field), Body(kForbiddenText, "", detail)};
}

Cause TooLongCause(std::string field, size_t max_length) {
  const std::string detail =
      "may not be more than " + std::to_string(max_length) + (max_length == 1 ? " byte" : " bytes");
  return {std::string(kCauseTooLong), std::move(field), Body(kTooLongText, "", detail)};
}

Cause TooManyCause(std::string field, size_t actual, size_t max) {
  const std::string detail =
      "must have at most " + std::to_string(max) + (max == 1 ? " item" : " items");
  return {std::string(kCauseTooMany), std::move(field),
          Body(kTooManyText, std::to_string(actual), detail)};
}

Cause TypeInvalidCause(std::string field, std::string_view rendered_value,
                       std::string_view detail) {
  // ErrorTypeTypeInvalid prints as "Invalid value" too.
  return {std::string(kCauseTypeInvalid), std::move(field),
          Body(kInvalidText, rendered_value, detail)};
}

std::string ToString(const Cause& c) { return c.field + ": " + c.message; }

std::ostream& operator<<(std::ostream& os, const Cause& c) {
  return os << "{" << c.type << " " << ToString(c) << "}";
}

std::string ChildPath(const std::string& path, std::string_view name) {
  if (path.empty()) return std::string(name);
  std::string s = path;
  s += '.';
  s += name;
  return s;
}

std::string IndexPath(const std::string& path, size_t index) {
  return path + "[" + std::to_string(index) + "]";
}

std::string KeyPath(const std::string& path, std::string_view key) {
  std::string s = path;
  s += '[';
  s += key;
  s += ']';
  return s;
}

}  // namespace kmt::api
