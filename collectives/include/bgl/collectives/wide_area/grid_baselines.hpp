#pragma once
// The allgather strategies Min3 is compared against, as ordered
// message plans timed with the same transfer model. Homogeneous: simple, spreading simple, ring,
// recursive doubling, dissemination, MPICH's selection. Grid: MagPIe, MPICH-G2 (both on the pool
// tree's clusters) and the allgather from N broadcast trees with a min-based send order.
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "bgl/collectives/wide_area/min3.hpp"

namespace bgl::collectives::wide_area {

enum class GridAlgorithm {
  min3,
  simple,
  spreading_simple,
  ring,
  recursive_doubling,  // N a power of two only
  dissemination,
  mpich,
  magpie,
  mpich_g2,
  broadcast_trees,
};

std::string_view name(GridAlgorithm a);
// Throws ConfigError listing the valid names.
GridAlgorithm parse_grid_algorithm(std::string_view text);
std::vector<GridAlgorithm> all_grid_algorithms();

// A message plan: (from, to, blocks) in an order that respects every dependency, grouped into
// rounds for round-based strategies.
struct PlannedMessage {
  int from = 0;
  int to = 0;
  std::vector<int> blocks;
};

// Commits a plan in order into a fresh model (block d starts at host d) and returns its timed
// transfers. Throws ConfigError if a message sends a block its sender does not hold yet.
std::vector<Transfer> time_plan(const HostNetwork& net, const std::vector<PlannedMessage>& plan,
                                std::size_t block_bytes, ModelOptions options = {});

// The allgather schedule of `algo` for `net`, timed. `tree` gives MagPIe's and MPICH-G2's
// clusters and is Min3's pool tree. Throws ConfigError for recursive doubling with N not a power
// of two.
std::vector<Transfer> grid_allgather(GridAlgorithm algo, const HostNetwork& net,
                                     const PoolTree& tree, std::size_t block_bytes,
                                     ModelOptions options = {});

// The modelled completion time of a timed schedule.
double makespan(const std::vector<Transfer>& transfers);

}  // namespace bgl::collectives::wide_area
