#include "bgl/coll/registry.hpp"

namespace bgl::coll {

// Seed 004's algorithms (torus deposit-bit broadcast, controlled-injection alltoall, collective
// network and global interrupt); each family registers itself from its own source file.
void register_bgl_algorithms(Registry&) {}

}  // namespace bgl::coll
