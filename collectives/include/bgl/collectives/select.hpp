#pragma once
// Which algorithm runs a collective call: the BGL_COLL_<OP> override if set (e.g.
// BGL_COLL_BCAST=torus3), else the defaults by message size and communicator documented in
// docs/CONFIGURATION.md ("Collectives").
#include <string>

#include "bgl/collectives/registry.hpp"

namespace bgl::collectives {

struct Selection {
  const Algorithm* algorithm = nullptr;  // nullptr: leave the call to MPICH (override "mpich")
  std::string reason;                    // why (for logs and the bench)
};

// Reads BGL_COLL_<OP> on every call (lets tests change it). An override that names no algorithm
// throws ConfigError listing the valid names; one that is not applicable to this call falls back
// to the default with a warning in the log.
Selection select_algorithm(const Params& params);
// The same for the value `override` of BGL_COLL_<OP> (nullptr or empty: not set).
Selection select_algorithm(const Params& params, const char* override);

// The algorithm MPICH 4.0.2 itself would run for this call (the intra-communicator rules of its
// src/maint/tuning/coll/mpir/generic.json, not its node-aware "smp" variants), named as in our
// registry, with MPICH's name when that differs ("scatter_allgather (MPICH:
// scatter_recursive_doubling_allgather)"). For comparing like with like in benchmarks.
struct MpichChoice {
  std::string_view algorithm;  // ours; empty when the library has no equivalent
  std::string_view mpich_name;
};
MpichChoice mpich_default(const Params& params);

// The environment variable for a collective: "BGL_COLL_BCAST", "BGL_COLL_ALLREDUCE", ...
const char* override_variable(Collective op);

}  // namespace bgl::collectives
