// Task program for the packet layer's multi-process tests. Usage under bglrun:
//   packet_scenarios order N       every task sends N checked packets to every other task
//                                  (deterministic): per-source order and contents are verified
//   packet_scenarios adaptive N    rank 0 sends N adaptive packets to the last rank (two productive
//                                  dimensions); the receiver must see every packet once and some
//                                  out of order; then N deterministic packets must arrive in order
//   packet_scenarios deposit N     rank 0 sends N deposit-bit packets along lines; every node on a
//                                  line gets each exactly once, nobody else gets anything
//   ... adaptive|deposit N settled the receivers start only once all their packets wait in their
//                                  FIFOs (--fifo-packets must hold them), so that they read them in
//                                  virtual-time order whatever the host's speed: the prediction
//                                  is then the same on one host and on several
//   packet_scenarios flood N       every rank > 0 sends N packets to rank 0 (one reception FIFO)
//   packet_scenarios alltoall N    every task sends N adaptive packets to every other task
//   packet_scenarios hang          print the pid, then wait for packets that never come
//   packet_scenarios fail R CODE   rank R exits with CODE, the others hang
//   packet_scenarios leave R       rank R exits with code 0 without shutting down its runtime, the
//                                  others wait for it (as std::exit with a live Runtime does)
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "bgl/packet_layer/runtime.hpp"
#include "bgl/torus_emu/error.hpp"
#include "rank_check.hpp"

namespace {

using namespace bgl;
using packet_layer::Endpoint;
using packet_layer::FifoRef;
using packet_layer::PacketSpec;

// Payload of packet `seq` from `source`: a size that varies with seq and bytes derived from both.
std::size_t payload_size(std::uint32_t seq) {
  return (seq * 37u) % (packet_layer::kMaxPayloadBytes + 1);
}
std::byte pattern(std::uint32_t source, std::uint32_t seq, std::size_t i) {
  return static_cast<std::byte>((source * 131u + seq * 7u + i) & 0xff);
}
std::vector<std::byte> make_payload(std::uint32_t source, std::uint32_t seq) {
  std::vector<std::byte> p(payload_size(seq));
  for (std::size_t i = 0; i < p.size(); ++i)
    p[i] = pattern(source, seq, i);
  return p;
}
bool payload_ok(std::span<const std::byte> p, std::uint32_t source, std::uint32_t seq) {
  if (p.size() != payload_size(seq)) return false;
  for (std::size_t i = 0; i < p.size(); ++i)
    if (p[i] != pattern(source, seq, i)) return false;
  return true;
}

struct Receiver {
  Endpoint& ep;
  int me;
  std::vector<std::uint32_t> next;  // per source: next expected sequence number
  std::uint64_t received = 0;
  std::byte buffer[packet_layer::kMaxPayloadBytes];

