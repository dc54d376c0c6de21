// Seed 001: Sparbit allgather (any p, uneven counts: each block travels as its own message).
#include "bgl/coll/seeds/sparbit.hpp"

#include <bit>

#include "bgl/coll/registry.hpp"
#include "gen_util.hpp"
#include "seeds/seeds.hpp"

namespace bgl::coll {

namespace sparbit {

std::vector<Step> plan(int p) {
  std::vector<Step> steps;
  if (p <= 1) return steps;
  const auto up = static_cast<std::uint32_t>(p);
  const int L = std::bit_width(up - 1);  // ceil_log2(p)
  const int t = std::countr_zero(up);
  const std::uint32_t ignore_mask = ((~(up >> t)) | 1u) << t;
  int held = 1;
  for (int dist = 1 << (L - 1); dist >= 1; dist /= 2) {
    const bool skip = (static_cast<std::uint32_t>(dist) & ignore_mask) != 0;
    steps.push_back({dist, skip, held});
    held = 2 * held - static_cast<int>(skip);
  }
  return steps;
}

std::vector<int> sent_blocks(int p, int r, const Step& step) {
  std::vector<int> out;
  for (int i = 0; i < step.sent(); ++i)
    out.push_back(((r - 2 * i * step.distance) % p + p) % p);
  return out;
}

std::vector<int> received_blocks(int p, int r, const Step& step) {
  std::vector<int> out;
  for (int i = 0; i < step.sent(); ++i) {
    out.push_back(((r - (2 * i + 1) * step.distance) % p + p) % p);
  }
  return out;
}

}  // namespace sparbit

namespace {

// Every block is one message tagged with its block index (zero-byte blocks too: the
// verifier, like MPI users, expects every rank to have heard from every rank) (a block crosses a
// given pair of ranks at most once). A send depends only on the receive that delivered its block,
// so steps overlap as far as the data allows; receives are posted at once.
Program sparbit_allgather(const Params& x, int rank) {
  Program prog(rank);
  const int p = x.p;
  auto block = [&](int b) { return recv_buf(x.displ(b), x.counts[static_cast<std::size_t>(b)]); };
  std::vector<StepId> ready(static_cast<std::size_t>(p), 0);  // step that made block b available
  std::vector<bool> have(static_cast<std::size_t>(p), false);
  const StepId own =
      prog.copy(block(rank), send_buf(0, x.counts[static_cast<std::size_t>(rank)]), {});
  ready[static_cast<std::size_t>(rank)] = own;
  have[static_cast<std::size_t>(rank)] = true;
  int round = 1;
  for (const auto& step : sparbit::plan(p)) {
    prog.set_round(round++);
    const int to = (rank + step.distance) % p;
    const int from = ((rank - step.distance) % p + p) % p;
    const auto out = sparbit::sent_blocks(p, rank, step);
    const auto in = sparbit::received_blocks(p, rank, step);
    for (std::size_t i = 0; i < out.size(); ++i) {
      const int b = out[i];
      prog.send(to, block(b), static_cast<Tag>(b), {ready[static_cast<std::size_t>(b)]});
    }
    for (int b : in) {
      ready[static_cast<std::size_t>(b)] = prog.recv(from, block(b), static_cast<Tag>(b), {});
      have[static_cast<std::size_t>(b)] = true;
    }
  }
  return prog;
}

}  // namespace

void register_sparbit(Registry& r) {
  r.add({"sparbit", Collective::allgather,
         "stripe parallel binomial trees: Bruck's cost, halving distances (seed 001)", gen::always,
         sparbit_allgather});
}

}  // namespace bgl::coll
