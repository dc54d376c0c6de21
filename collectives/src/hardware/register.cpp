#include "hardware/hardware.hpp"

namespace bgl::collectives {

// BG/L's algorithms: collective network and global interrupt (whole partition), the torus
// deposit-bit broadcast over up to three edge-disjoint routes, and the alltoall with controlled
// injection order.
void register_hardware_algorithms(Registry& r) {
  register_tree_algorithms(r);
  register_torus_bcast(r);
  register_torus_alltoall(r);
}

}  // namespace bgl::collectives
