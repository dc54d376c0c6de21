#include "topology_aware/topology_aware.hpp"

namespace bgl::collectives {

// The seed papers' algorithms: Sparbit (001), grid/Min3 allgather (000), Patarasuk-Yuan ring
// allreduce (002), Clairvoyant reduce (003).
void register_seed_algorithms(Registry& r) {
  register_sparbit(r);
  register_ring_allreduce(r);
  register_clairvoyant(r);
  register_grid_allgather(r);
}

}  // namespace bgl::collectives
