// Reduction baselines: binomial reduce; recursive-doubling and reduce-scatter + allgather
// (Rabenseifner) allreduce; pairwise reduce-scatter. All assume a commutative operation (MPI's
// predefined ones); non-power-of-two sizes fold the first 2 * (p - p') ranks in pairs first.
#include "baselines/baselines.hpp"
#include "gen_util.hpp"

namespace bgl::collectives {
namespace {

// Binomial reduce towards the root in vrank space. The accumulator is the root's recv buffer or,
// elsewhere, scratch[0, n); each child's contribution lands in its own scratch slot.
Program binomial_reduce(const Params& x, int rank) {
  Program prog(rank);
  const int p = x.p;
  const std::uint64_t n = x.bytes();
  const int v = gen::rel(rank, x.root, p);
  const Region acc = v == 0 ? recv_buf(0, n) : scratch_buf(0, n);
  StepId last = prog.copy(acc, send_buf(0, n));
  std::uint64_t slots = v == 0 ? 0 : 1;
  for (int mask = 1, k = 0; mask < p; mask <<= 1, ++k) {
    prog.set_round(k);
    if (v & mask) {
      prog.send(gen::abs_rank(v - mask, x.root, p), acc, 0, {last});
      break;
    }
    if (v + mask < p) {
      const Region tmp = scratch_buf(slots++ * n, n);
      const StepId g = prog.recv(gen::abs_rank(v + mask, x.root, p), tmp, 0);
      last = prog.reduce(acc, tmp, {last, g});
    }
  }
  prog.scratch_bytes = slots * n;
  return prog;
}

// The folding of a non-power-of-two size: among the first 2 * rem ranks the even ones hand their
// data to the odd neighbour and sit out; `newrank` numbers the remaining p' ranks.
struct Fold {
  int pof2, rem, newrank;  // newrank -1: sits out
  int real(int nr) const { return nr < rem ? 2 * nr + 1 : nr + rem; }
};
Fold fold(int p, int rank) {
  Fold f{gen::floor_pow2(p), 0, 0};
  f.rem = p - f.pof2;
  if (rank < 2 * f.rem)
    f.newrank = rank % 2 ? rank / 2 : -1;
  else
    f.newrank = rank - f.rem;
  return f;
}

// Recursive doubling on the recv buffer: exchange the whole vector with rank ^ 2^k and combine.
Program recursive_doubling(const Params& x, int rank) {
  Program prog(rank);
  const std::uint64_t n = x.bytes();
  const Region acc = recv_buf(0, n);
  const Fold f = fold(x.p, rank);
  StepId last = prog.copy(acc, send_buf(0, n));
  std::uint64_t slots = 0;
  auto tmp = [&] { return scratch_buf(slots++ * n, n); };
  constexpr Tag kFold = 1000000, kUnfold = 1000001;
  if (rank < 2 * f.rem) {
    if (rank % 2 == 0) {
      const StepId s = prog.send(rank + 1, acc, kFold, {last});
      prog.recv(rank + 1, acc, kUnfold, {s});
      return prog;
    }
    const Region t = tmp();
    const StepId g = prog.recv(rank - 1, t, kFold);
    last = prog.reduce(acc, t, {last, g});
  }
  for (int mask = 1, k = 0; mask < f.pof2; mask <<= 1, ++k) {
    prog.set_round(k + 1);
    const int partner = f.real(f.newrank ^ mask);
    const Region t = tmp();
    const StepId s = prog.send(partner, acc, static_cast<Tag>(k), {last});
    const StepId g = prog.recv(partner, t, static_cast<Tag>(k));
    last = prog.reduce(acc, t, {s, g});
  }
  if (rank < 2 * f.rem) prog.send(rank - 1, acc, kUnfold, {last});
  prog.scratch_bytes = slots * n;
  return prog;
}

// Rabenseifner: recursive halving reduce-scatter over p' chunks (chunk i ends at newrank i), then
// recursive doubling allgather of the chunks; with the same folding as above.
Program rabenseifner(const Params& x, int rank) {
  Program prog(rank);
  const std::uint64_t n = x.bytes();
  const std::uint64_t elem = size_of(x.dtype);
  const Region acc = recv_buf(0, n);
  const Fold f = fold(x.p, rank);
  StepId last = prog.copy(acc, send_buf(0, n));
  constexpr Tag kFold = 1000000, kUnfold = 1000001;
  if (rank < 2 * f.rem) {
    if (rank % 2 == 0) {
      const StepId s = prog.send(rank + 1, acc, kFold, {last});
      prog.recv(rank + 1, acc, kUnfold, {s});
      return prog;
    }
    prog.scratch_bytes = n;
    const StepId g = prog.recv(rank - 1, scratch_buf(0, n), kFold);
    last = prog.reduce(acc, scratch_buf(0, n), {last, g});
  }
  const int q = f.pof2;
  auto chunks = [&](int a, int b) {
    const std::uint64_t lo = gen::split_offset(n, q, a, elem);
    return recv_buf(lo, gen::split_offset(n, q, b, elem) - lo);
  };
  // Halving: the range [lo, hi) of chunks this rank is responsible for shrinks to {newrank}.
  int lo = 0, hi = q, k = 0;
  std::uint64_t scratch_at = prog.scratch_bytes;
  std::uint64_t scratch_end = scratch_at;
  std::vector<StepId> given;  // halving sends: the doubling overwrites what they read
  for (int mask = q / 2; mask > 0; mask /= 2, ++k) {
    prog.set_round(k + 1);
    const int partner = f.real(f.newrank ^ mask);
    const int mid = (lo + hi) / 2;
    const bool upper = f.newrank & mask;
    const Region give = upper ? chunks(lo, mid) : chunks(mid, hi);
    const Region keep = upper ? chunks(mid, hi) : chunks(lo, mid);
    const Region t = scratch_buf(scratch_end, keep.bytes);
    scratch_end += keep.bytes;
    given.push_back(prog.send(partner, give, static_cast<Tag>(k), {last}));
    const StepId g = prog.recv(partner, t, static_cast<Tag>(k));
    last = prog.reduce(keep, t, {last, g});
    if (upper)
      lo = mid;
    else
      hi = mid;
  }
  prog.scratch_bytes = scratch_end;
  // Doubling: the range grows back to everything. A send only reads, so the next step needs
  // just the receive.
  for (int mask = 1; mask < q; mask <<= 1, ++k) {
    prog.set_round(k + 1);
    const int partner = f.real(f.newrank ^ mask);
    const int size = hi - lo;
    const bool upper = f.newrank & mask;
    const int plo = upper ? lo - size : hi;
    prog.send(partner, chunks(lo, hi), static_cast<Tag>(k), {last});
    given.push_back(last);
    last = prog.recv(partner, chunks(plo, plo + size), static_cast<Tag>(k), given);
    given.clear();
    lo = std::min(lo, plo);
    hi = lo + 2 * size;
  }
  if (rank < 2 * f.rem) prog.send(rank - 1, acc, kUnfold, {last});
  return prog;
}

// Pairwise reduce-scatter: every rank sends block j of its input to rank j and combines the p - 1
// blocks it receives for itself.
Program pairwise_reduce_scatter(const Params& x, int r) {
  Program prog(r);
  const int p = x.p;
  const std::uint64_t mine = x.counts[static_cast<std::size_t>(r)];
  const Region acc = recv_buf(0, mine);
  StepId last = prog.copy(acc, send_buf(x.displ(r), mine));
  prog.scratch_bytes = mine * static_cast<std::uint64_t>(p > 1 ? p - 1 : 0);
  for (int s = 1; s < p; ++s) {
    prog.set_round(s);
    const int to = (r + s) % p, from = (r - s + p) % p;
    prog.send(to, send_buf(x.displ(to), x.counts[static_cast<std::size_t>(to)]), 0);
    const Region t = scratch_buf(mine * static_cast<std::uint64_t>(s - 1), mine);
    const StepId g = prog.recv(from, t, 0);
    last = prog.reduce(acc, t, {last, g});
  }
  return prog;
}

}  // namespace

void register_reduce_baselines(Registry& r) {
  r.add({"binomial", Collective::reduce, "binomial tree towards the root (MPICH short)",
         gen::always, binomial_reduce});
  r.add({"recursive_doubling", Collective::allreduce,
         "recursive doubling of the whole vector (MPICH short)", gen::always, recursive_doubling});
  r.add({"rabenseifner", Collective::allreduce,
         "recursive-halving reduce-scatter + recursive-doubling allgather (MPICH long)",
         gen::always, rabenseifner});
  r.add({"pairwise", Collective::reduce_scatter, "every rank sends block j to rank j", gen::always,
         pairwise_reduce_scatter});
}

}  // namespace bgl::collectives
