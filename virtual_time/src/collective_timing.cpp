#include "bgl/virtual_time/collective_timing.hpp"

#include <cmath>

namespace bgl::virtual_time {

Tick tree_latency(const Params& p, int depth) {
  const double per_level = p.tree_latency_cycles / p.tree_reference_depth;
  return Params::ticks(per_level * std::max(depth, 1));
}

Tick tree_packet_cycles(const Params& p) {
  return static_cast<Tick>(
      std::ceil((p.tree_packet_bytes + p.tree_overhead_bytes) / p.tree_bytes_per_cycle));
}

// Up to the root and back down; packets pipeline, so the stream adds one packet time each.
Tick tree_result(const Params& p, int depth, Tick last_arrival, std::uint64_t packets) {
  return last_arrival + 2 * tree_latency(p, depth) +
         std::max<std::uint64_t>(packets, 1) * tree_packet_cycles(p);
}

}  // namespace bgl::virtual_time
