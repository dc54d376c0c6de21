#pragma once
#include "bgl/collectives/registry.hpp"

namespace bgl::collectives {
void register_tree_algorithms(Registry& r);
void register_torus_bcast(Registry& r);
void register_torus_alltoall(Registry& r);
}  // namespace bgl::collectives
