#pragma once
#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>

#include "bgl/torus_emu/direction.hpp"
#include "bgl/torus_emu/rng.hpp"
#include "bgl/torus_emu/shape.hpp"

namespace bgl::torus_emu {

// An outgoing link: the link of `node` in direction `dir`.
struct Link {
  NodeId node = 0;
  Direction dir = Direction::x_plus;
  bool operator==(const Link&) const = default;
};

// A path through the torus as the sequence of directions taken from `source`. Fixed capacity so
// that computing a route on the packet hot path never allocates.
class Route {
 public:
  static constexpr int kMaxHops = 3 * Shape::kMaxExtent;

  Route() = default;
  explicit Route(NodeId source) : source_(source) {}

  NodeId source() const { return source_; }
  int hops() const { return hops_; }
  std::span<const Direction> steps() const {
    return {steps_.data(), static_cast<std::size_t>(hops_)};
  }
  // Direction of the last hop; nullopt for a zero-hop route (source == destination).
  std::optional<Direction> last() const {
    return hops_ ? std::optional<Direction>(steps_[hops_ - 1]) : std::nullopt;
  }
  void push(Direction d) { steps_[static_cast<std::size_t>(hops_++)] = d; }

  // Calls f(Link) for every link along the route, in order.
  template <class F>
  void for_each_link(const Shape& shape, F&& f) const;

 private:
  NodeId source_ = 0;
  int hops_ = 0;
  std::array<Direction, kMaxHops> steps_{};
};

// Deterministic dimension-ordered route: correct x, then y, then z, each the minimal way.
Route deterministic_route(const Shape& shape, NodeId source, NodeId destination);

// What every minimal route between two nodes crosses: the hops per dimension and the direction
// each dimension is crossed in (offset(): ties in an even torus go plus). Fixed per pair, so a
// sender that routes many packets to the same node computes it once.
struct MinimalHops {
  std::array<std::uint8_t, kDims> hops{};
  std::array<Direction, kDims> dir{};
  // At most one dimension to cross: the only minimal route is the deterministic one.
  bool single_path() const { return (hops[0] != 0) + (hops[1] != 0) + (hops[2] != 0) <= 1; }
};
MinimalHops minimal_hops(const Shape& shape, NodeId source, NodeId destination);

// Minimal adaptive route: at each hop pick uniformly among the dimensions that still need hops
// (each in its minimal direction). Hop count always equals distance().
Route adaptive_route(const Shape& shape, NodeId source, NodeId destination, Rng& rng);
// The same from the pair's MinimalHops (no coordinate arithmetic).
Route adaptive_route(NodeId source, const MinimalHops& hops, Rng& rng);

// A deposit-bit line: from `source` along one dimension in an explicit direction to `destination`;
// every node after the source up to and including the destination receives the packet.
struct Line {
  NodeId source = 0;
  NodeId destination = 0;
  Direction dir = Direction::x_plus;
  int length = 0;  // hops from source to destination, >= 1
};

// Validates a deposit-bit line: source and destination must differ in exactly one coordinate, and
// on a mesh `dir` must point from source towards destination. Returns an explanation on failure.
struct LineOrError {
  std::optional<Line> line;
  std::string error;
};
LineOrError make_line(const Shape& shape, NodeId source, NodeId destination, Direction dir);

Route line_route(const Shape& shape, const Line& line);

template <class F>
void Route::for_each_link(const Shape& shape, F&& f) const {
  // Steps coordinates rather than node ids: a hop is an add and a wrap check, with no division
  // (this runs for every adaptively routed packet). A minimal route never crosses a mesh's edge.
  Coord c = shape.coord(source_);
  NodeId at = source_;
  for (int i = 0; i < hops_; ++i) {
    const Direction d = steps_[static_cast<std::size_t>(i)];
    f(Link{at, d});
    const Dim dim = dim_of(d);
    const int k = shape.extent(dim);
    int v = c[dim] + sign_of(d);
    if (v < 0)
      v += k;
    else if (v >= k)
      v -= k;
    c[dim] = v;
    at = shape.node_id(c);
  }
}

}  // namespace bgl::torus_emu
