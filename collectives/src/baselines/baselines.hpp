#pragma once
#include "bgl/coll/registry.hpp"

namespace bgl::coll {
void register_bcast_baselines(Registry& r);
}  // namespace bgl::coll
