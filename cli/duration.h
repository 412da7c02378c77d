// cli/duration.h — Go/kubectl-style durations ("90s", "5m", "1h30m", "1.5h", "250ms").
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>

namespace kmt::cli {

// Parses a duration as Go's time.ParseDuration does for non-negative values
// (units ns, us, µs, ms, s, m, h; decimals allowed; "0" alone allowed). On
// failure returns nullopt and sets `error` to kubectl-style text.
std::optional<std::chrono::milliseconds> ParseDuration(std::string_view text, std::string* error);

// "1h2m3s", "45s", "250ms" — for messages.
std::string FormatDuration(std::chrono::milliseconds d);

// An object's age as kubectl's AGE column prints it (apimachinery's
// duration.HumanDuration: "45s", "3m20s", "15m", "5h30m", "2d4h", "1y30d"); an age
// more than a second in the future is "<invalid>".
std::string HumanAge(std::chrono::nanoseconds age);

}  // namespace kmt::cli
