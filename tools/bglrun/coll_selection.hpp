#pragma once
// MPI programs: the collective compositions of MPICH's CH4 without its node-aware ones.
#include <optional>

#include "temporary_file.hpp"

namespace bgl::bglrun {

// MPICH's CH4 chooses, per collective, between compositions: node-aware ones (a step among the
// ranks of each "node", one among the nodes' first ranks, and for a barrier a closing broadcast)
// when the communicator has a node level, else the netmod's collective on the whole
// communicator. MPICH's nodes are what PMI says share a machine: the host, or on several hosts
// each host. The emulated partition has no such level (its nodes are BG/L nodes): on one host a
// barrier became the global interrupt plus a tree broadcast (2.89 us of BG/L time instead of
// 1.50), and on several hosts the node-aware steps would hand the device's collective hooks
// sub-communicators that are never the whole job, so the collective network and the global
// interrupt would go unused. While it exists, this file is MPICH's selection table
// (MPIR_CVAR_CH4_COLL_SELECTION_TUNING_JSON_FILE): MPICH 4.0.2's built-in table without its
// node-aware branches, the same on one host and on several.
class FlatCollectiveSelection {
 public:
  // Writes the table to a new temporary file and points the ranks (through bglrun's environment)
  // at it, unless MPIR_CVAR_CH4_COLL_SELECTION_TUNING_JSON_FILE is already set (the user's table
  // wins). Throws ConfigError when the file cannot be written.
  FlatCollectiveSelection();

  // MPICH 4.0.2's maint/tuning/coll/ch4/generic.json without its node-aware branches.
  static const char* table();

 private:
  std::optional<TemporaryFile> file_;  // removed with the selection
};

}  // namespace bgl::bglrun
