// Broadcast baselines: MPICH's binomial tree, and van de Geijn's scatter + ring allgather for long
// messages (MPICH's long-message bcast).
#include "baselines/baselines.hpp"
#include "gen_util.hpp"

namespace bgl::collectives {
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

enum class Allgather { ring, recursive_doubling };

// Van de Geijn: binomial scatter of p chunks (chunk i belongs to vrank i), then an allgather of
// the chunks: a ring (MPICH's long-message broadcast) or, for a power of two p, recursive doubling
// (MPICH's medium-message broadcast).
Program scatter_allgather(const Params& x, int rank, Allgather allgather) {
  Program prog(rank);
  const int p = x.p;
  if (p == 1) return prog;
  const std::uint64_t n = x.bytes();
  const int v = gen::rel(rank, x.root, p);
  auto chunk_off = [&](int i) { return gen::split_offset(n, p, i); };
  auto chunks = [&](int first, int last) {  // chunks [first, last) as one region
    return recv_buf(chunk_off(first), chunk_off(last) - chunk_off(first));
  };
  // Scatter: vrank v's subtree is [v, v + lowbit(v)) (the root's: everything).
  std::vector<StepId> scattered;
  int mask = 1;
  while (mask < p) {
    if (v & mask) {
      const int hi = std::min(v + mask, p);
      scattered.push_back(prog.recv(gen::abs_rank(v - mask, x.root, p), chunks(v, hi), 0));
      break;
    }
    mask <<= 1;
  }
  const std::vector<StepId> got = scattered;
  for (mask >>= 1; mask > 0; mask >>= 1)
    if (v + mask < p) {
      const int hi = std::min(v + 2 * mask, p);
      scattered.push_back(
          prog.send(gen::abs_rank(v + mask, x.root, p), chunks(v + mask, hi), 0, got));
    }
  if (allgather == Allgather::recursive_doubling) {
    // p is a power of two: at step `mask`, exchange the aligned runs of `mask` chunks with the
    // partner v ^ mask (MPICH's scatter_recursive_doubling_allgather).
    std::vector<StepId> prev = scattered;
    int step = 0;
    for (int m = 1; m < p; m <<= 1, ++step) {
      prog.set_round(1 + step);
      const int mine = v & ~(m - 1), theirs = (v ^ m) & ~(m - 1);
      const int partner = gen::abs_rank(v ^ m, x.root, p);
      prog.send(partner, chunks(mine, mine + m), 1 + static_cast<Tag>(step), prev);
      const StepId r =
          prog.recv(partner, chunks(theirs, theirs + m), 1 + static_cast<Tag>(step), prev);
      prev.push_back(r);
    }
    return prog;
  }
  // Ring allgather in vrank order: at step s send chunk v - s to v + 1, receive chunk v - s - 1.
  prog.set_round(1);
  const int right = gen::abs_rank((v + 1) % p, x.root, p);
  const int left = gen::abs_rank((v + p - 1) % p, x.root, p);
  std::vector<StepId> prev = scattered;
  for (int s = 0; s < p - 1; ++s) {
    const int out = (v - s + p) % p;
    const int in = (v - s - 1 + 2 * p) % p;
    prog.send(right, chunks(out, out + 1), 1 + static_cast<Tag>(s), prev);
    const StepId r = prog.recv(left, chunks(in, in + 1), 1 + static_cast<Tag>(s), prev);
    prev = {r};
    if (s == 0) prev.insert(prev.end(), scattered.begin(), scattered.end());
  }
  return prog;
}

}  // namespace

void register_bcast_baselines(Registry& r) {
  r.add({"binomial", Collective::bcast, "binomial tree, whole message per edge (MPICH short)",
         gen::always, binomial});
  r.add({"scatter_allgather", Collective::bcast,
         "binomial scatter + ring allgather (van de Geijn; MPICH long)", gen::always,
         [](const Params& x, int rank) { return scatter_allgather(x, rank, Allgather::ring); }});
  r.add({"scatter_rd_allgather", Collective::bcast,
         "binomial scatter + recursive-doubling allgather (MPICH medium, p a power of two)",
         [](const Params& x) -> std::string {
           return gen::is_pow2(x.p) ? "" : "p is not a power of two";
         },
         [](const Params& x, int rank) {
           return scatter_allgather(x, rank, Allgather::recursive_doubling);
         }});
}

}  // namespace bgl::collectives
