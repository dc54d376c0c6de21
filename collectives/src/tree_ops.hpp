#pragma once
// Which reductions the collective network can do (integer ALU; doubles in two phases).
#include <optional>

#include "bgl/collective_net_emu/alu.hpp"
#include "bgl/collectives/types.hpp"

namespace bgl::collectives {

// The ALU operation for an integer reduction, if the tree can do it in one pass.
std::optional<collective_net_emu::Op> tree_integer_op(DataType t, ReduceOp op);
// Doubles: sum (two phases), max and min (one phase).
bool tree_double_op(DataType t, ReduceOp op);
inline bool tree_supports(DataType t, ReduceOp op) {
  return tree_integer_op(t, op) || tree_double_op(t, op);
}

}  // namespace bgl::collectives
