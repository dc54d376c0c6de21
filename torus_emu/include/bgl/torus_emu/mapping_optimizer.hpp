#pragma once
// Rating and optimising a rank mapping for a communication matrix.
//
// A mapping is rated by its hop-bytes (the sum over rank pairs of bytes times the torus distance
// between their nodes) and by the load of its busiest directed link (bytes per link when every
// pair's bytes follow the deterministic X->Y->Z route). The optimiser places tasks greedily (the
// task most connected to those already placed goes next, to the free slot nearest its placed
// partners), improves the placement by simulated annealing over swaps (fixed seed, bounded
// moves and time), then spends a bounded number of swaps lowering the busiest link without
// raising hop-bytes. It never returns a mapping rated worse than its starting mapping.
// docs/CONFIGURATION.md, "bglmap --optimize".
#include <cstdint>
#include <optional>

#include "bgl/torus_emu/comm_matrix.hpp"
#include "bgl/torus_emu/route.hpp"

namespace bgl::torus_emu {

struct MappingRating {
  std::uint64_t hop_bytes = 0;
  std::uint64_t total_bytes = 0;  // bytes between distinct ranks
  std::uint64_t busiest_link_bytes = 0;
  Link busiest_link{};
  // Lower bounds for this matrix on this shape and mode (independent of the mapping): every
  // task's partners, heaviest first, on the nearest slots there are; for the busiest link, that
  // bound spread evenly over every directed link and, with one task per node, the heaviest pair.
  std::uint64_t hop_bytes_lower_bound = 0;
  std::uint64_t busiest_link_lower_bound = 0;
  double mean_hops() const {
    return total_bytes ? static_cast<double>(hop_bytes) / static_cast<double>(total_bytes) : 0.0;
  }
  // Lexicographic: hop-bytes first, then the busiest link.
  bool better_than(const MappingRating& o) const {
    return hop_bytes != o.hop_bytes ? hop_bytes < o.hop_bytes
                                    : busiest_link_bytes < o.busiest_link_bytes;
  }
};

// Throws ConfigError when the matrix and the mapping disagree on the number of tasks.
MappingRating rate_mapping(const CommMatrix& matrix, const Mapping& mapping);

struct OptimizeOptions {
  std::uint64_t seed = 1;
  double max_seconds =
      30;  // a cap: with the default move budget, jobs up to ~4k tasks finish first
  // Simulated-annealing moves per task (the run's length grows with the job).
  std::uint64_t moves_per_task = 20000;
  std::uint64_t max_moves = 200'000'000;
};

struct OptimizeResult {
  Mapping mapping;
  MappingRating before;  // the starting mapping's rating
  MappingRating after;
  std::uint64_t greedy_hop_bytes = 0;  // after the greedy placement, before the local search
  std::uint64_t moves = 0;             // annealing moves tried
  bool time_capped = false;            // max_seconds ended the search early
};

// A mapping of matrix.tasks() ranks onto `start`'s shape and tasks per node. `start` is where the
// search is judged from (the job's current mapping); the result is never worse than it.
// Throws ConfigError when the matrix and `start` disagree on the number of tasks.
OptimizeResult optimize_mapping(const CommMatrix& matrix, const Mapping& start,
                                const OptimizeOptions& options = {});

}  // namespace bgl::torus_emu
