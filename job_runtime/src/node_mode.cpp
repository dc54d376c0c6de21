#include "bgl/job_runtime/node_mode.hpp"

#include <string>

#include "bgl/torus_emu/error.hpp"
#include "bgl/torus_emu/user_text.hpp"

namespace bgl::job_runtime {

std::string_view to_string(NodeMode m) {
  switch (m) {
    case NodeMode::heater:
      return "heater";
    case NodeMode::coprocessor:
      return "coprocessor";
    case NodeMode::virtual_node:
      return "vn";
  }
  return "?";
}

NodeMode parse_node_mode(std::string_view text, std::string_view source) {
  if (text == "heater") return NodeMode::heater;
  if (text == "coprocessor" || text == "co") return NodeMode::coprocessor;
  if (text == "vn" || text == "virtual_node" || text == "virtual-node")
    return NodeMode::virtual_node;
  throw ConfigError(std::string(source) + "='" + printable(text) +
                    "': expected heater, coprocessor or vn");
}

}  // namespace bgl::job_runtime
