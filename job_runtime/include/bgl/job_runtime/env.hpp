#pragma once
// Reading BGL_* environment variables with errors that name the variable and the bad value.
#include <optional>
#include <string>
#include <string_view>

namespace bgl::job_runtime::env {

std::optional<std::string> get(const char* name);

// Integer in [min, max]; ConfigError "BGL_X='abc': expected an integer in [min, max]" otherwise.
std::optional<long long> get_int(const char* name, long long min, long long max);

// Parses a decimal integer in [min, max]; `what` names the source ("BGL_X", "--timeout") in errors.
long long parse_int(std::string_view text, std::string_view what, long long min, long long max);
double parse_seconds(std::string_view text, std::string_view what);

}  // namespace bgl::job_runtime::env
