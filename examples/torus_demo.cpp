// torus_demo: every task greets every other task with one packet, rank 0 also sends a deposit-bit
// packet along +x, and every task reports, in rank order, what reached it and by which link.
//   bglrun -np 8 --shape 2x2x2 --mapfile examples/map-2x2x2.txt build/bin/torus_demo
#include <cstdio>
#include <string>
#include <vector>

#include "bgl/packet_layer/runtime.hpp"
#include "bgl/torus_emu/distance.hpp"
#include "bgl/torus_emu/error.hpp"

namespace {

using namespace bgl;

std::string fifo_name(int index) {
  if (index < packet_layer::kLinkFifos)
    return "arrived travelling " +
           std::string(torus_emu::to_string(static_cast<torus_emu::Direction>(index)));
  return index == packet_layer::kLocalFifo ? "local" : "high priority";
}

int run() {
  auto rt = packet_layer::Runtime::from_environment();
  auto& ep = rt.endpoint();
  const auto me = rt.rank();
  const int size = rt.size();
  const auto& shape = rt.machine().shape();
  const auto& mapping = rt.machine().mapping();

  // Receives while it sends: a reception FIFO holds only so many packets, and every other task
  // greets this one, so sending everything first would stop every task at a full FIFO once the
  // job is larger than a FIFO (256 tasks and more with the default 64-packet FIFOs).
  std::vector<std::string> lines;
  int greetings = 0;
  auto drain = [&] {
    char buffer[packet_layer::kMaxPayloadBytes];
    while (auto f = ep.poll()) {
      const auto h = ep.peek(*f);
      const auto from = static_cast<torus_emu::Rank>(h.source_rank());
      ep.receive(*f, std::as_writable_bytes(std::span(buffer)));
      greetings += h.dispatch == 1;
      const int hops = torus_emu::distance(shape, mapping.coord(from), mapping.coord(me));
      lines.push_back("  \"" + std::string(buffer, h.payload_bytes) + "\" (" +
                      std::to_string(hops) + (hops == 1 ? " hop, " : " hops, ") +
                      fifo_name(f->index) + ")");
    }
  };
  auto wait = [&] {
    drain();
    ep.wait();
  };

  for (int k = 1; k < size; ++k) {
    const auto peer = static_cast<torus_emu::Rank>((static_cast<int>(me) + k) % size);
    const std::string text = "hello from rank " + std::to_string(me);
    packet_layer::PacketSpec spec{.dest = ep.destination_of(peer), .dispatch = 1};
    while (ep.inject(0, spec, std::as_bytes(std::span(text))) == packet_layer::InjectStatus::full)
      wait();
  }
  const bool line = me == 0 && shape.extent(torus_emu::Dim::x) > 1;
  if (line) {
    const auto c = mapping.coord(0);
    const auto end = shape.node_id({shape.extent(torus_emu::Dim::x) - 1, c.y, c.z});
    const std::string text = "deposit-bit broadcast along +x";
    packet_layer::PacketSpec spec{
        .dest = {end, 0}, .dispatch = 2, .deposit_line = torus_emu::Direction::x_plus};
    while (ep.inject(1, spec, std::as_bytes(std::span(text))) == packet_layer::InjectStatus::full)
      wait();
  }
  while (!ep.advance())
    wait();
  // Every greeting in before the barrier: a task waiting in it no longer empties its FIFOs.
  while (greetings < size - 1)
    wait();
  rt.barrier();  // every packet is in some reception FIFO now (the deposit-bit copies too)
  drain();

  for (int r = 0; r < size; ++r) {
    if (static_cast<int>(me) == r) {
      std::printf("rank %u at %s t=%d received %zu packets:\n", me,
                  torus_emu::to_string(mapping.coord(me)).c_str(), mapping.location(me).t,
                  lines.size());
      for (const auto& l : lines)
        std::printf("%s\n", l.c_str());
      std::fflush(stdout);
    }
    rt.barrier();
  }
  return 0;
}

}  // namespace

int main() {
  try {
    return run();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "torus_demo: %s\n", e.what());
    return 2;
  }
}
