#include "baselines/baselines.hpp"

namespace bgl::collectives {

void register_baselines(Registry& r) {
  register_bcast_baselines(r);
  register_allgather_baselines(r);
  register_reduce_baselines(r);
  register_alltoall_baselines(r);
  register_barrier_baselines(r);
}

}  // namespace bgl::collectives
