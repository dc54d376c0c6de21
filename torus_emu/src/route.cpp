#include "bgl/torus_emu/route.hpp"

#include "bgl/torus_emu/distance.hpp"

namespace bgl::torus_emu {

namespace {

constexpr std::array<Dim, kDims> kAllDims{Dim::x, Dim::y, Dim::z};

std::string line_prefix(const Shape& shape, NodeId source, NodeId destination) {
  return "deposit-bit line from " + to_string(shape.coord(source)) + " to " +
         to_string(shape.coord(destination));
}

}  // namespace

Route deterministic_route(const Shape& shape, NodeId source, NodeId destination) {
  const Coord from = shape.coord(source);
  const Coord to = shape.coord(destination);
  Route route(source);
  for (Dim d : kAllDims) {
    const Offset o = offset(shape, d, from[d], to[d]);
    for (int i = 0; i < o.hops; ++i)
      route.push(make_direction(d, o.sign));
  }
  return route;
}

Route adaptive_route(const Shape& shape, NodeId source, NodeId destination, Rng& rng) {
  const Coord from = shape.coord(source);
  const Coord to = shape.coord(destination);
  std::array<int, kDims> remaining{};
  std::array<Direction, kDims> dir{};
  for (Dim d : kAllDims) {
    const Offset o = offset(shape, d, from[d], to[d]);
    remaining[static_cast<std::size_t>(d)] = o.hops;
    dir[static_cast<std::size_t>(d)] = make_direction(d, o.sign);
  }

  Route route(source);
  for (;;) {
    std::array<std::size_t, kDims> open{};
    unsigned n = 0;
    for (std::size_t i = 0; i < kDims; ++i) {
      if (remaining[i] > 0) open[n++] = i;
    }
    if (n == 0) break;
    // With a single candidate there is no choice to make; leave the generator untouched.
    const std::size_t pick = open[n == 1 ? 0 : rng.below(n)];
    --remaining[pick];
    route.push(dir[pick]);
  }
  return route;
}

LineOrError make_line(const Shape& shape, NodeId source, NodeId destination, Direction dir) {
  const auto count = static_cast<NodeId>(shape.node_count());
  if (source >= count || destination >= count) {
    return {std::nullopt, "deposit-bit line from node " + std::to_string(source) + " to node " +
                              std::to_string(destination) + " leaves shape " + shape.to_string() +
                              " (" + std::to_string(count) + " nodes)"};
  }
  const Coord from = shape.coord(source);
  const Coord to = shape.coord(destination);

  int differing = 0;
  Dim line_dim = Dim::x;
  for (Dim d : kAllDims) {
    if (from[d] != to[d]) {
      ++differing;
      line_dim = d;
    }
  }
  if (differing == 0) {
    return {std::nullopt, line_prefix(shape, source, destination) +
                              " has zero length; source and destination must differ"};
  }
  if (differing > 1) {
    return {std::nullopt, line_prefix(shape, source, destination) + " differs in " +
                              std::to_string(differing) +
                              " coordinates; a line must stay in one dimension"};
  }
  if (dim_of(dir) != line_dim) {
    return {std::nullopt, line_prefix(shape, source, destination) + " runs along " +
                              to_char(line_dim) + " but direction " + std::string(to_string(dir)) +
                              " is along " + to_char(dim_of(dir))};
  }

  const int d = to[line_dim] - from[line_dim];
  const int k = shape.extent(line_dim);
  int length = 0;
  if (shape.is_torus(line_dim)) {
    // Any direction reaches the destination on a ring, possibly the long way round.
    length = ((d * sign_of(dir)) % k + k) % k;
  } else {
    if ((d > 0) != (sign_of(dir) > 0)) {
      return {std::nullopt, line_prefix(shape, source, destination) + ": direction " +
                                std::string(to_string(dir)) + " points away from the destination" +
                                " on mesh dimension " + to_char(line_dim)};
    }
    length = d > 0 ? d : -d;
  }
  return {Line{source, destination, dir, length}, {}};
}

Route line_route(const Shape& /*shape*/, const Line& line) {
  Route route(line.source);
  for (int i = 0; i < line.length; ++i)
    route.push(line.dir);
  return route;
}

}  // namespace bgl::torus_emu
