#pragma once
// Registration functions of the seed papers' algorithms (src/seeds/register.cpp calls them).
#include "bgl/coll/registry.hpp"

namespace bgl::coll {
void register_sparbit(Registry& r);         // seed 001
void register_ring_allreduce(Registry& r);  // seed 002
void register_clairvoyant(Registry& r);     // seed 003
void register_grid_allgather(Registry& r);  // seed 000
}  // namespace bgl::coll