  void on_packet(FifoRef f) {
    const auto& h = ep.peek(f);
    const std::uint32_t src = h.source_rank();
    BGL_CHECK(src < next.size(), me);
    BGL_CHECK(h.word == next[src], me);  // deterministic routing keeps each pair's order
    const std::size_t n = h.payload_bytes;
    ep.receive(f, buffer);
    BGL_CHECK(payload_ok({buffer, n}, src, next[src]), me);
    ++next[src];
    ++received;
  }
  void drain() {
    while (auto f = ep.poll())
      on_packet(*f);
  }
};

int order(packet_layer::Runtime& rt, std::uint32_t n) {
  auto& ep = rt.endpoint();
  const int me = static_cast<int>(rt.rank()), size = rt.size();
  Receiver rx{ep, me, std::vector<std::uint32_t>(static_cast<std::size_t>(size), 0)};
  const auto on_packet = [&](FifoRef f) { rx.on_packet(f); };
  for (std::uint32_t seq = 0; seq < n; ++seq) {
    for (int k = 1; k < size; ++k) {
      const auto dest = static_cast<torus_emu::Rank>((me + k) % size);
      PacketSpec spec{.dest = ep.destination_of(dest), .dispatch = 1, .word = seq};
      const auto payload = make_payload(static_cast<std::uint32_t>(me), seq);
      test::inject_draining(ep, static_cast<int>(dest % packet_layer::kInjectionFifos), spec,
                            payload, on_packet);
    }
    rx.drain();
  }
  const std::uint64_t expected = std::uint64_t{n} * static_cast<std::uint64_t>(size - 1);
  while (rx.received < expected) {
    rx.drain();
    if (rx.received < expected) ep.wait();
  }
  while (!ep.advance())
    ep.wait();
  rt.barrier();
  BGL_CHECK(!ep.poll(), me);  // nothing extra
  for (int s = 0; s < size; ++s)
    BGL_CHECK(rx.next[static_cast<std::size_t>(s)] == (s == me ? 0 : n), me);
  return 0;
}

// Waits (at most 10 s) until packets wait in at least `fifos` of this task's reception FIFOs and
// `packets` in all of them; returns whether they do. A fixed sleep was not always long enough (a
// loaded machine, packets through the libfabric agents).
bool await_waiting(packet_layer::Runtime& rt, int fifos, std::uint64_t packets) {
  const auto at = rt.machine().mapping().location(rt.rank());
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  for (;;) {
    int nonempty = 0;
    std::uint64_t waiting = 0;
    for (int i = 0; i < packet_layer::kReceptionFifos; ++i) {
      const auto& c = rt.machine().fifo(at.node, at.t, i).control();
      const auto n =
          c.tail.load(std::memory_order_acquire) - c.head.load(std::memory_order_acquire);
      nonempty += n > 0;
      waiting += n;
    }
    if (nonempty >= fifos && waiting >= packets) return true;
    if (std::chrono::steady_clock::now() >= deadline) return false;
    usleep(1'000);
  }
}

int adaptive(packet_layer::Runtime& rt, std::uint32_t n, bool settled) {
  auto& ep = rt.endpoint();
  const int me = static_cast<int>(rt.rank());
  const auto last = static_cast<torus_emu::Rank>(rt.size() - 1);
  if (me == 0) {
    for (const auto routing :
         {packet_layer::Routing::adaptive, packet_layer::Routing::deterministic}) {
      for (std::uint32_t seq = 0; seq < n; ++seq) {
        PacketSpec spec{.dest = ep.destination_of(last), .word = seq, .routing = routing};
        const auto payload = make_payload(0, seq);
        while (ep.inject(0, spec, payload) == packet_layer::InjectStatus::full)
          ep.wait();
      }
      while (!ep.advance())
        ep.wait();
      rt.barrier();
    }
  } else if (static_cast<torus_emu::Rank>(me) == last) {
    for (const bool expect_reordering : {true, false}) {
      // Let the FIFOs fill so that the reception order interleaves the paths.
      if (expect_reordering) {
        const bool all_waiting = await_waiting(rt, 2, settled ? n : 0);
        BGL_CHECK(all_waiting || !settled, me);
      } else {
        usleep(20'000);
      }
      std::vector<bool> seen(n, false);
      std::uint32_t got = 0, inversions = 0, highest = 0;
      std::uint32_t fifo_mask = 0;
      std::byte buffer[packet_layer::kMaxPayloadBytes];
      while (got < n) {
        auto f = ep.poll();
        if (!f) {
          ep.wait();
          continue;
        }
        const auto h = ep.peek(*f);
        fifo_mask |= 1u << f->index;
        ep.receive(*f, buffer);
        BGL_CHECK(h.word < n && !seen[h.word], me);
        BGL_CHECK(payload_ok({buffer, h.payload_bytes}, 0, h.word), me);
        seen[h.word] = true;
        if (got > 0 && h.word < highest) ++inversions;
        highest = std::max(highest, h.word);
        ++got;
      }
      std::printf("rank %d: %s: %u packets, %u out of order, reception FIFOs 0x%x\n", me,
                  expect_reordering ? "adaptive" : "deterministic", got, inversions, fifo_mask);
      if (expect_reordering) {
        BGL_CHECK(inversions > 0, me);
        BGL_CHECK(__builtin_popcount(fifo_mask) >= 2, me);
      } else {
        BGL_CHECK(inversions == 0, me);
        BGL_CHECK(__builtin_popcount(fifo_mask) == 1, me);
      }
      rt.barrier();
    }
  } else {
    rt.barrier();
    rt.barrier();
  }
  return 0;
}

// Lines from rank 0's node: along +x to the far end of its row, and along -x for half the row.
struct LinePlan {
  torus_emu::NodeId dest;
  torus_emu::Direction dir;
};

std::vector<LinePlan> lines(const torus_emu::Shape& shape, torus_emu::NodeId root) {
  std::vector<LinePlan> plans;
  const auto c = shape.coord(root);
  const int X = shape.extent(torus_emu::Dim::x);
  if (X < 2) return plans;
  plans.push_back({shape.node_id({X - 1, c.y, c.z}), torus_emu::Direction::x_plus});
  if (shape.is_torus(torus_emu::Dim::x) && X >= 3)
    plans.push_back({shape.node_id({X / 2, c.y, c.z}), torus_emu::Direction::x_minus});
  return plans;
}

int deposit(packet_layer::Runtime& rt, std::uint32_t n, bool settled) {
  auto& ep = rt.endpoint();
  const auto& shape = rt.machine().shape();
  const int me = static_cast<int>(rt.rank());
  const torus_emu::NodeId root = rt.machine().mapping().location(0).node;
  const auto plans = lines(shape, root);
  // How many copies this task's node must see: one per packet of every line that passes it.
  std::uint64_t expected = 0;
  for (const auto& p : plans) {
    const auto line = torus_emu::make_line(shape, root, p.dest, p.dir).line;
    BGL_CHECK(line.has_value(), me);
    torus_emu::NodeId at = root;
    for (int i = 0; i < line->length; ++i) {
      at = *shape.neighbour(at, p.dir);
      if (at == ep.node() && ep.group() == 0) expected += n;
    }
  }
  std::uint64_t got = 0;
  std::byte buffer[packet_layer::kMaxPayloadBytes];
  const auto receive = [&](FifoRef f) {
    const auto h = ep.peek(*&f);
    BGL_CHECK(h.deposit(), me);
    ep.receive(f, buffer);
    BGL_CHECK(payload_ok({buffer, h.payload_bytes}, 0, h.word), me);
    ++got;
  };
  if (me == 0) {
    for (std::uint32_t seq = 0; seq < n; ++seq) {
      for (const auto& p : plans) {
        PacketSpec spec{.dest = {p.dest, 0}, .word = seq, .deposit_line = p.dir};
        test::inject_draining(ep, 0, spec, make_payload(0, seq), receive);
      }
    }
    while (!ep.advance())
      ep.wait();
  }
  if (settled) BGL_CHECK(await_waiting(rt, 0, expected), me);
  while (got < expected) {
    if (auto f = ep.poll())
      receive(*f);
    else
      ep.wait();
  }
  rt.barrier();
  BGL_CHECK(!ep.poll(), me);
  BGL_CHECK(got == expected, me);
  std::printf("rank %d: %llu deposit-bit copies\n", me, static_cast<unsigned long long>(got));
  return 0;
}

int flood(packet_layer::Runtime& rt, std::uint32_t n) {
  auto& ep = rt.endpoint();
  const int me = static_cast<int>(rt.rank()), size = rt.size();
  if (me == 0) {
    Receiver rx{ep, me, std::vector<std::uint32_t>(static_cast<std::size_t>(size), 0)};
    std::uint32_t fifo_mask = 0;
    const std::uint64_t expected = std::uint64_t{n} * static_cast<std::uint64_t>(size - 1);
    while (rx.received < expected) {
      auto f = ep.poll();
      if (!f) {
        ep.wait();
        continue;
      }
      fifo_mask |= 1u << f->index;
      rx.on_packet(*f);
    }
    rt.barrier();
    BGL_CHECK(!ep.poll(), me);
    std::printf("rank 0: %llu packets from %d producers, reception FIFOs 0x%x\n",
                static_cast<unsigned long long>(rx.received), size - 1, fifo_mask);
  } else {
    for (std::uint32_t seq = 0; seq < n; ++seq) {
      PacketSpec spec{.dest = ep.destination_of(0), .dispatch = 2, .word = seq};
      const auto payload = make_payload(static_cast<std::uint32_t>(me), seq);
      while (ep.inject(0, spec, payload) == packet_layer::InjectStatus::full)
        ep.wait();
    }
    while (!ep.advance())
      ep.wait();
    rt.barrier();
  }
  return 0;
}

int alltoall(packet_layer::Runtime& rt, std::uint32_t n) {
  auto& ep = rt.endpoint();
  const int me = static_cast<int>(rt.rank()), size = rt.size();
  std::vector<std::uint32_t> count(static_cast<std::size_t>(size), 0);
  std::uint64_t got = 0;
  const std::uint64_t expected = std::uint64_t{n} * static_cast<std::uint64_t>(size - 1);
  std::byte buffer[packet_layer::kMaxPayloadBytes];
  const auto receive = [&](FifoRef f) {
    const auto h = ep.peek(f);
    ep.receive(f, buffer);
    BGL_CHECK(payload_ok({buffer, h.payload_bytes}, h.source_rank(), h.word), me);
    ++count[h.source_rank()];
    ++got;
  };
  for (std::uint32_t seq = 0; seq < n; ++seq) {
    for (int k = 1; k < size; ++k) {
      const auto dest = static_cast<torus_emu::Rank>((me + k) % size);
      PacketSpec spec{
          .dest = ep.destination_of(dest), .word = seq, .routing = packet_layer::Routing::adaptive};
      test::inject_draining(ep, k % packet_layer::kInjectionFifos, spec,
                            make_payload(static_cast<std::uint32_t>(me), seq), receive);
    }
  }
  while (got < expected || !ep.advance()) {
    if (auto f = ep.poll())
      receive(*f);
    else
      ep.wait();
  }
  rt.barrier();
  for (int s = 0; s < size; ++s)
    BGL_CHECK(count[static_cast<std::size_t>(s)] == (s == me ? 0 : n), me);
  if (me == 0) std::printf("alltoall: %d tasks x %u packets to each peer: ok\n", size, n);
  return 0;
}

// Runs for ever outside the runtime's waits (a task busy elsewhere, not a deadlock: the launcher
// must not stop it as one).
[[noreturn]] void hang(packet_layer::Runtime& rt) {
  std::printf("pid %u %d\n", rt.rank(), static_cast<int>(getpid()));
  std::fflush(stdout);
  for (;;)
    pause();
}

// A deadlock on purpose: rank `waiter` waits for a packet nobody sends, the others wait in the
// job barrier for it; `busy` (when given) first computes for that many seconds, so that every
// other task sleeps that long before the job is really stuck.
[[noreturn]] void deadlock(packet_layer::Runtime& rt, std::uint32_t waiter, std::uint32_t busy) {
  std::printf("pid %u %d\n", rt.rank(), static_cast<int>(getpid()));
  std::fflush(stdout);
  if (rt.rank() == waiter) {
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(busy);
    for (volatile std::uint64_t spin = 0; std::chrono::steady_clock::now() < until;)
      spin = spin + 1;
    for (;;)
      if (rt.endpoint().poll())
        std::_Exit(3);  // nobody sends: a packet here is a bug of the test
      else
        rt.endpoint().wait();
  }
  rt.barrier();
  std::_Exit(4);  // the barrier needs the waiter: it cannot pass
}

int run(int argc, char** argv) {
  if (argc < 2)
    throw ConfigError(
        "usage: packet_scenarios order|adaptive|deposit|flood|alltoall|hang|deadlock|fail|leave "
        "...");
  auto rt = packet_layer::Runtime::from_environment();
  const std::string_view what = argv[1];
  const auto arg = [&](int i, std::uint32_t fallback) {
    return argc > i ? static_cast<std::uint32_t>(std::stoul(argv[i])) : fallback;
  };
  if (what == "order") return order(rt, arg(2, 1000));
  const bool settled = argc > 3 && std::string_view(argv[3]) == "settled";
  if (what == "adaptive") return adaptive(rt, arg(2, 20000), settled);
  if (what == "deposit") return deposit(rt, arg(2, 1000), settled);
  if (what == "flood") return flood(rt, arg(2, 10000));
  if (what == "alltoall") return alltoall(rt, arg(2, 20));
  if (what == "hang") hang(rt);
  if (what == "deadlock") deadlock(rt, arg(2, 0), arg(3, 0));
  if (what == "fail") {
    if (rt.rank() == arg(2, 0)) return static_cast<int>(arg(3, 3));
    hang(rt);
  }
  if (what == "leave") {
    if (rt.rank() == arg(2, 0)) std::_Exit(0);
    hang(rt);
  }
  throw ConfigError("unknown scenario '" + std::string(what) + "'");
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "packet_scenarios: %s\n", e.what());
    return 2;
  }
}
