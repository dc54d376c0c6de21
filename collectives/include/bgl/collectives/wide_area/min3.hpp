#pragma once
// The Min3 allgather scheduler. Greedy and deterministic: every
// decision minimizes, over (block, destination sub-pool, source, receiver), the modelled completion
// time given all transfers committed so far; at each pool level a block enters every sub-pool
// exactly once (wide-area optimality), then each sub-pool is scheduled recursively.
#include <cstddef>
#include <vector>

#include "bgl/collectives/wide_area/pool_tree.hpp"
#include "bgl/collectives/wide_area/transfer_model.hpp"

namespace bgl::collectives::wide_area {

// One scheduled message; `blocks` is a single block for Min3, several for bundling baselines.
struct Transfer {
  int from = 0;
  int to = 0;
  std::vector<int> blocks;
  double start = 0;   // modelled
  double finish = 0;  // modelled
  int pool = -1;      // pool-tree node whose level scheduled it (Min3 only)
};

// Schedules one pool level (SCHEDULE-INPUT-POOL): `blocks` with their single holder inside
// `pool` (init_source[i] for blocks[i]) are sent into every child pool that lacks them. Commits
// into `model` and appends to `out`; returns, per blocks[i], the hosts holding it afterwards in
// the order they received it. Exposed for tests of single levels (the 4-versus-2 example).
std::vector<std::vector<int>> schedule_pool_level(TransferModel& model, const PoolTree& tree,
                                                  int pool, const std::vector<int>& blocks,
                                                  const std::vector<int>& init_source,
                                                  std::vector<Transfer>& out);

// MIN3-ALLGATHER over the whole tree: block d starts at host d. Transfers are returned in the
// order they were scheduled (which is also an order that respects every dependency).
std::vector<Transfer> min3_allgather(const HostNetwork& net, const PoolTree& tree,
                                     std::size_t block_bytes, ModelOptions options = {});

}  // namespace bgl::collectives::wide_area
