#include "bgl/job_runtime/log.hpp"

#include <spdlog/sinks/stdout_color_sinks.h>

#include <cstdlib>
#include <mutex>
#include <string>

#include "bgl/torus_emu/error.hpp"
#include "bgl/torus_emu/user_text.hpp"

namespace bgl::job_runtime::log {

void set_level(std::string_view level_name, std::string_view source) {
  const std::string name(level_name);
  const auto level = spdlog::level::from_str(name);
  // from_str answers "off" for anything it does not know; only accept "off" when it was asked for.
  if (level == spdlog::level::off && name != "off") {
    throw ConfigError(std::string(source) + "='" + printable(name) +
                      "': expected trace, debug, info, warn, error, critical or off");
  }
  spdlog::set_level(level);
}

void init(std::string_view program_name, std::optional<std::string_view> level,
          std::string_view level_source) {
  static std::once_flag once;
  std::call_once(once, [&] {
    auto logger = spdlog::stderr_color_mt(std::string(program_name));
    spdlog::set_default_logger(logger);
    spdlog::set_pattern("[%n %^%l%$] %v");
    spdlog::set_level(spdlog::level::warn);
  });
  if (level)
    set_level(*level, level_source);
  else if (const char* v = std::getenv("BGL_LOG_LEVEL"); v && *v)
    set_level(v, "BGL_LOG_LEVEL");
}

}  // namespace bgl::job_runtime::log
