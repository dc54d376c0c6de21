// One-packet protocol: header and data in one packet of the sender's ordered stream,
// [First][user header][data]. The latency path: post() injects it at once when nothing is queued
// for its destination, and the receiver matches and delivers it without the general dispatch when
// nothing unusual goes on.
#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <string>

#include "../data_copy.hpp"
#include "protocol_ops.hpp"

namespace bgl::message_layer {
namespace protocols {
namespace {

using P = virtual_time::Params;

std::size_t capacity(std::size_t header_bytes) {
  return packet_layer::kMaxPayloadBytes - wire::kFirstBytes - header_bytes;
}

// A message that does not fit one packet is refused, never split: split, it would be an eager
// message under another name, and a job that forced the protocol would measure the wrong thing.
[[noreturn, gnu::cold, gnu::noinline]] void refuse(std::size_t bytes, std::size_t header_bytes,
                                                   bool by_configuration) {
  std::string what = "one-packet protocol forced for " + std::to_string(bytes) +
                     " bytes; at most " + std::to_string(capacity(header_bytes)) +
                     " fit with this header";
  if (by_configuration)
    what +=
        " (BGL_ML_PROTOCOL=one_packet takes only messages that fit one packet: unset it, or "
        "force eager, rendezvous or adaptive_eager)";
  throw std::invalid_argument(what);
}

void check_post(const Engine&, const SendMessage& m, std::size_t bytes) {
  if (bytes > capacity(m.header.size())) [[unlikely]]
    refuse(bytes, m.header.size(), !m.protocol);
}

packet_layer::PacketSpec spec_of(const Engine& e, const SendMessage& m,
                                 const Engine::DestState& d) {
  return {.dest = d.where,
          .dispatch = wire::kOnePacket,
          .vt_cycles = e.cost(&P::one_packet_send_cycles),
          .vt_origin = m.state.vt_posted,
          .ring = m.counted ? packet_layer::Ring::count : packet_layer::Ring::wake};
}

// A message that waited in its destination's queue: its header from the message's own copy.
Engine::Step send(Engine& e, SendMessage& m, Engine::DestState& d) {
  std::byte prefix[packet_layer::kMaxPayloadBytes], scratch[packet_layer::kMaxPayloadBytes];
  const auto head = e.first_prefix(m, prefix);
  const auto data = e.data_view(m, 0, m.data.size(), scratch);
  const packet_layer::PacketSpec spec = spec_of(e, m, d);
  if (e.ep_.inject(d.fifo, spec, head, data) == packet_layer::InjectStatus::full)
    return Engine::Step::blocked;
  ++m.state.packets;
  m.state.offset = m.data.size();
  return Engine::Step::finished;
}

const char* check_first(const Engine&, const packet_layer::PacketHeader&, std::uint64_t bytes,
                        std::span<const std::byte> chunk, const Engine::SourceState&) {
  return chunk.size() != bytes ? "data size disagrees with the message size" : nullptr;
}

void start(Engine& e, std::uint32_t id, Engine::RecvState& r, Engine::SourceState&,
           std::span<const std::byte> chunk) {
  e.data_arrived(id, r, 0, chunk);
}

void complete(Engine&, std::uint32_t, Engine::RecvState&, Engine::SourceState&) {}

}  // namespace

// post()'s one-packet message: [First][user header] built on the stack from the caller's header,
// the data gathered only if they are a list. False: the injection FIFO is full (the message then
// waits in its destination's queue like any other).
bool inject_one_packet(Engine& e, SendMessage& m, const Engine::DestState& d, std::size_t bytes) {
  std::byte prefix[wire::kFirstBytes + kMaxUserHeader];
  const wire::First f{m.handler, m.state.header_bytes, m.state.seq,
                      static_cast<std::uint32_t>(bytes), 0};
  std::memcpy(prefix, &f, sizeof f);
  if (!m.header.empty()) std::memcpy(prefix + sizeof f, m.header.data(), m.header.size());
  std::byte scratch[packet_layer::kMaxPayloadBytes];
  const auto data = m.data.iov.empty() ? m.data.buffer
                                       : std::span<const std::byte>{
                                             scratch, gather_from(m.data.iov, 0, {scratch, bytes})};
  const packet_layer::PacketSpec spec = spec_of(e, m, d);
  if (e.ep_.inject(d.fifo, spec, {prefix, sizeof f + m.header.size()}, data) ==
      packet_layer::InjectStatus::full)
    return false;
  m.state.packets = 1;
  m.state.offset = bytes;
  return true;
}

// Checked, matched and delivered here without the general dispatch when nothing unusual goes on
// (its source has no stall queue, the message is next in sequence, a receive entry and room to
// hold a packet are free). Anything else goes to Engine::take(), which checks again and decides
// exactly as for any first packet.
Engine::Taken take_one_packet(Engine& e, const packet_layer::PacketHeader& h,
                              std::span<const std::byte> payload) {
  const Rank source = h.source_rank();
  if (source >= static_cast<std::uint32_t>(e.size_) || payload.size() < wire::kFirstBytes)
    return e.take(h, payload);
  Engine::SourceState& src = e.sources_[source];
  const auto first = wire::load<wire::First>(payload);
  const std::size_t prefix = wire::kFirstBytes + first.header_bytes;
  if (src.stall_head != Engine::kNone || first.header_bytes > kMaxUserHeader ||
      prefix > payload.size() || first.handler >= kMaxHandlers || first.seq != src.expected_seq ||
      payload.size() - prefix != first.bytes() || e.hold_.full() || e.recvs_.full())
    return e.take(h, payload);
  const auto [handler, context] = e.handlers_[first.handler];
  if (!handler) return e.take(h, payload);
  const std::uint64_t bytes = first.bytes();
  const auto data = payload.subspan(prefix);
  std::uint32_t id = 0;
  // The entry's other fields are set only if the message turns out unexpected (below): a message
  // delivered at once needs none of them.
  Engine::RecvState& r = *e.recvs_.acquire_as_is(id);
  r.protocol = Protocol::one_packet;  // what a packet naming this entry meanwhile is checked by
  r.unexpected = false;
  // Field by field: an aggregate initialisation clears the padding first (a rep stos).
  Arrival arrival;
  arrival.source = source;
  arrival.handler = first.handler;
  arrival.header = payload.subspan(wire::kFirstBytes, first.header_bytes);
  arrival.bytes = bytes;
  arrival.protocol = Protocol::one_packet;
  arrival.handle = RecvHandle{id};
  ++src.expected_seq;
  auto& stats = e.stats_.protocol[static_cast<std::size_t>(Protocol::one_packet)];
  ++stats.packets_received;
  e.charge(&P::one_packet_recv_cycles);
  const RecvTarget target = handler(context, arrival);
  if (target.kind == RecvTarget::Kind::later) {
    r = Engine::RecvState{};
    r.protocol = Protocol::one_packet;
    r.vt_origin = e.vt_origin_;
    r.source = source;
    r.bytes = bytes;
    r.sender_slot = h.word;
    r.target = target;
    Engine::Taken t = e.unexpected(id, r, src, data);
    if (t == Engine::Taken::hold)
      t = e.hold_packet(source, h, payload) ? Engine::Taken::consumed : Engine::Taken::blocked;
    return t;
  }
  // What start(), data_arrived(), complete() and finish_receive() do for it, in one go.
  std::uint64_t capacity;
  if (target.kind == RecvTarget::Kind::iov) {
    scatter_into(target.iov, 0, data);
    capacity = iov_bytes(target.iov);
  } else {
    copy_into(target.buffer, 0, data);
    capacity = target.buffer.size();
  }
  ++stats.messages_received;
  stats.bytes_received += bytes;
  e.record_latency(Protocol::one_packet, e.vt_origin_);
  e.recvs_.release(id);
  e.blocked_fifos_ = 0;  // a receive slot is free again
  ++e.delivered_;
  if (e.trace_) [[unlikely]]
    e.trace_receive(source, bytes, Protocol::one_packet);
  if (target.done) target.done(target.context, id, std::min(bytes, capacity));
  return Engine::Taken::consumed;
}

void no_post_check(const Engine&, const SendMessage&, std::size_t) {}

// Non-slotted protocols: the data may all be in the pool already when accept() names the
// destination (accept() copied them there).
void finish_if_complete(Engine& e, std::uint32_t id, Engine::RecvState& r) {
  if (r.data_complete) e.finish_receive(id, r);
}

}  // namespace protocols

const ProtocolOps one_packet_protocol{
    .id = Protocol::one_packet,
    .name = "one_packet",
    .aliases = {"one-packet", "onepacket"},
    .first_packet = wire::kOnePacket,
    .first_overtakes = false,
    .slotted = false,
    .match_cost = &virtual_time::Params::one_packet_recv_cycles,
    .check_post = protocols::check_post,
    .send = protocols::send,
    .check_first = protocols::check_first,
    .start = protocols::start,
    .accepted = protocols::finish_if_complete,
    .complete = protocols::complete,
    .packets = {},
};

}  // namespace bgl::message_layer
