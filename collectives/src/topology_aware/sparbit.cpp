// Sparbit allgather (any p, uneven counts: each block travels as its own message).
#include "bgl/collectives/topology_aware/sparbit.hpp"

#include <bit>

#include "bgl/collectives/registry.hpp"
#include "gen_util.hpp"
#include "topology_aware/topology_aware.hpp"

namespace bgl::collectives {

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

// Every block is one message tagged with its block index (zero-byte blocks too: the verifier,
// like MPI users, expects every rank to have heard from every rank), as in Open MPI's
// implementation. A send depends only on the receive that delivered its block, so steps overlap
// as far as the data allows; receives are posted at once.
Program sparbit_blocks(const Params& x, int rank) {
  Program prog(rank);
  const int p = x.p;
  auto block = [&](int b) { return recv_buf(x.displ(b), x.counts[static_cast<std::size_t>(b)]); };
  std::vector<StepId> ready(static_cast<std::size_t>(p), 0);  // step that made block b available
  ready[static_cast<std::size_t>(rank)] =
      prog.copy(block(rank), send_buf(0, x.counts[static_cast<std::size_t>(rank)]), {});
  int round = 1;
  for (const auto& step : sparbit::plan(p)) {
    prog.set_round(round++);
    const int to = (rank + step.distance) % p;
    const int from = ((rank - step.distance) % p + p) % p;
    for (int b : sparbit::sent_blocks(p, rank, step)) {
      prog.send(to, block(b), static_cast<Tag>(b), {ready[static_cast<std::size_t>(b)]});
    }
    for (int b : sparbit::received_blocks(p, rank, step)) {
      ready[static_cast<std::size_t>(b)] = prog.recv(from, block(b), static_cast<Tag>(b), {});
    }
  }
  return prog;
}

// The same blocks, but one message per step: the sender packs the step's blocks (stride 2d in
// the output) into scratch, the receiver unpacks them, so a step costs one message start-up like
// Bruck's (ceil_log2(p) messages per rank instead of p - 1).
Program sparbit_packed(const Params& x, int rank) {
  Program prog(rank);
  const int p = x.p;
  auto block = [&](int b) { return recv_buf(x.displ(b), x.counts[static_cast<std::size_t>(b)]); };
  auto count = [&](int b) { return x.counts[static_cast<std::size_t>(b)]; };
  std::vector<StepId> ready(static_cast<std::size_t>(p), 0);
  ready[static_cast<std::size_t>(rank)] = prog.copy(block(rank), send_buf(0, count(rank)), {});
  // Scratch: per step a send area and a receive area (never reused, so no step waits on another
  // step's buffer).
  std::uint64_t scratch = 0;
  int round = 1;
  for (const auto& step : sparbit::plan(p)) {
    prog.set_round(round);
    const int to = (rank + step.distance) % p;
    const int from = ((rank - step.distance) % p + p) % p;
    const auto out = sparbit::sent_blocks(p, rank, step);
    const auto in = sparbit::received_blocks(p, rank, step);
    const Tag tag = static_cast<Tag>(round++);
    if (out.size() == 1) {
      prog.send(to, block(out[0]), tag, {ready[static_cast<std::size_t>(out[0])]});
    } else {
      std::vector<StepId> packed;
      const std::uint64_t base = scratch;
      for (int b : out) {
        packed.push_back(prog.copy(scratch_buf(scratch, count(b)), block(b),
                                   {ready[static_cast<std::size_t>(b)]}));
        scratch += count(b);
      }
      prog.send(to, scratch_buf(base, scratch - base), tag, packed);
    }
    if (in.size() == 1) {
      ready[static_cast<std::size_t>(in[0])] = prog.recv(from, block(in[0]), tag, {});
    } else {
      std::uint64_t total = 0;
      for (int b : in)
        total += count(b);
      const std::uint64_t base = scratch;
      const StepId r = prog.recv(from, scratch_buf(base, total), tag, {});
      for (int b : in) {
        ready[static_cast<std::size_t>(b)] =
            prog.copy(block(b), scratch_buf(scratch, count(b)), {r});
        scratch += count(b);
      }
    }
  }
  prog.scratch_bytes = scratch;
  return prog;
}

}  // namespace

void register_sparbit(Registry& r) {
  r.add({"sparbit", Collective::allgather,
         "stripe parallel binomial trees: Bruck's cost with halving distances, one packed message "
         "per step (seed 001)",
         gen::always, sparbit_packed});
  r.add({"sparbit_blocks", Collective::allgather,
         "Sparbit with one message per block, as Open MPI (seed 001)", gen::always,
         sparbit_blocks});
}

}  // namespace bgl::collectives
