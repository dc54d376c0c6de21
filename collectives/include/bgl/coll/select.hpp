#pragma once
// Which algorithm runs a collective call: the BGL_COLL_<OP> override if set (e.g.
// BGL_COLL_BCAST=torus3), else the defaults by message size and communicator documented in
// docs/CONFIGURATION.md ("Collectives").
#include <string>

#include "bgl/coll/registry.hpp"

namespace bgl::coll {

struct Selection {
  const Algorithm* algorithm = nullptr;  // nullptr: leave the call to MPICH (override "mpich")
  std::string reason;                    // why (for logs and the bench)
};

// Reads BGL_COLL_<OP> on every call (cheap; lets tests change it). An override that names no
// algorithm throws ConfigError listing the valid names; one that is not applicable to this call
// falls back to the default with a warning in the log.
Selection select_algorithm(const Params& params);

// The environment variable for a collective: "BGL_COLL_BCAST", "BGL_COLL_ALLREDUCE", ...
std::string override_variable(Collective op);

}  // namespace bgl::coll
