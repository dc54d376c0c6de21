#include "bgl/coll/registry.hpp"

namespace bgl::coll {

// The seed papers' algorithms (Sparbit, grid/Min3 allgather, Patarasuk-Yuan allreduce,
// Clairvoyant): implemented on branch coll-seeds, which adds one call per family here.
void register_seed_algorithms(Registry&) {}

}  // namespace bgl::coll
