#pragma once
// Scoped changes of the process's environment and of the library's log level.
#include <cstdlib>
#include <map>
#include <optional>
#include <string>

#include "bgl/job_runtime/log.hpp"

namespace bgl::test_support {

// Saves, sets or clears environment variables and restores them when it goes.
class ScopedEnv {
 public:
  ScopedEnv() = default;
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;
  ~ScopedEnv() {
    for (const auto& [name, value] : saved_) {
      if (value)
        ::setenv(name.c_str(), value->c_str(), 1);
      else
        ::unsetenv(name.c_str());
    }
  }
  void set(const char* name, const char* value) {
    save(name);
    ::setenv(name, value, 1);
  }
  void unset(const char* name) {
    save(name);
    ::unsetenv(name);
  }

 private:
  void save(const char* name) {
    if (saved_.count(name)) return;
    const char* v = std::getenv(name);
    saved_[name] = v ? std::optional<std::string>(v) : std::nullopt;
  }
  std::map<std::string, std::optional<std::string>> saved_;
};

// Silences the library's logging while alive (tests that feed it bad packets or input on purpose
// would otherwise fill the output with the errors they expect).
class QuietLog {
 public:
  QuietLog() : level_(spdlog::get_level()) { spdlog::set_level(spdlog::level::off); }
  QuietLog(const QuietLog&) = delete;
  QuietLog& operator=(const QuietLog&) = delete;
  ~QuietLog() { spdlog::set_level(level_); }

 private:
  spdlog::level::level_enum level_;
};

}  // namespace bgl::test_support
