// Messages on the emulated torus through the message layer (C++ API): every task sends messages
// of several sizes (one packet, eager and rendezvous) to the next rank and receives the previous
// rank's, checks every byte and prints one line.
#include <array>
#include <cstdio>
#include <vector>

#include "bgl/message_layer/session.hpp"

namespace {

using namespace bgl;

constexpr message_layer::HandlerId kRing = 3;
constexpr std::array<std::size_t, 4> kSizes{16, 2000, 70000, 1 << 20};

std::byte pattern(std::uint32_t from, std::size_t message, std::size_t i) {
  return static_cast<std::byte>((from * 31u + message * 7u + i * 13u + (i >> 8)) & 0xff);
}

struct Inbox {
  std::array<std::vector<std::byte>, kSizes.size()> data;
  std::array<std::uint32_t, kSizes.size()> from{};
  int received = 0;
  int sends_pending = 0;

  static void recv_done(void* self, std::uint32_t, std::size_t) {
    ++static_cast<Inbox*>(self)->received;
  }
  static message_layer::RecvTarget arrival(void* self, const message_layer::Arrival& a) {
    auto& in = *static_cast<Inbox*>(self);
    const auto index = a.header.empty() ? 0u : static_cast<unsigned>(a.header[0]) % kSizes.size();
    in.data[index].resize(a.bytes);
    in.from[index] = a.source;
    return message_layer::RecvTarget::into(in.data[index], &Inbox::recv_done, self);
  }
  static void send_done(message_layer::SendMessage& m) {
    --static_cast<Inbox*>(m.context)->sends_pending;
  }
};

int run() {
  auto session = message_layer::Session::from_launcher();
  auto& ml = session->layer();
  const auto me = session->rank();
  const auto size = session->size();
  const auto next = (me + 1) % size, previous = (me + size - 1) % size;
  Inbox inbox;
  ml.register_handler(kRing, &Inbox::arrival, &inbox);
  session->barrier();

  std::array<std::vector<std::byte>, kSizes.size()> out;
  std::array<std::byte, kSizes.size()> headers{};
  std::array<message_layer::SendMessage, kSizes.size()> sends{};
  inbox.sends_pending = static_cast<int>(kSizes.size());
  for (std::size_t m = 0; m < kSizes.size(); ++m) {
    out[m].resize(kSizes[m]);
    for (std::size_t i = 0; i < kSizes[m]; ++i)
      out[m][i] = pattern(me, m, i);
    headers[m] = static_cast<std::byte>(m);
    auto& s = sends[m];
    s.dest = next;
    s.handler = kRing;
    s.header = std::span(&headers[m], 1);
    s.data.buffer = out[m];
    s.done = &Inbox::send_done;
    s.context = &inbox;
    ml.post(s);
  }
  while (inbox.received < static_cast<int>(kSizes.size()) || inbox.sends_pending > 0)
    if (!ml.advance()) ml.wait();
  session->barrier();

  std::size_t bytes = 0, wrong = 0;
  for (std::size_t m = 0; m < kSizes.size(); ++m) {
    if (inbox.data[m].size() != kSizes[m] || inbox.from[m] != previous) ++wrong;
    for (std::size_t i = 0; i < inbox.data[m].size(); ++i)
      wrong += inbox.data[m][i] != pattern(previous, m, i);
    bytes += inbox.data[m].size();
  }
  std::printf("message_ring rank %u: %s, %zu messages, %zu bytes from rank %u\n", me,
              wrong == 0 ? "ok" : "FAILED", kSizes.size(), bytes, previous);
  session->finalize();
  return wrong == 0 ? 0 : 1;
}

}  // namespace

int main() {
  try {
    return run();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "message_ring: %s\n", e.what());
    return 2;
  }
}
