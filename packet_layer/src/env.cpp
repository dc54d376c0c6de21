#include "bgl/env.hpp"

#include <charconv>
#include <cstdlib>

#include "bgl/torus/error.hpp"

namespace bgl::env {

std::optional<std::string> get(const char* name) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return std::nullopt;
  return std::string(v);
}

long long parse_int(std::string_view text, std::string_view what, long long min, long long max) {
  long long value = 0;
  const auto* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (text.empty() || ec != std::errc{} || ptr != end || value < min || value > max) {
    throw ConfigError(std::string(what) + "='" + std::string(text) + "': expected an integer in [" +
                      std::to_string(min) + ", " + std::to_string(max) + "]");
  }
  return value;
}

double parse_seconds(std::string_view text, std::string_view what) {
  double value = 0;
  const auto* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (text.empty() || ec != std::errc{} || ptr != end || !(value >= 0) || value > 1e7) {
    throw ConfigError(std::string(what) + "='" + std::string(text) +
                      "': expected a number of seconds >= 0");
  }
  return value;
}

std::optional<long long> get_int(const char* name, long long min, long long max) {
  auto v = get(name);
  if (!v) return std::nullopt;
  return parse_int(*v, name, min, max);
}

}  // namespace bgl::env
