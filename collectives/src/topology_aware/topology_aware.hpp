#pragma once
// Registration functions of the topology-aware algorithms (src/topology_aware/register.cpp calls
// them): orders and rings chosen for where the tasks are.
#include "bgl/collectives/registry.hpp"

namespace bgl::collectives {
void register_sparbit(Registry& r);         // Sparbit allgather (distance halving, bit order)
void register_ring_allreduce(Registry& r);  // contention-free ring allreduce on a logical ring
void register_grid_allgather(Registry& r);  // Min3 allgather across clusters (wide_area/)
}  // namespace bgl::collectives
