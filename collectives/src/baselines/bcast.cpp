// Broadcast baselines: MPICH's binomial tree, and van de Geijn's scatter + ring allgather for long
// messages (MPICH's long-message bcast).
#include "baselines/baselines.hpp"
#include "gen_util.hpp"

namespace bgl::coll {
namespace {

// Binomial tree rooted at `root` over the whole buffer: receive from the parent (the vrank with
// the lowest set bit cleared), then send to children vrank + 2^k for decreasing k.
Program binomial(const Params& x, int rank) {
  Program prog(rank);
  const int p = x.p;
  const int v = gen::rel(rank, x.root, p);
  const Region all = recv_buf(0, x.bytes());
  std::vector<StepId> got;
  int mask = 1;
  while (mask < p) {
    if (v & mask) {
      got.push_back(prog.recv(gen::abs_rank(v - mask, x.root, p), all, 0));
      break;
    }
    mask <<= 1;
  }
  mask >>= 1;
  int round = 1;
  for (; mask > 0; mask >>= 1, ++round)
    if (v + mask < p) {
      prog.set_round(round);
      prog.send(gen::abs_rank(v + mask, x.root, p), all, 0, got);
    }
  return prog;
}

}  // namespace

void register_bcast_baselines(Registry& r) {
  r.add({"binomial", Collective::bcast, "binomial tree, whole message per edge (MPICH short)",
         gen::always, binomial});
}

}  // namespace bgl::coll
