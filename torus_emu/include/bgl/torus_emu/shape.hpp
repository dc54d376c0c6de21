#pragma once
#include <array>
#include <compare>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "bgl/torus_emu/direction.hpp"

namespace bgl::torus_emu {

using NodeId = std::uint32_t;

struct Coord {
  int x = 0, y = 0, z = 0;
  constexpr int operator[](Dim d) const { return d == Dim::x ? x : d == Dim::y ? y : z; }
  constexpr int& operator[](Dim d) { return d == Dim::x ? x : d == Dim::y ? y : z; }
  auto operator<=>(const Coord&) const = default;
};

std::string to_string(Coord c);  // "(x,y,z)"

// A partition of X x Y x Z nodes, each dimension 1..64 and either a torus (wrap-around links) or a
// mesh. Node ids number the nodes with x varying fastest: id = x + X * (y + Y * z).
class Shape {
 public:
  static constexpr int kMaxExtent = 64;

  // Throws ConfigError naming the bad dimension.
  Shape(std::array<int, kDims> extent, std::array<bool, kDims> torus);

  // "4x4x2" plus the dimensions that are meshes, e.g. mesh_dims = "z" or "xyz" (empty: all torus).
  // Throws ConfigError that quotes the text.
  static Shape parse(std::string_view text, std::string_view mesh_dims = {});

  int extent(Dim d) const { return extent_[static_cast<int>(d)]; }
  bool is_torus(Dim d) const { return torus_[static_cast<int>(d)]; }
  int node_count() const { return extent_[0] * extent_[1] * extent_[2]; }

  bool contains(Coord c) const;
  NodeId node_id(Coord c) const {
    return static_cast<NodeId>(c.x + extent_[0] * (c.y + extent_[1] * c.z));
  }
  Coord coord(NodeId id) const;

  // The node at the other end of `node`'s link in direction d; nullopt at the edge of a mesh, and
  // for a dimension of extent 1 (no link).
  std::optional<NodeId> neighbour(NodeId node, Direction d) const;

  std::string to_string() const;  // "4x4x2", with " mesh:z" appended when some dimension is a mesh

  bool operator==(const Shape&) const = default;

 private:
  std::array<int, kDims> extent_;
  std::array<bool, kDims> torus_;
};

}  // namespace bgl::torus_emu
