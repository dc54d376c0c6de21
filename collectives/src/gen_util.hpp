#pragma once
// Small helpers shared by the schedule generators.
#include <bit>
#include <cstdint>
#include <string>

#include "bgl/collectives/params.hpp"
#include "bgl/collectives/schedule.hpp"

namespace bgl::collectives::gen {

// Rank relative to the root (the root is 0) and back.
inline int rel(int rank, int root, int p) {
  return (rank - root + p) % p;
}
inline int abs_rank(int vrank, int root, int p) {
  return (vrank + root) % p;
}
inline bool is_pow2(int p) {
  return p > 0 && std::has_single_bit(static_cast<unsigned>(p));
}
// Smallest power of two >= p.
inline int ceil_pow2(int p) {
  return static_cast<int>(std::bit_ceil(static_cast<unsigned>(p)));
}
// Largest power of two <= p.
inline int floor_pow2(int p) {
  return static_cast<int>(std::bit_floor(static_cast<unsigned>(p)));
}

// Splits `bytes` into `parts` pieces of whole elements (of `elem` bytes), the first ones one
// element larger when it does not divide evenly. Returns the offset of piece i (i = parts: bytes).
inline std::uint64_t split_offset(std::uint64_t bytes, int parts, int i, std::uint64_t elem = 1) {
  const std::uint64_t n = bytes / elem;
  const auto k = static_cast<std::uint64_t>(parts);
  const auto u = static_cast<std::uint64_t>(i);
  return elem * (u * (n / k) + std::min(u, n % k));
}

inline std::string always(const Params&) {
  return {};
}

}  // namespace bgl::collectives::gen
