#pragma once
// Registration functions of the seed papers' algorithms (src/topology_aware/register.cpp calls
// them).
#include "bgl/collectives/registry.hpp"

namespace bgl::collectives {
void register_sparbit(Registry& r);         // Sparbit allgather
void register_ring_allreduce(Registry& r);  // contention-free ring allreduce
void register_clairvoyant(Registry& r);     // arrival-aware (Clairvoyant) reduce
void register_grid_allgather(Registry& r);  // Min3 grid allgather
}  // namespace bgl::collectives
