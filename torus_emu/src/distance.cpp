#include "bgl/torus_emu/distance.hpp"

#include <cstdlib>

namespace bgl::torus_emu {

Offset offset(const Shape& shape, Dim dim, int from, int to) {
  const int d = to - from;
  if (d == 0) return {};
  if (!shape.is_torus(dim)) return {std::abs(d), d > 0 ? +1 : -1};
  const int k = shape.extent(dim);
  const int forward = ((d % k) + k) % k;  // hops going +, wrapping as needed
  const int backward = k - forward;
  // Ties go + so that both ends of a half-way pair agree on a canonical choice.
  if (forward <= backward) return {forward, +1};
  return {backward, -1};
}

int distance(const Shape& shape, Coord a, Coord b) {
  return offset(shape, Dim::x, a.x, b.x).hops + offset(shape, Dim::y, a.y, b.y).hops +
         offset(shape, Dim::z, a.z, b.z).hops;
}

}  // namespace bgl::torus_emu
