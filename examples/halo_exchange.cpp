// A 3D nearest-neighbour halo exchange in rank space, over the message layer: the tasks form a
// logical X x Y x Z grid in rank order (rank = x + X * (y + Y * z), periodic), and every
// iteration each task sends a message of B bytes to each of its six logical neighbours and
// receives six. With the default XYZT mapping logical neighbours are torus neighbours; a mapping
// file that scatters the ranks makes the same program cross more links and share them, which is
// what virtual time (bglrun --virtual-time) turns into a longer predicted run.
//
//   bglrun -np 64 --shape 4x4x4 --virtual-time build/bin/halo_exchange [--bytes B] [--iterations I]
//   bglrun -np 64 --shape 4x4x4 --virtual-time --mapfile scattered.map build/bin/halo_exchange
//
// Rank 0 prints the time per iteration after a closing barrier, in BG/L time with virtual time
// on and host time otherwise.
#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string_view>
#include <vector>

#include "bgl/message_layer/session.hpp"
#include "bgl/virtual_time/clock.hpp"

namespace {

using namespace bgl;

constexpr message_layer::HandlerId kHalo = 1;

struct Options {
  std::size_t bytes = 1024;
  int iterations = 20;
};

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string_view flag = argv[i];
    const long v = std::strtol(argv[i + 1], nullptr, 10);
    if (flag == "--bytes" && v >= 0 && v <= (1 << 24))
      o.bytes = static_cast<std::size_t>(v);
    else if (flag == "--iterations" && v > 0 && v <= 100000)
      o.iterations = static_cast<int>(v);
    else
      throw std::invalid_argument("usage: halo_exchange [--bytes 0..16M] [--iterations 1..100000]");
  }
  return o;
}

// Counts arrivals; every message lands in the scratch buffer of the direction it came from.
struct Halo {
  std::array<std::vector<std::byte>, 6> in;
  std::uint64_t received = 0;
  int sends_pending = 0;

  static void recv_done(void* self, std::uint32_t, std::size_t) {
    ++static_cast<Halo*>(self)->received;
  }
  static message_layer::RecvTarget arrival(void* self, const message_layer::Arrival& a) {
    auto& h = *static_cast<Halo*>(self);
    const auto dir = a.header.empty() ? 0u : static_cast<unsigned>(a.header[0]) % 6;
    return message_layer::RecvTarget::into(h.in[dir], &Halo::recv_done, self);
  }
  static void send_done(message_layer::SendMessage& m) {
    --static_cast<Halo*>(m.context)->sends_pending;
  }
};

double now(const packet_layer::Endpoint& ep) {
  if (ep.timed()) return static_cast<double>(ep.clock().now()) / ep.vt_params()->cpu_hz;
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

int run(int argc, char** argv) {
  const Options o = parse(argc, argv);
  auto session = message_layer::Session::from_launcher();
  auto& ml = session->layer();
  const auto& shape = session->mapping().shape();
  const int X = shape.extent(torus_emu::Dim::x), Y = shape.extent(torus_emu::Dim::y),
            Z = shape.extent(torus_emu::Dim::z);
  if (session->size() != X * Y * Z) {
    std::fprintf(stderr, "halo_exchange: run one task per node (-np %d for %s)\n", X * Y * Z,
                 shape.to_string().c_str());
    return 2;
  }
  const auto me = static_cast<int>(session->rank());
  const int x = me % X, y = me / X % Y, z = me / (X * Y);
  const auto rank_at = [&](int i, int j, int k) {
    return static_cast<message_layer::Rank>((i + X) % X + X * ((j + Y) % Y + Y * ((k + Z) % Z)));
  };
  const std::array<message_layer::Rank, 6> peers{rank_at(x + 1, y, z), rank_at(x - 1, y, z),
                                                 rank_at(x, y + 1, z), rank_at(x, y - 1, z),
                                                 rank_at(x, y, z + 1), rank_at(x, y, z - 1)};
  Halo halo;
  for (auto& b : halo.in)
    b.resize(o.bytes);
  ml.register_handler(kHalo, &Halo::arrival, &halo);
  std::vector<std::byte> out(o.bytes, std::byte{0x5a});
  // The direction a message arrives from at its receiver: the opposite of the one it leaves by.
  const std::array<std::byte, 6> from{std::byte{1}, std::byte{0}, std::byte{3},
                                      std::byte{2}, std::byte{5}, std::byte{4}};
  std::array<message_layer::SendMessage, 6> sends{};

  session->barrier();
  const double start = now(session->runtime().endpoint());
  for (int it = 0; it < o.iterations; ++it) {
    halo.sends_pending = 6;
    for (std::size_t d = 0; d < 6; ++d) {
      auto& m = sends[d];
      m = message_layer::SendMessage{};
      m.dest = peers[d];
      m.handler = kHalo;
      m.header = std::span(&from[d], 1);
      m.data.buffer = out;
      m.done = &Halo::send_done;
      m.context = &halo;
      ml.post(m);
    }
    const std::uint64_t target = 6 * static_cast<std::uint64_t>(it + 1);
    while (halo.received < target || halo.sends_pending > 0)
      if (!ml.advance()) ml.wait();
  }
  session->barrier();
  const double seconds = now(session->runtime().endpoint()) - start;
  if (me == 0)
    std::printf("halo_exchange: %d iterations of 6 x %zu B on %s: %.3f us per iteration (%s)\n",
                o.iterations, o.bytes, shape.to_string().c_str(), seconds / o.iterations * 1e6,
                session->runtime().endpoint().timed() ? "BG/L, virtual time" : "host");
  session->finalize();
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "halo_exchange: %s\n", e.what());
    return 2;
  }
}
