#include "arrival_aware/arrival_aware.hpp"

namespace bgl::collectives {

void register_arrival_aware_algorithms(Registry& r) {
  register_clairvoyant(r);
}

}  // namespace bgl::collectives
