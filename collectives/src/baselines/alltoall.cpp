// Alltoall(v) baselines: pairwise exchange, post-all (MPICH's isend/irecv + waitall) and Bruck.
#include "baselines/baselines.hpp"
#include "gen_util.hpp"

#include <algorithm>
#include <array>
#include <optional>
#include <utility>
#include <vector>

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
  // Slots [i, i + n): the blocks for r + i onwards, contiguous in scratch.
  auto slots = [&](int i, int n) {
    return scratch_buf(tmp + static_cast<std::uint64_t>(i) * b, static_cast<std::uint64_t>(n) * b);
  };
  // Uniform blocks lie back to back, so runs of blocks move as one copy, and every step depends
  // only on the steps that touched its own slots: the program grows as p log p, not p^2.
  std::vector<StepId> writer(static_cast<std::size_t>(p));  // the last step that wrote each slot
  auto writers_of = [&](int i, int n) {
    std::vector<StepId> w(writer.begin() + i, writer.begin() + i + n);
    std::sort(w.begin(), w.end());
    w.erase(std::unique(w.begin(), w.end()), w.end());
    return w;
  };
  auto rotate_in = [&](int i, int n, int block) {  // slots [i, i + n) <- blocks block.. of send
    const Region src = out_block(x, r, block);
    const StepId c =
        prog.copy(slots(i, n), send_buf(src.offset, static_cast<std::uint64_t>(n) * b));
    std::fill(writer.begin() + i, writer.begin() + i + n, c);
  };
  rotate_in(0, p - r, r);
  if (r > 0) rotate_in(p - r, r, 0);
  std::vector<StepId> unpacked;  // the last exchange's unpack copies: the unpack area is free after
  std::optional<StepId> sent;    // the last exchange's send: the pack area is free after it
  int step = 0;
  for (int k = 1; k < p; k <<= 1, ++step) {
    prog.set_round(step);
    // The slots with bit k set come in runs of k: [k, 2k), [3k, 4k), ...
    std::vector<std::pair<int, int>> runs;
    for (int i = k; i < p; i += 2 * k)
      runs.emplace_back(i, std::min(k, p - i));
    std::vector<StepId> packed;
    std::uint64_t n = 0;
    for (const auto& [i, len] : runs) {
      std::vector<StepId> deps = writers_of(i, len);
      if (sent) deps.push_back(*sent);
      packed.push_back(prog.copy(scratch_buf(pack + n, static_cast<std::uint64_t>(len) * b),
                                 slots(i, len), deps));
      n += static_cast<std::uint64_t>(len) * b;
    }
    sent = prog.send((r + k) % p, scratch_buf(pack, n), static_cast<Tag>(step), packed);
    const StepId got =
        prog.recv((r - k + p) % p, scratch_buf(unpack, n), static_cast<Tag>(step), unpacked);
    unpacked.clear();
    n = 0;
    for (std::size_t j = 0; j < runs.size(); ++j) {
      const auto [i, len] = runs[j];
      // A slot is overwritten only after it was packed.
      const std::array<StepId, 2> deps{got, packed[j]};
      const StepId c = prog.copy(
          slots(i, len), scratch_buf(unpack + n, static_cast<std::uint64_t>(len) * b), deps);
      std::fill(writer.begin() + i, writer.begin() + i + len, c);
      unpacked.push_back(c);
      n += static_cast<std::uint64_t>(len) * b;
    }
  }
  for (int i = 0; i < p; ++i) {  // slot i now holds the block from r - i
    const std::array<StepId, 1> deps{writer[static_cast<std::size_t>(i)]};
    prog.copy(in_block(x, (r - i + p) % p, r), slots(i, 1), deps);
  }
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
