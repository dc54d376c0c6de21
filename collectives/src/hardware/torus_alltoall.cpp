// BG/L's optimized alltoall at message-layer level: everything posted at once, but the
// injection order is controlled: each block is cut into packet-sized segments and the segments are
// posted round robin over the destinations in a per-sender rotated order (rank + k) mod p, so that
// every sender spreads its traffic over all destinations (and so over the links) at any moment
// and reads each send buffer sequentially.
#include "gen_util.hpp"
#include "hardware/hardware.hpp"

namespace bgl::collectives {
namespace {

std::uint64_t segment_size(const Params& x) {
  if (x.segment) return x.segment;
  // 68 packets (16,320 B): the largest segment that the message layer still sends eagerly (its
  // default eager limit is 16 KiB), so a segment costs one message and no rendezvous handshake.
  // Smaller segments interleave more finely but cost a message each: at 64 ranks on 2 cores,
  // 4-packet segments made 32 KiB blocks 2.4x slower than posting whole blocks, 68-packet ones
  // were on par (docs/PERFORMANCE.md, "Collectives").
  return 68 * 240;
}

Program controlled(const Params& x, int r) {
  Program prog(r);
  const int p = x.p;
  const std::uint64_t seg = segment_size(x);
  auto nseg = [&](std::uint64_t bytes) { return bytes ? (bytes + seg - 1) / seg : 1; };
  std::uint64_t rounds = 1;
  for (int k = 1; k < p; ++k) {
    rounds = std::max(rounds, nseg(x.a2a_count(r, (r + k) % p)));
    rounds = std::max(rounds, nseg(x.a2a_count((r - k + p) % p, r)));
  }
  // Receives first (so that data find their buffer), in the order the senders inject.
  for (std::uint64_t q = 0; q < rounds; ++q)
    for (int k = 1; k < p; ++k) {
      const int from = (r - k + p) % p;
      const std::uint64_t c = x.a2a_count(from, r);
      if (q >= nseg(c)) continue;
      const std::uint64_t a = q * seg, b = std::min(c, a + seg);
      prog.recv(from, recv_buf(x.a2a_recv_displ(from, r) + a, b - a), static_cast<Tag>(q));
    }
  for (std::uint64_t q = 0; q < rounds; ++q) {
    prog.set_round(static_cast<int>(q));
    for (int k = 1; k < p; ++k) {
      const int to = (r + k) % p;
      const std::uint64_t c = x.a2a_count(r, to);
      if (q >= nseg(c)) continue;
      const std::uint64_t a = q * seg, b = std::min(c, a + seg);
      prog.send(to, send_buf(x.a2a_send_displ(r, to) + a, b - a), static_cast<Tag>(q));
    }
  }
  prog.copy(recv_buf(x.a2a_recv_displ(r, r), x.a2a_count(r, r)),
            send_buf(x.a2a_send_displ(r, r), x.a2a_count(r, r)));
  return prog;
}

}  // namespace

void register_torus_alltoall(Registry& r) {
  r.add({"controlled", Collective::alltoall,
         "segments posted round robin over rotated destinations (seed 004 injection order)",
         gen::always, controlled});
}

}  // namespace bgl::collectives
