#include "topology_aware/topology_aware.hpp"

namespace bgl::collectives {

void register_topology_aware_algorithms(Registry& r) {
  register_sparbit(r);
  register_ring_allreduce(r);
  register_grid_allgather(r);
}

}  // namespace bgl::collectives
