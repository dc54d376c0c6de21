#pragma once
// Symbolic execution of a schedule for all ranks (docs/COLLECTIVES.md, "Verifier").
//
// Every byte of every buffer carries its provenance: the byte offset it came from and the set of
// ranks whose contributions it combines (one rank for moved data, several after reductions). The
// verifier runs all programs in lock step, checks every step (regions inside their buffers,
// matching sends and receives, reductions combining the same element of disjoint rank sets, no
// read of undefined data, no concurrently running steps with conflicting regions) and finally that
// every rank's output is exactly what the collective defines.
#include <cstdint>
#include <string>
#include <vector>

#include "bgl/collectives/params.hpp"
#include "bgl/collectives/schedule.hpp"

namespace bgl::collectives {

struct VerifyOptions {
  // Reject steps that read bytes no input or earlier step defined (off for algorithms that
  // deliberately move padding).
  bool strict_reads = true;
  std::size_t max_errors = 8;
  // Track every byte's provenance and check the final data. Off: only structure, matching,
  // ordering, deadlock and knowledge are checked, and the transfer trace is produced (for the
  // cost model at sizes where per-byte tracking would not fit in memory).
  bool track_data = true;
};

// One communication event of the symbolic run, for the cost model.
struct Transfer {
  int level = 0;  // lock-step level at which the transfer completed
  int source = 0;
  std::vector<int> receivers;  // one for send, the line for line_send, all for tree steps
  std::uint64_t bytes = 0;
  StepKind kind = StepKind::send;  // send, line_send, tree_*, gi_barrier
  torus_emu::Direction dir{};      // line_send
};

struct VerifyResult {
  bool ok = true;
  std::vector<std::string> errors;  // "rank 3 step 7 (recv from 2 tag 5): ...", at most max_errors
  int levels = 0;                   // lock-step levels until every program finished
  int rounds = 0;                   // levels in which communication completed
  std::vector<Transfer> transfers;  // in completion order
  explicit operator bool() const { return ok; }
  std::string summary() const;  // "ok" or the errors, one per line
};

VerifyResult verify(const Schedule& schedule, const Params& params, VerifyOptions options = {});

}  // namespace bgl::collectives
