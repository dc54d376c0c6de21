#pragma once
// A timed replay of a schedule with per-rank arrival times (the arrival-pattern literature's
// metric: time from the first arrival to the last exit). Each rank starts at its arrival; a step
// starts when its dependencies finished; sends are eager (the sender is busy for the transfer, the
// data waits at the receiver) and a rank's sends are serialized in the order they become ready (one
// CPU injects every packet; link contention is not modelled, see the link loads for that), a
// receive finishes when both it has started and the data arrived; local copies and reductions run
// at the memory-copy rate. Costs are the torus cost model's BG/L constants.
#include <span>
#include <vector>

#include "bgl/collectives/cost_model.hpp"
#include "bgl/collectives/params.hpp"
#include "bgl/collectives/schedule.hpp"

namespace bgl::collectives {

struct ReplayResult {
  double first_arrival = 0;  // seconds
  double last_exit = 0;      // seconds
  std::vector<double> exit;  // per rank
  double span() const { return last_exit - first_arrival; }
};

// Throws std::invalid_argument for hardware steps (tree, global interrupt, line sends), unmatched
// point-to-point steps or a deadlock.
ReplayResult timed_replay(const Schedule& schedule, const Params& params,
                          std::span<const double> arrival, const CostConstants& constants = {});

}  // namespace bgl::collectives
