// Packet latency (half round trip) and streaming bandwidth between rank 0 and rank 1 over whatever
// transport the job uses: shared memory, the libfabric agent on one host (BGL_TRANSPORT=ofi), or
// two hosts (bglrun --hosts 2). One run is one sample; bench/transport_compare.sh interleaves runs
// of every transport with libfabric's own fi_pingpong and reports min and median.
//   bglrun -np 2 --shape 2x1x1 [--hosts 2] build/bin/pl_transport [--iterations N] [--stream N]
//          [--json]
#include <cstring>

#include "bench_util.hpp"

namespace {

using namespace bgl;

void bounce(packet_layer::Endpoint& ep, std::span<std::byte> buffer) {
  for (;;) {
    if (auto f = ep.poll()) {
      ep.receive(*f, buffer);
      return;
    }
    ep.wait();
  }
}

void send(packet_layer::Endpoint& ep, const packet_layer::PacketSpec& spec,
          std::span<const std::byte> data) {
  while (ep.inject(0, spec, data) != packet_layer::InjectStatus::ok)
    ep.wait();
}

double half_rtt(packet_layer::Endpoint& ep, int rank, std::size_t payload, int iterations) {
  std::byte buffer[packet_layer::kMaxPayloadBytes] = {};
  const packet_layer::PacketSpec spec{
      .dest = ep.destination_of(static_cast<torus_emu::Rank>(1 - rank))};
  const std::span<const std::byte> data(buffer, payload);
  const auto start = bench::Clock::now();
  for (int i = 0; i < iterations; ++i) {
    if (rank == 0) {
      send(ep, spec, data);
      bounce(ep, buffer);
    } else {
      bounce(ep, buffer);
      send(ep, spec, data);
    }
  }
  return bench::seconds_since(start) / iterations / 2;
}

// Rank 0 streams `packets` full packets; rank 1 answers with one packet when it has them all.
double stream_seconds(packet_layer::Endpoint& ep, int rank, int packets) {
  std::byte buffer[packet_layer::kMaxPayloadBytes] = {};
  const packet_layer::PacketSpec spec{
      .dest = ep.destination_of(static_cast<torus_emu::Rank>(1 - rank))};
  const auto start = bench::Clock::now();
  if (rank == 0) {
    for (int i = 0; i < packets; ++i)
      send(ep, spec, buffer);
    while (!ep.advance())
      ep.wait();
    bounce(ep, buffer);
  } else {
    for (int i = 0; i < packets; ++i)
      bounce(ep, buffer);
    send(ep, spec, std::span<const std::byte>(buffer, 8));
    while (!ep.advance())
      ep.wait();
  }
  return bench::seconds_since(start);
}

int run(int argc, char** argv) {
  const auto args = bench::Args::parse(argc, argv, 1);
  int iterations = 2000, stream = 20000;
  for (std::size_t i = 0; i + 1 < args.rest.size(); ++i) {
    if (args.rest[i] == "--iterations")
      iterations = static_cast<int>(
          job_runtime::env::parse_int(args.rest[i + 1], "--iterations", 1, 1 << 30));
    if (args.rest[i] == "--stream")
      stream =
          static_cast<int>(job_runtime::env::parse_int(args.rest[i + 1], "--stream", 1, 1 << 30));
  }
  auto rt = packet_layer::Runtime::from_environment();
  if (rt.size() != 2) throw ConfigError("pl_transport needs exactly 2 tasks (bglrun -np 2)");
  const int rank = static_cast<int>(rt.rank());
  auto& ep = rt.endpoint();
  constexpr std::size_t kPayloads[] = {16, 112, 240};  // 32-, 128- and 256-byte packets
  half_rtt(ep, rank, 16, iterations / 10 + 1);         // warm up (connections, caches)
  std::vector<double> latency;
  for (auto p : kPayloads) {
    rt.barrier();
    latency.push_back(half_rtt(ep, rank, p, iterations));
  }
  rt.barrier();
  const double seconds = stream_seconds(ep, rank, stream);
  if (rank == 0) {
    const auto& placement = rt.machine().placement();
    const std::string transport = std::string(job_runtime::to_string(placement.transport)) + "/" +
                                  std::to_string(placement.host_count()) + "host";
    const double mbps = stream * static_cast<double>(packet_layer::kMaxPacketBytes) / seconds / 1e6;
    bench::Table t(
        "packet latency and streaming over " + transport + " (" + std::to_string(iterations) +
            " round trips, " + std::to_string(stream) + " streamed packets)",
        {"transport", "lat32_ns", "lat128_ns", "lat256_ns", "stream_MBps", "stream_Mpkts"});
    t.row({transport, latency[0] * 1e9, latency[1] * 1e9, latency[2] * 1e9, mbps,
           stream / seconds / 1e6});
    if (args.json)
      std::printf("%s\n", t.to_json().dump().c_str());
    else
      t.print();
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  return bgl::bench::run_main("pl_transport", run, argc, argv);
}
