// Packet half round trip between two tasks, per packet size, side by side with the floor: a raw
// cache-line ping-pong through shared memory between the same two processes. The two are
// interleaved round by round so that drift in core-to-core latency hits both alike.
//   bglrun -np 2 --shape 2x1x1 build/bin/pl_pingpong [--rounds R] [--iterations N] [--json]
#include <atomic>
#include <cstring>

#include "bench_util.hpp"

namespace {

using namespace bgl;

struct alignas(64) Line {
  std::atomic<std::uint64_t> value{0};
};

// Rank 0 writes ping, rank 1 answers on pong; each waits for the other's value.
double floor_half_rtt(Line* lines, int rank, int iterations, std::uint64_t& seq) {
  Line& ping = lines[0];
  Line& pong = lines[1];
  const auto start = bench::Clock::now();
  for (int i = 0; i < iterations; ++i) {
    ++seq;
    if (rank == 0) {
      ping.value.store(seq, std::memory_order_release);
      while (pong.value.load(std::memory_order_acquire) != seq)
        job_runtime::Backoff::cpu_relax();
    } else {
      while (ping.value.load(std::memory_order_acquire) != seq)
        job_runtime::Backoff::cpu_relax();
      pong.value.store(seq, std::memory_order_release);
    }
  }
  return bench::seconds_since(start) / iterations / 2;
}

double packet_half_rtt(packet_layer::Endpoint& ep, int rank, std::size_t payload, int iterations) {
  std::byte buffer[packet_layer::kMaxPayloadBytes] = {};
  const packet_layer::PacketSpec spec{
      .dest = ep.destination_of(static_cast<torus_emu::Rank>(1 - rank))};
  const std::span<const std::byte> data(buffer, payload);
  const auto bounce = [&] {
    for (;;) {
      if (auto f = ep.poll()) {
        ep.receive(*f, buffer);
        return;
      }
    }
  };
  const auto start = bench::Clock::now();
  for (int i = 0; i < iterations; ++i) {
    if (rank == 0) {
      while (ep.inject(0, spec, data) != packet_layer::InjectStatus::ok) {
      }
      bounce();
    } else {
      bounce();
      while (ep.inject(0, spec, data) != packet_layer::InjectStatus::ok) {
      }
    }
  }
  return bench::seconds_since(start) / iterations / 2;
}

int run(int argc, char** argv) {
  const auto args = bench::Args::parse(argc, argv, 9);
  int iterations = 20000;
  for (std::size_t i = 0; i + 1 < args.rest.size(); ++i)
    if (args.rest[i] == "--iterations")
      iterations = static_cast<int>(
          job_runtime::env::parse_int(args.rest[i + 1], "--iterations", 1, 1 << 30));
  auto rt = packet_layer::Runtime::from_environment();
  if (rt.size() != 2) throw ConfigError("pl_pingpong needs exactly 2 tasks (bglrun -np 2)");
  const int rank = static_cast<int>(rt.rank());
  bench::ScratchMemory scratch(rt, 4096);
  auto* lines = new (scratch.data()) Line[2];
  std::uint64_t seq = 0;

  constexpr std::size_t kSizes[] = {32, 64, 96, 128, 160, 192, 224, 256};
  std::vector<bench::Samples> packet(std::size(kSizes)), floor(std::size(kSizes));
  packet_half_rtt(rt.endpoint(), rank, 16, iterations / 10);  // warm up
  for (int round = 0; round < args.rounds; ++round) {
    for (std::size_t s = 0; s < std::size(kSizes); ++s) {
      rt.barrier();
      floor[s].add(floor_half_rtt(lines, rank, iterations, seq));
      rt.barrier();
      packet[s].add(
          packet_half_rtt(rt.endpoint(), rank, kSizes[s] - packet_layer::kHeaderBytes, iterations));
    }
  }
  if (rank == 0) {
    const auto& shape = rt.machine().shape();
    bench::Table t("packet half round trip, nearest neighbours on " + shape.to_string() + " (" +
                       std::to_string(args.rounds) + " rounds x " + std::to_string(iterations) +
                       " iterations; ns)",
                   {"packet_bytes", "payload_bytes", "packet_min_ns", "packet_median_ns",
                    "floor_min_ns", "floor_median_ns", "ratio_median"});
    for (std::size_t s = 0; s < std::size(kSizes); ++s) {
      const double ratio = packet[s].median() / floor[s].median();
      t.row({kSizes[s], kSizes[s] - packet_layer::kHeaderBytes, packet[s].min() * 1e9,
             packet[s].median() * 1e9, floor[s].min() * 1e9, floor[s].median() * 1e9, ratio});
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
  return bgl::bench::run_main("pl_pingpong", run, argc, argv);
}
