#pragma once
// The one exception type of bglemu's configuration paths (shapes, mappings, options, files).
// Hot paths never throw; they return status values instead.
#include <stdexcept>
#include <string>

namespace bgl {

class ConfigError : public std::runtime_error {
 public:
  explicit ConfigError(const std::string& what) : std::runtime_error(what) {}
};

}  // namespace bgl
