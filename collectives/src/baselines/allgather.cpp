// Allgather(v) baselines: ring, recursive doubling, Bruck, neighbour exchange.
#include "baselines/baselines.hpp"
#include "gen_util.hpp"

namespace bgl::collectives {
namespace {

// Blocks [first, first + n) of the gathered buffer (indices mod p must not wrap).
Region blocks(const Params& x, int first, int n) {
  return recv_buf(x.displ(first), x.displ(first + n) - x.displ(first));
}

// Ring: p - 1 steps; at step s rank r forwards block r - s to r + 1 and receives block r - s - 1.
Program ring(const Params& x, int r) {
  Program prog(r);
  const int p = x.p;
  const StepId own = prog.copy(blocks(x, r, 1), send_buf(0, x.counts[static_cast<std::size_t>(r)]));
  StepId prev = own;
  for (int s = 0; s < p - 1; ++s) {
    prog.set_round(s);
    const int out = (r - s + p) % p;
    const int in = (r - s - 1 + 2 * p) % p;
    prog.send((r + 1) % p, blocks(x, out, 1), static_cast<Tag>(s), {prev});
    prev = prog.recv((r + p - 1) % p, blocks(x, in, 1), static_cast<Tag>(s));
  }
  return prog;
}

std::string needs_pow2(const Params& x) {
  return gen::is_pow2(x.p) ? "" : "needs a power-of-two number of ranks";
}

// Recursive doubling: at step k exchange the 2^k blocks gathered so far with rank r ^ 2^k.
Program recursive_doubling(const Params& x, int r) {
  Program prog(r);
  std::vector<StepId> have{
      prog.copy(blocks(x, r, 1), send_buf(0, x.counts[static_cast<std::size_t>(r)]))};
  for (int mask = 1, k = 0; mask < x.p; mask <<= 1, ++k) {
    prog.set_round(k);
    const int partner = r ^ mask;
    const int mine = r & ~(mask - 1);
    const int theirs = partner & ~(mask - 1);
    prog.send(partner, blocks(x, mine, mask), static_cast<Tag>(k), have);
    have.push_back(prog.recv(partner, blocks(x, theirs, mask), static_cast<Tag>(k)));
  }
  return prog;
}

// Bruck: scratch holds the blocks in rotated order (position i = rank r + i). At step k with
// distance d = 2^k send positions [0, min(d, p - d)) to r - d and receive them from r + d at
// position d; finally rotate into place.
Program bruck(const Params& x, int r) {
  Program prog(r);
  const int p = x.p;
  auto cnt = [&](int pos) { return x.counts[static_cast<std::size_t>((r + pos) % p)]; };
  std::vector<std::uint64_t> off(static_cast<std::size_t>(p) + 1, 0);
  for (int i = 0; i < p; ++i)
    off[static_cast<std::size_t>(i) + 1] = off[static_cast<std::size_t>(i)] + cnt(i);
  prog.scratch_bytes = off.back();
  auto pos = [&](int a, int b) {
    return scratch_buf(off[static_cast<std::size_t>(a)],
                       off[static_cast<std::size_t>(b)] - off[static_cast<std::size_t>(a)]);
  };
  std::vector<StepId> have{prog.copy(pos(0, 1), send_buf(0, cnt(0)))};
  for (int d = 1, k = 0; d < p; d <<= 1, ++k) {
    prog.set_round(k);
    const int n = std::min(d, p - d);
    prog.send((r - d + p) % p, pos(0, n), static_cast<Tag>(k), have);
    have.push_back(prog.recv((r + d) % p, pos(d, d + n), static_cast<Tag>(k)));
  }
  // Positions 0 .. p-r-1 are ranks r .. p-1; positions p-r .. p-1 are ranks 0 .. r-1.
  prog.copy(blocks(x, r, p - r), pos(0, p - r), have);
  if (r > 0) prog.copy(blocks(x, 0, r), pos(p - r, p), have);
  return prog;
}

std::string needs_even(const Params& x) {
  return x.p % 2 == 0 ? "" : "needs an even number of ranks";
}

// Neighbour exchange (Chen et al.): p/2 steps; step 0 swaps own blocks with one neighbour, every
// later step forwards the two blocks received last to the other neighbour, alternating.
Program neighbour_exchange(const Params& x, int r) {
  Program prog(r);
  const int p = x.p;
  const bool even = r % 2 == 0;
  const int nb[2] = {even ? (r + 1) % p : (r - 1 + p) % p, even ? (r - 1 + p) % p : (r + 1) % p};
  const int step_off[2] = {even ? 2 : -2, even ? -2 : 2};
  int from[2] = {even ? r : nb[0], even ? r : nb[0]};
  const StepId own = prog.copy(blocks(x, r, 1), send_buf(0, x.counts[static_cast<std::size_t>(r)]));
  prog.send(nb[0], blocks(x, r, 1), 0, {own});
  StepId prev = prog.recv(nb[0], blocks(x, nb[0], 1), 0);
  int send_from = even ? r : from[0];
  for (int i = 1; i < p / 2; ++i) {
    prog.set_round(i);
    const int par = i % 2;
    from[par] = (from[par] + step_off[par] + p) % p;
    prog.send(nb[par], blocks(x, send_from, 2), static_cast<Tag>(i), {prev, own});
    prev = prog.recv(nb[par], blocks(x, from[par], 2), static_cast<Tag>(i));
    send_from = from[par];
  }
  return prog;
}

}  // namespace

void register_allgather_baselines(Registry& r) {
  r.add({"ring", Collective::allgather, "ring, p-1 steps of one block", gen::always, ring});
  r.add({"recursive_doubling", Collective::allgather, "recursive doubling (power of two)",
         needs_pow2, recursive_doubling});
  r.add({"bruck", Collective::allgather, "Bruck's log p dissemination with a final rotation",
         gen::always, bruck});
  r.add({"neighbour_exchange", Collective::allgather,
         "neighbour exchange, p/2 steps of two blocks (even p)", needs_even, neighbour_exchange});
}

}  // namespace bgl::collectives
