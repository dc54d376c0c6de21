#pragma once
#include "bgl/torus_emu/shape.hpp"

namespace bgl::torus_emu {

// The minimal way along one dimension: number of hops and the sign of travel (0 when hops == 0).
// On a torus the shorter way round; a tie (|d| == extent/2) goes in the + direction.
struct Offset {
  int hops = 0;
  int sign = 0;
};

Offset offset(const Shape& shape, Dim dim, int from, int to);

// Minimal hop count between two nodes (Manhattan distance on the mesh/torus).
int distance(const Shape& shape, Coord a, Coord b);

}  // namespace bgl::torus_emu
