#pragma once
#include "bgl/coll/registry.hpp"

namespace bgl::coll {
void register_bcast_baselines(Registry& r);
void register_allgather_baselines(Registry& r);
void register_reduce_baselines(Registry& r);
void register_alltoall_baselines(Registry& r);
void register_barrier_baselines(Registry& r);
}  // namespace bgl::coll
