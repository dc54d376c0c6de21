// Alltoall(v) baselines: pairwise exchange and post-all (MPICH's isend/irecv + waitall).
#include "baselines/baselines.hpp"
#include "gen_util.hpp"

namespace bgl::coll {
namespace {

Region out_block(const Params& x, int r, int j) {
  return send_buf(x.a2a_send_displ(r, j), x.a2a_count(r, j));
}
Region in_block(const Params& x, int i, int r) {
  return recv_buf(x.a2a_recv_displ(i, r), x.a2a_count(i, r));
}

// Pairwise: step s sends to r + s and receives from r - s; one exchange at a time.
Program pairwise(const Params& x, int r) {
  Program prog(r);
  const int p = x.p;
  std::vector<StepId> prev{prog.copy(in_block(x, r, r), out_block(x, r, r))};
  for (int s = 1; s < p; ++s) {
    prog.set_round(s);
    const int to = (r + s) % p, from = (r - s + p) % p;
    const StepId a = prog.send(to, out_block(x, r, to), 0, prev);
    const StepId b = prog.recv(from, in_block(x, from, r), 0, prev);
    prev = {a, b};
  }
  return prog;
}

// Post-all: every receive and send posted at once, in the rotated order r + 1, r + 2, ...
Program post_all(const Params& x, int r) {
  Program prog(r);
  const int p = x.p;
  for (int s = 1; s < p; ++s)
    prog.recv((r - s + p) % p, in_block(x, (r - s + p) % p, r), 0);
  for (int s = 1; s < p; ++s)
    prog.send((r + s) % p, out_block(x, r, (r + s) % p), 0);
  prog.copy(in_block(x, r, r), out_block(x, r, r));
  return prog;
}

}  // namespace

void register_alltoall_baselines(Registry& r) {
  r.add({"pairwise", Collective::alltoall, "pairwise exchange, one partner per step", gen::always,
         pairwise});
  r.add({"post_all", Collective::alltoall, "all sends and receives posted at once (MPICH)",
         gen::always, post_all});
}

void register_barrier_baselines(Registry& r) {
  // Dissemination: at step k tell r + 2^k and hear from r - 2^k.
  r.add({"dissemination", Collective::barrier, "dissemination, ceil(log2 p) zero-byte steps",
         gen::always, [](const Params& x, int rank) {
           Program prog(rank);
           std::vector<StepId> prev;
           for (int d = 1, k = 0; d < x.p; d <<= 1, ++k) {
             prog.set_round(k);
             // Round k's message must carry everything heard in rounds < k.
             prog.send((rank + d) % x.p, recv_buf(0, 0), static_cast<Tag>(k), prev);
             prev.push_back(prog.recv((rank - d + x.p) % x.p, recv_buf(0, 0), static_cast<Tag>(k)));
           }
           return prog;
         }});
}

}  // namespace bgl::coll
