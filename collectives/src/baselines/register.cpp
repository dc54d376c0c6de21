#include "baselines/baselines.hpp"

namespace bgl::coll {

void register_baselines(Registry& r) {
  register_bcast_baselines(r);
}

}  // namespace bgl::coll
