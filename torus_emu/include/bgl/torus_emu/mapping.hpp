#pragma once
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "bgl/torus_emu/shape.hpp"

namespace bgl::torus_emu {

using Rank = std::uint32_t;

// Where a task lives: its node and its processor slot t (0, or 0/1 in virtual-node mode).
struct TaskLocation {
  NodeId node = 0;
  int t = 0;
  bool operator==(const TaskLocation&) const = default;
};

// Rank <-> (x, y, z, t). Built from an order string or a mapping file; every rank has a distinct
// location inside the shape.
class Mapping {
 public:
  // `order` is a permutation of the letters X, Y, Z, T (T may be omitted when tasks_per_node == 1),
  // listed from fastest- to slowest-varying: "XYZT" (default) numbers x fastest, then y, z, t, i.e.
  // rank = x + X*(y + Y*(z + Z*t)). Ranks 0..ntasks-1 take the first ntasks positions of that
  // order. Throws ConfigError on a bad order string or when ntasks does not fit shape *
  // tasks_per_node.
  static Mapping from_order(const Shape& shape, int tasks_per_node, std::string_view order,
                            int ntasks);

  // One task per line, in rank order: "x y z [t]"; '#' starts a comment; blank lines are ignored.
  // t is required when tasks_per_node == 2 and must be 0 otherwise. Throws ConfigError as
  // "<source>:<line>: <problem>" for malformed numbers, extra fields, out-of-range coordinates,
  // duplicates (naming the earlier rank and line), missing t, more task lines than ntasks (at the
  // first extra line), and "<source>: <n> task lines, expected <ntasks>" when there are too few.
  static Mapping from_text(const Shape& shape, int tasks_per_node, std::string_view text,
                           std::string_view source_name, int ntasks);
  static Mapping from_file(const Shape& shape, int tasks_per_node,
                           const std::filesystem::path& path, int ntasks);

  // Explicit table (e.g. read back from shared memory). Validates like from_text.
  static Mapping from_locations(const Shape& shape, int tasks_per_node,
                                std::vector<TaskLocation> locations);

  int size() const { return static_cast<int>(locations_.size()); }
  int tasks_per_node() const { return tasks_per_node_; }
  const Shape& shape() const { return shape_; }
  TaskLocation location(Rank r) const { return locations_[r]; }
  Coord coord(Rank r) const { return shape_.coord(locations_[r].node); }
  std::optional<Rank> rank_at(NodeId node, int t) const;
  const std::vector<TaskLocation>& locations() const { return locations_; }

  // The text form accepted by from_text (round-trips).
  std::string to_text() const;

 private:
  Mapping(const Shape& shape, int tasks_per_node, std::vector<TaskLocation> locations);
  Shape shape_;
  int tasks_per_node_;
  std::vector<TaskLocation> locations_;
  std::vector<std::int32_t> rank_of_slot_;  // node * tasks_per_node + t -> rank, -1 if unused
};

}  // namespace bgl::torus_emu
