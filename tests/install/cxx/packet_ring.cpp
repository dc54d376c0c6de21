// Packets on the emulated torus: every task sends `kRounds` packets to every other task, each
// carrying (source, destination, round) and a payload derived from them; every task checks that
// it received exactly the packets it was owed, intact, and prints one line.
#include <cstdio>
#include <cstring>
#include <span>
#include <vector>

#include "bgl/packet_layer/runtime.hpp"

namespace {

using namespace bgl;

constexpr int kRounds = 5;
constexpr std::size_t kWords = 40;  // 160 bytes of payload

void fill(std::uint32_t* words, std::uint32_t from, std::uint32_t to, std::uint32_t round) {
  words[0] = from;
  words[1] = to;
  words[2] = round;
  for (std::size_t i = 3; i < kWords; ++i)
    words[i] = from * 2654435761u ^ to * 40503u ^ round * 97u ^ static_cast<std::uint32_t>(i);
}

int run() {
  auto rt = packet_layer::Runtime::from_environment();
  auto& ep = rt.endpoint();
  const auto me = static_cast<std::uint32_t>(rt.rank());
  const int size = rt.size();
  std::vector<int> got(static_cast<std::size_t>(size) * kRounds, 0);
  int received = 0, bad = 0;
  const int expected = (size - 1) * kRounds;

  auto drain = [&] {
    std::uint32_t words[kWords];
    while (auto f = ep.poll()) {
      const auto h = ep.peek(*f);
      ep.receive(*f, std::as_writable_bytes(std::span(words)));
      std::uint32_t want[kWords];
      fill(want, words[0], me, words[2]);
      if (h.payload_bytes != sizeof words || h.dispatch != 7 || words[0] >= std::uint32_t(size) ||
          words[2] >= kRounds || std::memcmp(words, want, sizeof words) != 0 ||
          h.source_rank() != words[0]) {
        ++bad;
        continue;
      }
      ++got[words[0] * kRounds + words[2]];
      ++received;
    }
  };
  for (int round = 0; round < kRounds; ++round)
    for (int k = 1; k < size; ++k) {
      const auto peer = static_cast<torus_emu::Rank>((static_cast<int>(me) + k) % size);
      std::uint32_t words[kWords];
      fill(words, me, peer, static_cast<std::uint32_t>(round));
      packet_layer::PacketSpec spec{.dest = ep.destination_of(peer), .dispatch = 7};
      while (ep.inject(0, spec, std::as_bytes(std::span(words))) ==
             packet_layer::InjectStatus::full) {
        drain();
        ep.wait();
      }
    }
  while (!ep.advance()) {
    drain();
    ep.wait();
  }
  while (received < expected && bad == 0) {
    drain();
    if (received < expected) ep.wait();
  }
  rt.barrier();
  drain();
  int duplicates = 0;
  for (std::size_t i = 0; i < got.size(); ++i)
    if (got[i] > 1) ++duplicates;
  const bool ok = received == expected && bad == 0 && duplicates == 0;
  std::printf("packet_ring rank %u: %s, %d packets from %d tasks (%d bad)\n", me,
              ok ? "ok" : "FAILED", received, size - 1, bad);
  return ok ? 0 : 1;
}

}  // namespace

int main() {
  try {
    return run();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "packet_ring: %s\n", e.what());
    return 2;
  }
}
