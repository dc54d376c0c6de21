// Eager protocol: the message's packets in the sender's ordered stream, the first
// [First][user header][data...] and the rest [data] (word = offset); the receiver writes each
// where the last ended. The message's stream is exclusive: one eager message per source at a time.
#include <algorithm>
#include <stdexcept>

#include "protocol_ops.hpp"

namespace bgl::message_layer {
namespace protocols {
namespace {

using P = virtual_time::Params;

constexpr EagerWire kWire{wire::kEagerFirst, wire::kEagerData, false, &P::eager_send_cycles,
                          &P::eager_data_cycles};

Engine::Step send(Engine& e, SendMessage& m, Engine::DestState& d) {
  return send_eager(e, m, d, kWire);
}

const char* check_first(const Engine&, const packet_layer::PacketHeader&, std::uint64_t bytes,
                        std::span<const std::byte> chunk, const Engine::SourceState& src) {
  if (const char* why = check_eager_size(bytes, chunk)) return why;
  return src.eager != Engine::kNone ? "eager message starts inside another" : nullptr;
}

void start(Engine& e, std::uint32_t id, Engine::RecvState& r, Engine::SourceState& src,
           std::span<const std::byte> chunk) {
  if (chunk.size() < r.bytes) src.eager = id;
  e.data_arrived(id, r, 0, chunk);
}

void complete(Engine&, std::uint32_t id, Engine::RecvState&, Engine::SourceState& src) {
  if (src.eager == id) src.eager = Engine::kNone;
}

void on_data(Engine& e, const packet_layer::PacketHeader& h, std::span<const std::byte> payload) {
  Engine::SourceState& src = e.sources_[h.source_rank()];
  Engine::RecvState* r = src.eager == Engine::kNone ? nullptr : e.recvs_.find(src.eager);
  if (!r) return e.malformed(h, "eager data without a message in progress");
  if (!Engine::fits(*r, h.word, payload.size()))
    return e.malformed(h, "eager data beyond the message");
  // The ordered stream delivers a message's eager data in order, each packet where the last ended.
  if (h.word != r->received) return e.malformed(h, "eager data out of order");
  ++e.stats_.protocol[static_cast<std::size_t>(Protocol::eager)].packets_received;
  e.charge(&P::eager_data_cycles);
  e.data_arrived(src.eager, *r, h.word, payload);
}

constexpr PacketOps kPackets[] = {{wire::kEagerData, true, on_data}};

}  // namespace

// Up to 16 packets at a time (then other destinations get their turn); the first carries the
// user header. Adaptive eager sends on its own FIFO, with its parity bit in every word.
Engine::Step send_eager(Engine& e, SendMessage& m, Engine::DestState& d, const EagerWire& w) {
  auto& s = m.state;
  const std::size_t bytes = m.data.size();
  const int fifo = w.adaptive ? Engine::kDataFifo : d.fifo;
  packet_layer::PacketSpec spec{.dest = d.where,
                                .routing = w.adaptive ? packet_layer::Routing::adaptive
                                                      : packet_layer::Routing::deterministic,
                                .vt_origin = s.vt_posted};
  if (w.adaptive && s.packets == 0) s.phase = d.parity;  // this message's parity bit
  const std::uint32_t parity = w.adaptive && s.phase ? wire::kParityBit : 0;
  std::byte prefix[packet_layer::kMaxPayloadBytes], scratch[packet_layer::kMaxPayloadBytes];
  for (;;) {
    std::span<const std::byte> head;
    std::size_t room = packet_layer::kMaxPayloadBytes;
    if (s.packets == 0) {
      head = e.first_prefix(m, prefix);
      room -= head.size();
      spec.dispatch = w.first;
      spec.vt_cycles = e.cost(w.first_cost);
    } else {
      spec.dispatch = w.data;
      spec.vt_cycles = e.cost(w.data_cost);
    }
    spec.word = static_cast<std::uint32_t>(s.offset) | parity;
    const std::size_t n = std::min(room, bytes - s.offset);
    // A counted message rings only with its last packet; adaptive eager's receiver answers (the
    // token), so its packets always wake it.
    spec.ring = !m.counted || w.adaptive ? packet_layer::Ring::wake
                : s.offset + n == bytes  ? packet_layer::Ring::count
                                         : packet_layer::Ring::none;
    if (e.ep_.inject(fifo, spec, head, e.data_view(m, s.offset, n, scratch)) ==
        packet_layer::InjectStatus::full)
      return Engine::Step::blocked;
    if (w.adaptive && s.packets == 0) {
      d.token = false;  // until the receiver has this message
      d.parity = !d.parity;
    }
    ++s.packets;
    s.offset += n;
    if (s.offset == bytes) return Engine::Step::finished;
    if (s.packets % 16 == 0) return Engine::Step::more;  // let other destinations in
  }
}

const char* check_eager_size(std::uint64_t bytes, std::span<const std::byte> chunk) {
  if (chunk.size() > bytes) return "data size disagrees with the message size";
  return bytes >= wire::kParityBit ? "eager message beyond the eager protocols' 2 GiB" : nullptr;
}

void check_eager_post(const Engine&, const SendMessage&, std::size_t bytes) {
  if (bytes >= wire::kParityBit)
    throw std::invalid_argument("eager protocols carry at most 2 GiB; use rendezvous");
}

}  // namespace protocols

const ProtocolOps eager_protocol{
    .id = Protocol::eager,
    .name = "eager",
    .aliases = {"", ""},
    .first_packet = wire::kEagerFirst,
    .first_overtakes = false,
    .slotted = false,
    .match_cost = &virtual_time::Params::eager_recv_cycles,
    .check_post = protocols::check_eager_post,
    .send = protocols::send,
    .check_first = protocols::check_first,
    .start = protocols::start,
    .accepted = protocols::finish_if_complete,
    .complete = protocols::complete,
    .packets = protocols::kPackets,
};

}  // namespace bgl::message_layer
