#include "api/cause.h"

#include <catch2/catch.hpp>

namespace kmt::api {
namespace {

TEST_CASE("QuoteValue renders like Go's %q") {
  auto [in, want] = GENERATE(table<std::string, std::string>({
      {"", R"("")"},
      {"abc", R"("abc")"},
      {"a\"b", R"("a\"b")"},
      {"a\\b", R"("a\\b")"},
      {"a\nb\tc", R"("a\nb\tc")"},
      {std::string("\x01\x7f", 2), R"("\x01\x7f")"},
      {"zürich", "\"zürich\""},
      {"\xff", R"("\xff")"},
      // Go escapes the code points strconv.IsPrint rejects (found by the differential
      // tier: the project printed them raw).
      {"a\u2028b", R"("a\u2028b")"},
      {"a\u200bb", R"("a\u200bb")"},
      {"\u00a0a", R"("\u00a0a")"},
      {"\u00ad", R"("\u00ad")"},
      {"\u0085", R"("\u0085")"},
      {"\ufeff", R"("\ufeff")"},
      {"\U000E0001", R"("\U000e0001")"},
      {"\U0010FFFF", R"("\U0010ffff")"},
      {"\u00e9\U0001F600\u65e5", "\"\u00e9\U0001F600\u65e5\""},
      // Not UTF-8 as utf8.DecodeRune reads it: every byte escaped.
      {"\xc0\xaf", R"("\xc0\xaf")"},
      {"\xed\xa0\x80", R"("\xed\xa0\x80")"},
      {"\xf4\x90\x80\x80", R"("\xf4\x90\x80\x80")"},
      {"\xe2\x82", R"("\xe2\x82")"},
  }));
  CAPTURE(in);
  CHECK(QuoteValue(in) == want);
}

TEST_CASE("Cause constructors mirror field.Error.ErrorBody") {
  auto [cause, type, field,
        message] = GENERATE(table<Cause, std::string, std::string, std::string>({
      {RequiredCause("a.values", "must be specified"), "FieldValueRequired", "a.values",
       "Required value: must be specified"},
      {RequiredCause("a", ""), "FieldValueRequired", "a", "Required value"},
      {InvalidCause("a.key", "x y", "bad"), "FieldValueInvalid", "a.key",
       R"(Invalid value: "x y": bad)"},
      {InvalidCauseOmitValue("a", "not JSON"), "FieldValueInvalid", "a", "Invalid value: not JSON"},
      {NotSupportedCause("a.foo", "foo", {"key", "operator"}), "FieldValueNotSupported", "a.foo",
       R"(Unsupported value: "foo": supported values: "key", "operator")"},
      {ForbiddenCause("a.values", "may not be specified"), "FieldValueForbidden", "a.values",
       "Forbidden: may not be specified"},
      {TooLongCause("a", 16384), "FieldValueTooLong", "a",
       "Too long: may not be more than 16384 bytes"},
      {TooLongCause("a", 1), "FieldValueTooLong", "a", "Too long: may not be more than 1 byte"},
      {TooManyCause("a", 65, 64), "FieldValueTooMany", "a",
       "Too many: 65: must have at most 64 items"},
      {TypeInvalidCause("a.key", "5", "must be of type string"), "FieldValueTypeInvalid", "a.key",
       "Invalid value: 5: must be of type string"},
  }));
  CAPTURE(message);
  CHECK(cause.type == type);
  CHECK(cause.field == field);
  CHECK(cause.message == message);
  CHECK(ToString(cause) == field + ": " + message);
}

TEST_CASE("Paths print like field.Path") {
  CHECK(ChildPath("", "matchExpressions") == "matchExpressions");
  CHECK(ChildPath("spec", "affinity") == "spec.affinity");
  CHECK(IndexPath("matchExpressions", 3) == "matchExpressions[3]");
  CHECK(KeyPath("metadata.annotations", "a/b") == "metadata.annotations[a/b]");
  CHECK(ChildPath(IndexPath(ChildPath("", "matchFields"), 0), "values") == "matchFields[0].values");
}

}  // namespace
}  // namespace kmt::api
