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
  const MinimalHops m = minimal_hops(shape, source, destination);
  Route route(source);
  for (std::size_t d = 0; d < kDims; ++d)
    for (int i = 0; i < m.hops[d]; ++i)
      route.push(m.dir[d]);
  return route;
}

MinimalHops minimal_hops(const Shape& shape, NodeId source, NodeId destination) {
  const Coord from = shape.coord(source);
  const Coord to = shape.coord(destination);
  MinimalHops m;
  for (Dim d : kAllDims) {
    const Offset o = offset(shape, d, from[d], to[d]);
    m.hops[static_cast<std::size_t>(d)] = static_cast<std::uint8_t>(o.hops);
    m.dir[static_cast<std::size_t>(d)] = make_direction(d, o.sign);
  }
  return m;
}

Route adaptive_route(const Shape& shape, NodeId source, NodeId destination, Rng& rng) {
  return adaptive_route(source, minimal_hops(shape, source, destination), rng);
}

Route adaptive_route(NodeId source, const MinimalHops& hops, Rng& rng) {
  std::array<int, kDims> remaining{hops.hops[0], hops.hops[1], hops.hops[2]};
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
    route.push(hops.dir[pick]);
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
