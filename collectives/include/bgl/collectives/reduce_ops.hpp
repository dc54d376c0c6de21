#pragma once
// Element-wise reduction kernels for reduce steps: dst[i] = dst[i] op src[i]. Buffers may be
// misaligned (elements are loaded and stored with memcpy).
#include <cstddef>
#include <span>

#include "bgl/collectives/types.hpp"

namespace bgl::collectives {

// Throws std::invalid_argument for a bitwise operation on a floating-point type or sizes that
// differ or are not whole elements.
void apply_reduce(DataType type, ReduceOp op, std::span<std::byte> dst,
                  std::span<const std::byte> src);

// Empty when `op` is defined for `type` (MPI: no bitwise operations on floating point).
const char* reduce_unsupported(DataType type, ReduceOp op);

}  // namespace bgl::collectives
