#pragma once
#include "bgl/collectives/registry.hpp"

namespace bgl::collectives {
void register_bcast_baselines(Registry& r);
void register_allgather_baselines(Registry& r);
void register_reduce_baselines(Registry& r);
void register_alltoall_baselines(Registry& r);
void register_barrier_baselines(Registry& r);
}  // namespace bgl::collectives
