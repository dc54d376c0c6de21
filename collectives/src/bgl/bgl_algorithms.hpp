#pragma once
#include "bgl/coll/registry.hpp"

namespace bgl::coll {
void register_tree_algorithms(Registry& r);
void register_torus_bcast(Registry& r);
void register_torus_alltoall(Registry& r);
}  // namespace bgl::coll
