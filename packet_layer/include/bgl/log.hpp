#pragma once
// Logging for every bglemu component: spdlog's default logger, named after the program, with the
// level from BGL_LOG_LEVEL (trace, debug, info, warn, error, critical, off; default warn).
#include <spdlog/spdlog.h>

#include <string_view>

namespace bgl::log {

// Idempotent. Throws ConfigError for an unknown BGL_LOG_LEVEL value.
void init(std::string_view program_name);

// Applies a level given by name (e.g. from a command-line flag); throws ConfigError if unknown.
void set_level(std::string_view level_name, std::string_view source);

}  // namespace bgl::log
