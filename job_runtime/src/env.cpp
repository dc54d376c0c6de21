#include "bgl/job_runtime/env.hpp"

#include <charconv>
#include <cmath>
#include <cstdlib>

#include "bgl/torus_emu/error.hpp"
#include "bgl/torus_emu/user_text.hpp"

namespace bgl::job_runtime::env {

std::optional<std::string> get(const char* name) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return std::nullopt;
  return std::string(v);
}

long long parse_int(std::string_view text, std::string_view what, long long min, long long max) {
  long long value = 0;
  const auto* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, value);
  const bool decimal =
      !text.empty() && ptr == end && (ec == std::errc{} || ec == std::errc::result_out_of_range);
  if (decimal && ec == std::errc{} && value >= min && value <= max) return value;
  throw ConfigError(std::string(what) + "='" + printable(text) +
                    "': " + (decimal ? "out of range" : "not a decimal integer") +
                    "; expected an integer in [" + std::to_string(min) + ", " +
                    std::to_string(max) + "]");
}

double parse_seconds(std::string_view text, std::string_view what) {
  constexpr double kMaxSeconds = 1e7;
  double value = 0;
  const auto* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, value);
  const bool number =
      !text.empty() && ptr == end && (ec == std::errc{} || ec == std::errc::result_out_of_range);
  if (number && ec == std::errc{} && value >= 0 && value <= kMaxSeconds) return value;
  throw ConfigError(std::string(what) + "='" + printable(text) +
                    "': " + (number && !std::isnan(value) ? "out of range" : "not a number") +
                    "; expected a number of seconds in [0, 10000000]");
}

std::optional<long long> get_int(const char* name, long long min, long long max) {
  auto v = get(name);
  if (!v) return std::nullopt;
  return parse_int(*v, name, min, max);
}

}  // namespace bgl::job_runtime::env
