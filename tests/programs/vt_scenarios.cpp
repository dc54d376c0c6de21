// Task program for virtual time across hosts (tests/multihost_test.cpp, "VirtualTimeHosts"): each
// task ends by printing its BG/L clock, which must not depend on how many hosts the partition is
// placed on. The tasks' software costs are skewed by rank, so that every exchange has a latest
// arrival to wait for and every barrier a latest task.
//   vt_scenarios ring ROUNDS PACKETS   packets to the next rank, deterministically routed, from
//                                      the previous one (one source per task: no host order)
//   vt_scenarios collectives ROUNDS    global-interrupt barrier, collective-network allreduce of
//                                      4 KiB and a sum of 40 doubles, the job barrier, ROUNDS times
//   vt_scenarios ml ROUNDS BYTES       message-layer ping-pong of BYTES between rank r and
//                                      r + size/2 (one message in flight per pair: no host order)
#include <array>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "bgl/collective_net_emu/collective_network.hpp"
#include "bgl/message_layer/session.hpp"
#include "bgl/packet_layer/runtime.hpp"
#include "bgl/torus_emu/error.hpp"
#include "rank_check.hpp"

namespace {

using namespace bgl;

// Different for every rank and round, the same on every run.
std::uint64_t skew(int rank, int round) {
  return static_cast<std::uint64_t>((rank * 7 + round * 3) % 11) * 150;
}

// `what`: "exchanged" before the closing barrier (each task's own time), "clock" after it.
void report(packet_layer::Runtime& rt, const char* what) {
  std::printf("vt rank %d %s %llu\n", static_cast<int>(rt.rank()), what,
              static_cast<unsigned long long>(rt.endpoint().clock().now()));
  std::fflush(stdout);
}

int ring(packet_layer::Runtime& rt, int rounds, int packets) {
  auto& ep = rt.endpoint();
  const int me = static_cast<int>(rt.rank()), n = rt.size();
  const packet_layer::PacketSpec spec{
      .dest = ep.destination_of(static_cast<torus_emu::Rank>((me + 1) % n))};
  std::byte buffer[packet_layer::kMaxPayloadBytes] = {};
  std::uint64_t expected = 0;
  rt.barrier();
  for (int round = 0; round < rounds; ++round) {
    ep.clock().charge(skew(me, round));
    for (int k = 0; k < packets; ++k) {
      const std::uint64_t word = static_cast<std::uint64_t>(round) * 1000 + k;
      std::memcpy(buffer, &word, sizeof word);
      while (ep.inject(0, spec, std::span(buffer, 200)) != packet_layer::InjectStatus::ok)
        ep.wait();
    }
    for (int k = 0; k < packets; ++k) {
      std::optional<packet_layer::FifoRef> f;
      while (!(f = ep.poll()))
        ep.wait();
      ep.receive(*f, buffer);
      std::uint64_t word;
      std::memcpy(&word, buffer, sizeof word);
      BGL_CHECK(word == expected + static_cast<std::uint64_t>(k), me);
    }
    expected += 1000;
  }
  while (!ep.advance())
    ep.wait();
  report(rt, "exchanged");
  rt.barrier();
  report(rt, "clock");
  return 0;
}

int collectives(packet_layer::Runtime& rt, int rounds) {
  using namespace collective_net_emu;
  const int me = static_cast<int>(rt.rank()), n = rt.size();
  CollectiveNetwork net(rt.machine().job(), rt.rank(), rt.wait_policy());
  auto& clock = rt.endpoint().clock();
  net.set_clock(clock);
  std::vector<std::uint64_t> in(512), out(512);
  rt.barrier();
  for (int round = 0; round < rounds; ++round) {
    clock.charge(skew(me, round));
    net.interrupt().barrier();
    clock.charge(skew(me, round + 1));
    for (std::size_t i = 0; i < in.size(); ++i)
      in[i] = static_cast<std::uint64_t>(me) * 1000 + i + static_cast<std::uint64_t>(round);
    BGL_CHECK(net.allreduce<std::uint64_t>(AluOp::add, in, out) == Status::ok, me);
    const auto sum = static_cast<std::uint64_t>(n) * (n - 1) / 2 * 1000;
    for (std::size_t i = 0; i < out.size(); ++i)
      BGL_CHECK(out[i] == sum + static_cast<std::uint64_t>(n) * (i + round), me);
    // A short sum of doubles: on one host one task injects everybody's phase 2, on several each
    // task its own; the clocks must not tell.
    clock.charge(skew(me, round + 3));
    std::array<double, 40> values{}, sums{};  // three phase-2 packets
    values[0] = 0.5 * me;
    values[1] = 1.0;
    values[39] = -0.25 * round;
    BGL_CHECK(net.allreduce_sum(values, sums) == Status::ok, me);
    BGL_CHECK(sums[0] == 0.25 * n * (n - 1) && sums[1] == n && sums[39] == -0.25 * round * n, me);
    if (round + 1 == rounds) report(rt, "exchanged");
    clock.charge(skew(me, round + 2));
    rt.barrier();
  }
  report(rt, "clock");
  return 0;
}

struct Pong {
  std::vector<std::byte> in;
  std::uint64_t received = 0;
  bool sent = false;
  static void recv_done(void* self, std::uint32_t, std::size_t) {
    ++static_cast<Pong*>(self)->received;
  }
  static message_layer::RecvTarget arrival(void* self, const message_layer::Arrival&) {
    auto& p = *static_cast<Pong*>(self);
    return message_layer::RecvTarget::into(p.in, &Pong::recv_done, self);
  }
  static void send_done(message_layer::SendMessage& m) {
    static_cast<Pong*>(m.context)->sent = true;
  }
};

int ml_pingpong(int rounds, std::size_t bytes) {
  auto session = message_layer::Session::from_launcher();
  auto& ml = session->layer();
  const int me = static_cast<int>(session->rank()), n = session->size(), half = n / 2;
  BGL_CHECK(n % 2 == 0, me);
  const auto peer = static_cast<message_layer::Rank>(me < half ? me + half : me - half);
  constexpr message_layer::HandlerId kPong = 1;
  Pong pong;
  pong.in.resize(bytes);
  ml.register_handler(kPong, &Pong::arrival, &pong);
  std::vector<std::byte> out(bytes, std::byte{0x5a});
  message_layer::SendMessage m{};
  const auto send = [&] {
    m = message_layer::SendMessage{};
    m.dest = peer;
    m.handler = kPong;
    m.data.buffer = out;
    m.done = &Pong::send_done;
    m.context = &pong;
    pong.sent = false;
    ml.post(m);
    while (!pong.sent)
      if (!ml.advance()) ml.wait();
  };
  const auto receive = [&](std::uint64_t count) {
    while (pong.received < count)
      if (!ml.advance()) ml.wait();
  };
  session->barrier();
  for (int round = 0; round < rounds; ++round) {
    if (me < half) {
      send();
      receive(static_cast<std::uint64_t>(round) + 1);
    } else {
      receive(static_cast<std::uint64_t>(round) + 1);
      send();
    }
  }
  auto& rt = session->runtime();
  report(rt, "exchanged");
  session->barrier();
  report(rt, "clock");
  session->finalize();
  return 0;
}

}  // namespace

int main(int argc, char** argv) try {
  const std::string_view first = argc > 1 ? argv[1] : "";
  if (first == "ml")
    return ml_pingpong(argc > 2 ? std::stoi(argv[2]) : 10,
                       argc > 3 ? static_cast<std::size_t>(std::stoul(argv[3])) : 100);
  auto rt = packet_layer::Runtime::from_environment();
  if (!rt.endpoint().timed()) {
    std::fprintf(stderr, "vt_scenarios: run it with bglrun --virtual-time\n");
    return 2;
  }
  const std::string_view mode = argc > 1 ? argv[1] : "";
  const auto arg = [&](int i, int fallback) { return argc > i ? std::stoi(argv[i]) : fallback; };
  if (mode == "ring") return ring(rt, arg(2, 20), arg(3, 4));
  if (mode == "collectives") return collectives(rt, arg(2, 10));
  std::fprintf(stderr,
               "usage: vt_scenarios ring [ROUNDS [PACKETS]] | collectives [ROUNDS] | ml [ROUNDS "
               "[BYTES]]\n");
  return 2;
} catch (const std::exception& e) {
  std::fprintf(stderr, "vt_scenarios: %s\n", e.what());
  return 1;
}
