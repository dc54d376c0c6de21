// Streaming packets from one task to its nearest neighbour: packets/s and payload GB/s per packet
// size, side by side with the floor: a raw single-producer/single-consumer ring of the same slot
// size (Boost.Lockfree spsc_queue, compile-time capacity, placed in shared memory) between the same
// two processes. Compared runs are interleaved round by round.
//   bglrun -np 2 --shape 2x1x1 build/bin/pl_stream [--rounds R] [--packets N] [--size B] [--json]
// --size runs one packet size only (one of 32, 64, 128, 192, 256): for profiling.
// --self N: instead, rank 0 moves N packets of --size bytes (default 256) through its own local
// FIFO (inject, then next and receive) and N slots through a floor ring of its own: the CPU cost
// per packet without a second core, for instruction counts (tools/pl_instructions.sh runs it under
// callgrind, collecting only self_packets and self_floor).
#include <boost/lockfree/spsc_queue.hpp>
#include <memory>
#include <stdexcept>
#include <utility>

#include "bench_util.hpp"

namespace {

using namespace bgl;

constexpr std::size_t kSizes[] = {32, 64, 128, 192, 256};
constexpr std::size_t kRingSlots = 64;  // the same depth as a default reception FIFO

template <std::size_t Bytes>
using FloorRing = boost::lockfree::spsc_queue<std::array<std::byte, Bytes>,
                                              boost::lockfree::capacity<kRingSlots>>;

// Seconds to move n slots of Bytes through the raw ring (measured at the consumer).
template <std::size_t Bytes>
double floor_stream(packet_layer::Runtime& rt, std::byte* scratch, std::uint64_t n) {
  auto* ring = reinterpret_cast<FloorRing<Bytes>*>(scratch);
  if (rt.rank() == 0) new (ring) FloorRing<Bytes>();
  rt.barrier();
  std::array<std::byte, Bytes> slot{};
  const auto start = bench::Clock::now();
  if (rt.rank() == 0) {
    for (std::uint64_t i = 0; i < n; ++i) {
      slot[0] = static_cast<std::byte>(i);
      while (!ring->push(slot))
        job_runtime::Backoff::cpu_relax();
    }
  } else {
    for (std::uint64_t i = 0; i < n; ++i)
      while (!ring->pop(slot))
        job_runtime::Backoff::cpu_relax();
  }
  const double t = bench::seconds_since(start);
  rt.barrier();
  if (rt.rank() == 0) ring->~FloorRing<Bytes>();
  return t;
}

double packet_stream(packet_layer::Runtime& rt, std::size_t packet_bytes, std::uint64_t n) {
  auto& ep = rt.endpoint();
  std::byte buffer[packet_layer::kMaxPayloadBytes] = {};
  const std::span<const std::byte> payload(buffer, packet_bytes - packet_layer::kHeaderBytes);
  const packet_layer::PacketSpec spec{.dest = ep.destination_of(1)};
  rt.barrier();
  const auto start = bench::Clock::now();
  if (rt.rank() == 0) {
    for (std::uint64_t i = 0; i < n; ++i)
      while (ep.inject(0, spec, payload) != packet_layer::InjectStatus::ok)
        job_runtime::Backoff::cpu_relax();
    while (!ep.advance())
      job_runtime::Backoff::cpu_relax();
  } else {
    for (std::uint64_t i = 0; i < n;) {
      if (auto f = ep.poll()) {
        ep.receive(*f, buffer);
        ++i;
      }
    }
  }
  const double t = bench::seconds_since(start);
  rt.barrier();
  return t;
}

// One packet at a time into this task's own local FIFO and out again.
[[gnu::noinline]] void self_packets(packet_layer::Endpoint& ep, std::size_t packet_bytes,
                                    std::uint64_t n) {
  std::byte buffer[packet_layer::kMaxPayloadBytes] = {};
  const std::span<const std::byte> payload(buffer, packet_bytes - packet_layer::kHeaderBytes);
  const packet_layer::PacketSpec spec{.dest = ep.destination_of(ep.rank())};
  packet_layer::FifoRef f;
  for (std::uint64_t i = 0; i < n; ++i) {
    if (ep.inject(0, spec, payload) != packet_layer::InjectStatus::ok)
      throw std::runtime_error("pl_stream --self: injection FIFO full");
    const packet_layer::Packet* p = ep.next(f);
    if (p == nullptr) throw std::runtime_error("pl_stream --self: the packet did not arrive");
    ep.receive(f, buffer);
  }
}

template <std::size_t Bytes>
[[gnu::noinline]] void self_floor(FloorRing<Bytes>& ring, std::uint64_t n) {
  std::array<std::byte, Bytes> slot{};
  for (std::uint64_t i = 0; i < n; ++i) {
    slot[0] = static_cast<std::byte>(i);
    if (!ring.push(slot) || !ring.pop(slot)) throw std::runtime_error("pl_stream --self: floor");
  }
}

template <std::size_t... I>
double floor_by_index(packet_layer::Runtime& rt, std::byte* scratch, std::size_t index,
                      std::uint64_t n, std::index_sequence<I...>) {
  double t = 0;
  ((index == I ? (t = floor_stream<kSizes[I]>(rt, scratch, n), 0) : 0), ...);
  return t;
}

int run(int argc, char** argv) {
  const auto args = bench::Args::parse(argc, argv, 5);
  std::uint64_t n = 1'000'000;
  for (std::size_t i = 0; i + 1 < args.rest.size(); ++i)
    if (args.rest[i] == "--packets")
      n = static_cast<std::uint64_t>(
          job_runtime::env::parse_int(args.rest[i + 1], "--packets", 1, 1LL << 40));
  const auto only = static_cast<std::size_t>(args.number("--size", 0, 0, 256));
  if (only != 0 && std::find(std::begin(kSizes), std::end(kSizes), only) == std::end(kSizes))
    throw ConfigError("pl_stream --size " + std::to_string(only) +
                      ": not one of the sizes measured (32, 64, 128, 192, 256)");
  auto rt = packet_layer::Runtime::from_environment();
  if (rt.size() != 2) throw ConfigError("pl_stream needs exactly 2 tasks (bglrun -np 2)");
  bench::ScratchMemory scratch(rt, sizeof(FloorRing<256>) + 4096);

  if (const auto self = static_cast<std::uint64_t>(args.number("--self", 0, 0, 1LL << 40))) {
    if (rt.rank() == 0) {
      auto ring = std::make_unique<FloorRing<256>>();
      const std::size_t bytes = only != 0 ? only : 256;
      bench::Samples floor_ns, packet_ns;  // interleaved, per round
      for (int round = 0; round < args.rounds; ++round) {
        auto start = bench::Clock::now();
        self_floor(*ring, self);
        floor_ns.add(bench::seconds_since(start) * 1e9 / static_cast<double>(self));
        start = bench::Clock::now();
        self_packets(rt.endpoint(), bytes, self);
        packet_ns.add(bench::seconds_since(start) * 1e9 / static_cast<double>(self));
      }
      std::printf(
          "pl_stream --self: %llu packets of %zu bytes through one core, %d rounds: packet layer "
          "%.1f ns (min) %.1f (median), floor %.1f (min) %.1f (median) per packet\n",
          static_cast<unsigned long long>(self), bytes, args.rounds, packet_ns.min(),
          packet_ns.median(), floor_ns.min(), floor_ns.median());
    }
    rt.barrier();
    return 0;
  }
  std::vector<bench::Samples> packet(std::size(kSizes)), floor(std::size(kSizes));
  packet_stream(rt, 64, n / 10);  // warm up
  for (int round = 0; round < args.rounds; ++round) {
    for (std::size_t s = 0; s < std::size(kSizes); ++s) {
      if (only != 0 && kSizes[s] != only) continue;
      floor[s].add(
          floor_by_index(rt, scratch.data(), s, n, std::make_index_sequence<std::size(kSizes)>()));
      packet[s].add(packet_stream(rt, kSizes[s], n));
    }
  }
  if (rt.rank() == 1) {
    bench::Table t("streaming " + std::to_string(n) + " packets to a nearest neighbour (" +
                       std::to_string(args.rounds) +
                       " rounds; Mpkt/s from the best and the median "
                       "round; GB/s of payload)",
                   {"packet_bytes", "packet_Mpps_best", "packet_Mpps_median", "packet_GBps_median",
                    "floor_Mpps_best", "floor_Mpps_median", "floor_GBps_median", "ratio_median"});
    for (std::size_t s = 0; s < std::size(kSizes); ++s) {
      if (only != 0 && kSizes[s] != only) continue;
      const double payload = static_cast<double>(kSizes[s] - packet_layer::kHeaderBytes);
      const double pm = n / packet[s].median() / 1e6, fm = n / floor[s].median() / 1e6;
      t.row({kSizes[s], n / packet[s].min() / 1e6, pm, pm * payload / 1e3, n / floor[s].min() / 1e6,
             fm, fm * kSizes[s] / 1e3, pm / fm});
    }
    if (args.json)
      std::printf("%s\n", t.to_json().dump(1).c_str());
    else
      t.print();
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  return bgl::bench::run_main("pl_stream", run, argc, argv);
}
