#pragma once
// Logging for every bglemu component: spdlog's default logger, named after the program, with the
// level from BGL_LOG_LEVEL (trace, debug, info, warn, error, critical, off; default warn).
#include <spdlog/spdlog.h>

#include <optional>
#include <string_view>

namespace bgl::job_runtime::log {

// Idempotent. Throws ConfigError for an unknown BGL_LOG_LEVEL value. A `level` given (by a flag,
// named `level_source`) wins: BGL_LOG_LEVEL is then not read.
void init(std::string_view program_name, std::optional<std::string_view> level = std::nullopt,
          std::string_view level_source = "--log-level");

// Applies a level given by name (e.g. from a command-line flag); throws ConfigError if unknown.
void set_level(std::string_view level_name, std::string_view source);

}  // namespace bgl::job_runtime::log
