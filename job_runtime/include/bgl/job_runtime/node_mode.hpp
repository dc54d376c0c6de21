#pragma once
#include <cstdint>
#include <string_view>

namespace bgl::job_runtime {

// BG/L's three ways of using a node's two processors.
//   heater:       one task per node, the second processor idle (default);
//   coprocessor:  one task per node, the second processor helps it (FIFO group 1 is its own);
//   virtual_node: two tasks per node, t = 0 and 1, each with its own FIFO group.
enum class NodeMode : std::uint8_t { heater, coprocessor, virtual_node };

constexpr int tasks_per_node(NodeMode m) {
  return m == NodeMode::virtual_node ? 2 : 1;
}
std::string_view to_string(NodeMode m);
// Accepts heater, coprocessor (co), vn (virtual_node, virtual-node); ConfigError naming `source`.
NodeMode parse_node_mode(std::string_view text, std::string_view source);

}  // namespace bgl::job_runtime
