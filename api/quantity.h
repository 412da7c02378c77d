// api/quantity.h — Kubernetes resource quantities (k8s.io/apimachinery/pkg/api/resource,
// quantity.go): <sign><digits>[.<digits>]<suffix>, suffix one of the binary SI
// Ki Mi Gi Ti Pi Ei, the decimal SI n u m "" k M G T P E, or a decimal exponent e<int> /
// E<int>. Values are rounded up to the unit asked for, like Quantity.MilliValue() and
// Quantity.Value().
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace kmt::api {

// Thousandths of the unit ("100m" → 100, "2" → 2000). nullopt on bad syntax or a value
// outside int64; `error` (optional) gets the reason.
std::optional<int64_t> ParseQuantityMilli(std::string_view text, std::string* error = nullptr);
// Whole units, rounded up ("1Gi" → 1073741824, "512M" → 512000000, "100m" → 1).
std::optional<int64_t> ParseQuantityValue(std::string_view text, std::string* error = nullptr);

// Short human forms for messages. Bytes: the largest binary unit that divides exactly
// ("2Gi", "1536Mi"), else one decimal in the largest unit reached ("4.4Gi"), else plain
// ("1000"). Milli-cores: whole cores when exact ("2"), else milli ("500m", "1500m").
std::string FormatBytes(int64_t bytes);
std::string FormatMilli(int64_t milli);

}  // namespace kmt::api
