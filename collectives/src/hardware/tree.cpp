// Collectives on the collective (tree) network and the global interrupt: only for
// communicators spanning the whole partition, since the network's route classes are partition wide.
#include "gen_util.hpp"
#include "hardware/hardware.hpp"
#include "tree_ops.hpp"

namespace bgl::collectives {
namespace {

std::string whole(const Params& x) {
  return x.topology.whole_partition ? "" : "needs a communicator spanning the whole partition";
}

std::string whole_and_reducible(const Params& x) {
  if (std::string w = whole(x); !w.empty()) return w;
  if (!tree_supports(x.dtype, x.reduce_op))
    return "the collective network cannot combine " + std::string(to_string(x.reduce_op)) + " on " +
           std::string(to_string(x.dtype)) +
           " (integer ALU: 32/64-bit sum, max, min, bitwise; doubles: sum, max, min)";
  return {};
}

Program tree_bcast(const Params& x, int rank) {
  Program prog(rank);
  const Region all = recv_buf(0, x.bytes());
  prog.tree_bcast(x.root, all, all);
  return prog;
}

Program tree_allreduce(const Params& x, int rank) {
  Program prog(rank);
  prog.tree_allreduce(send_buf(0, x.bytes()), recv_buf(0, x.bytes()));
  return prog;
}

Program tree_reduce(const Params& x, int rank) {
  Program prog(rank);
  prog.tree_reduce(x.root, send_buf(0, x.bytes()),
                   rank == x.root ? recv_buf(0, x.bytes()) : recv_buf(0, 0));
  return prog;
}

// BG/L's allgather on the collective network: each rank's block at its place, zeros elsewhere,
// combined with the ALU's bitwise OR (one tree operation instead of log p torus steps).
Program tree_allgather(const Params& x, int rank) {
  Program prog(rank);
  prog.tree_allgather(send_buf(0, x.send_bytes(rank)), recv_buf(0, x.recv_bytes(rank)));
  return prog;
}

Program gi_barrier(const Params&, int rank) {
  Program prog(rank);
  prog.gi_barrier();
  return prog;
}

}  // namespace

void register_tree_algorithms(Registry& r) {
  r.add({"tree", Collective::bcast, "collective network broadcast (whole partition)", whole,
         tree_bcast});
  r.add({"tree", Collective::allreduce,
         "collective network allreduce, integer ALU / two-phase doubles (whole partition)",
         whole_and_reducible, tree_allreduce});
  r.add({"tree", Collective::reduce, "collective network reduce (whole partition)",
         whole_and_reducible, tree_reduce});
  r.add({"tree", Collective::allgather,
         "collective network allgather: blocks in zeros, bitwise OR (whole partition)", whole,
         tree_allgather});
  r.add(
      {"gi", Collective::barrier, "global interrupt barrier (whole partition)", whole, gi_barrier});
}

}  // namespace bgl::collectives
