// Alltoall(v) baselines: pairwise exchange, post-all (MPICH's isend/irecv + waitall) and Bruck.
#include "baselines/baselines.hpp"
#include "gen_util.hpp"

namespace bgl::collectives {
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

// Bruck's index algorithm (MPICH's alltoall for blocks <= 256 B with p >= 8): ceil(log2 p)
// exchanges of all blocks whose rotated index has bit k set, packed through scratch. Trades
// volume (each block travels up to log p times) for log p messages instead of p - 1.
// Scratch: the rotated blocks, then a pack and an unpack area of ceil(p/2) blocks each.
Program bruck(const Params& x, int r) {
  Program prog(r);
  const int p = x.p;
  const std::uint64_t b = x.a2a_count(0, 0);
  const std::uint64_t tmp = 0, pack = static_cast<std::uint64_t>(p) * b;
  const std::uint64_t half = static_cast<std::uint64_t>((p + 1) / 2) * b, unpack = pack + half;
  prog.scratch_bytes = unpack + half;
  auto slot = [&](int i) { return scratch_buf(tmp + static_cast<std::uint64_t>(i) * b, b); };
  std::vector<StepId> ready;   // everything the next exchange's packing must wait for
  for (int i = 0; i < p; ++i)  // slot i: the block for r + i
    ready.push_back(prog.copy(slot(i), out_block(x, r, (r + i) % p)));
  int step = 0;
  for (int k = 1; k < p; k <<= 1, ++step) {
    prog.set_round(step);
    std::vector<StepId> packed;
    std::uint64_t n = 0;
    for (int i = 1; i < p; ++i)
      if (i & k) {
        packed.push_back(prog.copy(scratch_buf(pack + n, b), slot(i), ready));
        n += b;
      }
    const StepId sent =
        prog.send((r + k) % p, scratch_buf(pack, n), static_cast<Tag>(step), packed);
    const StepId got =
        prog.recv((r - k + p) % p, scratch_buf(unpack, n), static_cast<Tag>(step), ready);
    std::vector<StepId> before = packed;  // a slot is overwritten only after it was packed
    before.push_back(got);
    ready = {sent};  // the pack area is reused by the next exchange
    n = 0;
    for (int i = 1; i < p; ++i)
      if (i & k) {
        ready.push_back(prog.copy(slot(i), scratch_buf(unpack + n, b), before));
        n += b;
      }
  }
  for (int i = 0; i < p; ++i)  // slot i now holds the block from r - i
    prog.copy(in_block(x, (r - i + p) % p, r), slot(i), ready);
  return prog;
}

std::string uniform_blocks(const Params& x) {
  return x.counts.size() == 1 ? "" : "needs one block size for every pair (not alltoallv)";
}

}  // namespace

void register_alltoall_baselines(Registry& r) {
  r.add({"pairwise", Collective::alltoall, "pairwise exchange, one partner per step", gen::always,
         pairwise});
  r.add({"bruck", Collective::alltoall,
         "Bruck's index algorithm, log p packed exchanges (MPICH short, p >= 8)", uniform_blocks,
         bruck});
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

}  // namespace bgl::collectives
