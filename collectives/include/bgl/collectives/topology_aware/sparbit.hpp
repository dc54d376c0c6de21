#pragma once
// Sparbit, the stripe-parallel-binomial-trees allgather. Bruck's
// cost for any p with the distance order reversed: distances start at 2^(ceil_log2(p)-1) and halve
// while the data doubles, so the heavy final steps are between close ranks.
#include <vector>

namespace bgl::collectives::sparbit {

struct Step {
  int distance = 0;
  bool skip = false;  // the last block of the send list is not forwarded (ignore logic)
  int held = 0;       // blocks in the send list before the step
  int sent() const { return held - static_cast<int>(skip); }
};

// The steps for p processes (empty for p = 1), from the bit mask of the paper:
// ignore_mask = ((~(p >> t)) | 1) << t with t = trailing zeros of p; skip when distance & mask.
std::vector<Step> plan(int p);

// Blocks (absolute ranks) that rank r sends / receives in step `step_index` of plan(p), in the
// order of the paper's loop (i = 0 .. sent-1).
std::vector<int> sent_blocks(int p, int r, const Step& step);
std::vector<int> received_blocks(int p, int r, const Step& step);

}  // namespace bgl::collectives::sparbit
