// api/cause.h — one validation failure, shaped like a Kubernetes StatusCause.
//
// A Cause is what an admitter returns for each problem it finds (KubeVirt's admitters
// return []metav1.StatusCause the same way). `type` is Kubernetes' field.ErrorType
// string, `field` the JSON path as Kubernetes prints it (`a.b[0].c`, map keys as
// `annotations[key]`), and `message` is Kubernetes' field.Error.ErrorBody() text —
// the message an API server would put in a StatusCause for the same field error
// (k8s.io/apimachinery/pkg/util/validation/field/errors.go, ErrorBody).
#pragma once

#include <iosfwd>
#include <string>
#include <string_view>
#include <vector>

namespace kmt::api {

struct Cause {
  std::string type;     // e.g. "FieldValueInvalid"
  std::string field;    // e.g. "matchExpressions[0].values[1]"
  std::string message;  // e.g. "Invalid value: \"a b\": a valid label must be ..."

  bool operator==(const Cause&) const = default;
};

// Kubernetes' field.ErrorType names (field/errors.go).
inline constexpr std::string_view kCauseRequired = "FieldValueRequired";
inline constexpr std::string_view kCauseInvalid = "FieldValueInvalid";
inline constexpr std::string_view kCauseNotSupported = "FieldValueNotSupported";
inline constexpr std::string_view kCauseForbidden = "FieldValueForbidden";
inline constexpr std::string_view kCauseTooLong = "FieldValueTooLong";
inline constexpr std::string_view kCauseTooMany = "FieldValueTooMany";
inline constexpr std::string_view kCauseTypeInvalid = "FieldValueTypeInvalid";

// Constructors mirroring field.Required(), field.Invalid(), ... . String bad values are
// quoted as Go's %q would (ErrorBody); TypeInvalidCause takes the value already rendered
// (ErrorBody prints non-string values as JSON).
Cause RequiredCause(std::string field, std::string_view detail);
Cause InvalidCause(std::string field, std::string_view value, std::string_view detail);
// field.Invalid with the value left out (ErrorBody's omitValue): "Invalid value: <detail>".
Cause InvalidCauseOmitValue(std::string field, std::string_view detail);
Cause NotSupportedCause(std::string field, std::string_view value,
                        const std::vector<std::string_view>& valid);
Cause ForbiddenCause(std::string field, std::string_view detail);
Cause TooLongCause(std::string field, size_t max_length);
Cause TooManyCause(std::string field, size_t actual, size_t max);
Cause TypeInvalidCause(std::string field, std::string_view rendered_value, std::string_view detail);

// Kubernetes' field.Path printing: Child("a", "b") = "a.b" (just "b" under an empty
// path), Index("a", 2) = "a[2]", Key("a", "k") = "a[k]".
std::string ChildPath(const std::string& path, std::string_view name);
std::string IndexPath(const std::string& path, size_t index);
std::string KeyPath(const std::string& path, std::string_view key);

// A Go-style %q rendering of a string value ("a\"b"), as ErrorBody prints strings.
std::string QuoteValue(std::string_view s);

// Renders a cause the way Kubernetes' field.Error.Error() does: "<field>: <message>".
std::string ToString(const Cause& c);
// The same, for test failure messages.
std::ostream& operator<<(std::ostream& os, const Cause& c);

}  // namespace kmt::api
