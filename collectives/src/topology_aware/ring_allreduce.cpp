// Patarasuk and Yuan's bandwidth-optimal allreduce, a reduce-scatter followed by an
// allgather, both along a contention-free logical ring (logical_ring.hpp). Each rank sends
// 2(N-1) segments of ceil(X/N) elements: the lower bound when N divides X.
#include "bgl/collectives/registry.hpp"
#include "bgl/collectives/topology_aware/logical_ring.hpp"
#include "gen_util.hpp"
#include "topology_aware/topology_aware.hpp"

namespace bgl::collectives {

namespace {

Program ring_allreduce(const Params& x, int rank) {
  Program prog(rank);
  const int n = x.p;
  const std::uint64_t esize = size_of(x.dtype);
  const std::uint64_t items = x.bytes() / esize;
  if (n == 1) {
    prog.copy(recv_buf(0, x.bytes()), send_buf(0, x.bytes()), {});
    return prog;
  }
  // SEG_k = items [k*c, min((k+1)*c, X)), c = ceil(X/N); trailing segments may be empty.
  const std::uint64_t c =
      (items + static_cast<std::uint64_t>(n) - 1) / static_cast<std::uint64_t>(n);
  auto seg = [&](Buffer b, int k) {
    const std::uint64_t lo = std::min(items, static_cast<std::uint64_t>(k) * c);
    const std::uint64_t hi = std::min(items, static_cast<std::uint64_t>(k + 1) * c);
    return Region{b, lo * esize, (hi - lo) * esize};
  };
  const auto ring = ring::torus_ring(x);
  int i = 0;
  while (ring[static_cast<std::size_t>(i)] != rank)
    ++i;
  const int succ = ring[static_cast<std::size_t>((i + 1) % n)];
  const int pred = ring[static_cast<std::size_t>((i - 1 + n) % n)];
  auto mod = [n](int v) { return ((v % n) + n) % n; };
  std::vector<StepId> prev;
  Tag tag = 1;
  // Reduce-scatter: after N-1 iterations position i holds SEG_i fully reduced. Each segment is
  // received once, into the output buffer, and combined there with this rank's input.
  for (int j = 1; j < n; ++j, ++tag) {
    prog.set_round(j);
    const int out = mod(i - j);
    const int in = mod(i - j - 1);
    const StepId s = prog.send(succ, seg(j == 1 ? Buffer::send : Buffer::recv, out), tag, prev);
    const StepId r = prog.recv(pred, seg(Buffer::recv, in), tag, prev);
    const StepId red = prog.reduce(seg(Buffer::recv, in), seg(Buffer::send, in), {r});
    prev = {s, red};
  }
  // Allgather of the reduced segments.
  for (int j = 1; j < n; ++j, ++tag) {
    prog.set_round(n - 1 + j);
    const StepId s = prog.send(succ, seg(Buffer::recv, mod(i - j + 1)), tag, prev);
    const StepId r = prog.recv(pred, seg(Buffer::recv, mod(i - j)), tag, prev);
    prev = {s, r};
  }
  return prog;
}

}  // namespace

void register_ring_allreduce(Registry& r) {
  r.add({"py_ring", Collective::allreduce,
         "bandwidth-optimal reduce-scatter + allgather on a contention-free (snake) torus ring "
         "(seed 002)",
         gen::always, ring_allreduce});
}

}  // namespace bgl::collectives
