#pragma once
// The collective (tree) network and the global-interrupt barrier in virtual time.
#include <cstdint>

#include "bgl/virtual_time/clock.hpp"
#include "bgl/virtual_time/params.hpp"

namespace bgl::virtual_time {

// One way through a tree of `depth` levels: the 65,536-node latency scaled by depth.
Tick tree_latency(const Params& p, int depth);
// Serialisation of one collective-network packet on a tree link.
Tick tree_packet_cycles(const Params& p);
// A combine (reduce, allreduce, broadcast) of `packets` packets over a tree of `depth`, whose
// last contribution entered the network at `last_arrival`: when the result is at every node.
Tick tree_result(const Params& p, int depth, Tick last_arrival, std::uint64_t packets);
// The global-interrupt barrier releases everybody this long after the last arrival.
inline Tick barrier_release(const Params& p, Tick last_arrival) {
  return last_arrival + Params::ticks(p.gi_barrier_cycles);
}

}  // namespace bgl::virtual_time
