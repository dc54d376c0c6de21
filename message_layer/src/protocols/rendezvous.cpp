// Rendezvous protocol: a scout [First][user header] in the sender's ordered stream (word = the
// sender's slot); once the receiver knows the destination it answers with an ack [Ack] naming its
// receive slot and the FIFO group the data go to; the data follow adaptively routed,
// [u32 chunk index][data] with word = the receiver's slot, straight into the destination; the
// receiver's fin (word = the sender's slot) ends it. The sender keeps its slot (and the caller's
// buffer) until the fin. The virtual-node protocol shares the ack, the data and the fin.
#include "protocol_ops.hpp"

namespace bgl::message_layer {
namespace protocols {
namespace {

using P = virtual_time::Params;

Engine::Step send(Engine& e, SendMessage& m, Engine::DestState&) {
  return send_scout(e, m, wire::kScout, &P::rzv_send_cycles, {});
}

const char* check_first(const Engine&, const packet_layer::PacketHeader&, std::uint64_t,
                        std::span<const std::byte> chunk, const Engine::SourceState&) {
  return chunk.empty() ? nullptr : "data size disagrees with the message size";
}

void start(Engine& e, std::uint32_t id, Engine::RecvState& r, Engine::SourceState&,
           std::span<const std::byte>) {
  if (!r.unexpected) request_data(e, r, id);
}

void accepted(Engine& e, std::uint32_t id, Engine::RecvState& r) {
  request_data(e, r, id);
}

void complete(Engine& e, std::uint32_t id, Engine::RecvState& r, Engine::SourceState& src) {
  e.charge(&P::rzv_complete_cycles);
  complete_slotted(e, id, r, src);
}

void on_ack(Engine& e, const packet_layer::PacketHeader& h, std::span<const std::byte> payload) {
  const Rank source = h.source_rank();
  if (payload.size() != sizeof(wire::Ack)) return e.malformed(h, "ack of the wrong size");
  const auto ack = wire::load<wire::Ack>(payload);
  Engine::RzvSend* r = e.rzv_sends_.find(ack.sender_slot);
  if (!r || !r->message || r->message->state.phase != 1 || r->dest != source)
    return e.malformed(source, "rendezvous ack for no send waiting for one", nullptr);
  if (ack.data_group >= packet_layer::kFifoGroups)
    return e.malformed(source, "rendezvous ack names a FIFO group that does not exist", nullptr);
  e.charge(&P::rzv_ack_cycles);
  SendMessage& m = *r->message;
  m.state.remote_id = ack.receiver_slot;
  m.state.data_group = static_cast<std::uint8_t>(ack.data_group);
  m.state.phase = 2;
  if (!r->notify_remote) r->message = nullptr;  // the caller may reuse it after done()
  if (m.data.size() == 0) return e.finish_send(m);
  e.queue_data(m);
}

// A message's data in bursts of 16 packets, on the FIFO of its ordered stream.
Engine::Step send_data(Engine& e, SendMessage& m) {
  auto& s = m.state;
  const std::size_t bytes = m.data.size();
  const Engine::DestState& d = e.dests_[m.dest];
  packet_layer::PacketSpec spec{.dest = d.where,
                                .dispatch = wire::kRzvData,
                                .word = s.remote_id,
                                .routing = packet_layer::Routing::adaptive,
                                .vt_cycles = e.cost(&P::rzv_data_cycles),
                                .vt_origin = s.vt_posted};
  spec.dest.group = s.data_group;
  std::byte scratch[packet_layer::kMaxPayloadBytes];
  for (int i = 0; i < 16 && s.offset < bytes; ++i) {
    const auto index = static_cast<std::uint32_t>(s.offset / wire::kRzvChunk);
    const std::size_t n = std::min(wire::kRzvChunk, bytes - s.offset);
    const std::span<const std::byte> prefix(reinterpret_cast<const std::byte*>(&index),
                                            sizeof index);
    if (e.ep_.inject(d.fifo, spec, prefix, e.data_view(m, s.offset, n, scratch)) ==
        packet_layer::InjectStatus::full)
      return Engine::Step::blocked;
    ++s.packets;
    s.offset += n;
  }
  return s.offset == bytes ? Engine::Step::finished : Engine::Step::more;
}

void on_data(Engine& e, const packet_layer::PacketHeader& h, std::span<const std::byte> payload) {
  Engine::RecvState* r = e.recvs_.find(h.word);
  if (!r || !protocol_ops(r->protocol).slotted || r->unexpected || r->on_coprocessor ||
      r->source != h.source_rank())
    return e.malformed(h, "rendezvous data for no matched message");
  if (payload.size() < wire::kRzvIndexBytes)
    return e.malformed(h, "rendezvous data packet too short");
  const std::uint64_t offset = std::uint64_t{wire::load<std::uint32_t>(payload)} * wire::kRzvChunk;
  const auto data = payload.subspan(wire::kRzvIndexBytes);
  if (!Engine::fits(*r, offset, data.size()))
    return e.malformed(h, "rendezvous data beyond the message");
  // Every chunk but the message's last is full.
  if (data.size() != std::min<std::uint64_t>(wire::kRzvChunk, r->bytes - offset))
    return e.malformed(h, "rendezvous data chunk of the wrong size");
  ++e.stats_.protocol[static_cast<std::size_t>(r->protocol)].packets_received;
  e.charge(&P::rzv_data_cycles);
  e.data_arrived(h.word, *r, offset, data);
}

void on_fin(Engine& e, const packet_layer::PacketHeader& h, std::span<const std::byte>) {
  Engine::RzvSend* r = e.rzv_sends_.find(h.word);
  if (!r || r->dest != h.source_rank()) return e.malformed(h, "rendezvous fin for no send");
  SendMessage* m = r->message;
  // A fin ends a rendezvous once all its data went out; before the ack only a virtual-node message
  // (the receiver copied it) may end.
  if (m && m->state.phase == 1 && m->state.protocol != Protocol::virtual_node)
    return e.malformed(h, "rendezvous fin before the ack");
  if (m && m->state.phase == 2 && m->state.offset < m->data.size())
    return e.malformed(h, "rendezvous fin before all data were sent");
  const bool notify = r->notify_remote;
  // A fin without an ack: the receiver copied the data itself (virtual-node protocol).
  const bool copied = m && m->state.phase == 1;
  e.rzv_sends_.release(h.word);
  if (copied) e.finish_send(*m);                     // may hand the message back to its owner...
  if (notify && m->remote_done) m->remote_done(*m);  // ...unless it asked to hear this too
}

constexpr PacketOps kPackets[] = {{wire::kRzvAck, false, on_ack},
                                  {wire::kRzvData, false, on_data},
                                  {wire::kRzvFin, false, on_fin}};

}  // namespace

// The scout (or the virtual-node request, whose `extra` says where the data are) takes a slot of
// the rendezvous table, kept until the receiver's fin.
Engine::Step send_scout(Engine& e, SendMessage& m, std::uint8_t type,
                        double virtual_time::Params::*cost, std::span<const std::byte> extra) {
  auto& s = m.state;
  if (!e.rzv_sends_.acquire(s.local_id)) return Engine::Step::blocked;  // full: wait for fins
  const Engine::DestState& d = e.dests_[m.dest];
  std::byte prefix[packet_layer::kMaxPayloadBytes];
  const packet_layer::PacketSpec spec{.dest = d.where,
                                      .dispatch = type,
                                      .word = s.local_id,
                                      .vt_cycles = e.cost(cost),
                                      .vt_origin = s.vt_posted};
  if (e.ep_.inject(d.fifo, spec, e.first_prefix(m, prefix), extra) ==
      packet_layer::InjectStatus::full) {
    e.rzv_sends_.release(s.local_id);
    return Engine::Step::blocked;
  }
  *e.rzv_sends_.find(s.local_id) = Engine::RzvSend{&m, m.dest, m.remote_done != nullptr};
  ++s.packets;
  s.phase = 1;  // waiting for the ack
  return Engine::Step::finished;
}

// The destination is known: ask the sender for the data (to the coprocessor's FIFO group where
// the coprocessor takes the receive).
void request_data(Engine& e, Engine::RecvState& r, std::uint32_t id) {
  const std::uint32_t group = e.data_group_for(r, id);
  e.send_control({r.source, wire::kRzvAck, 0, wire::Ack{r.sender_slot, id, group}});
  if (r.bytes == 0) e.complete(id, r);
}

void complete_slotted(Engine& e, std::uint32_t, Engine::RecvState& r, Engine::SourceState&) {
  e.send_control({r.source, wire::kRzvFin, r.sender_slot, {}});
}

Engine::Step send_rendezvous_data(Engine& e, SendMessage& m) {
  return send_data(e, m);
}

}  // namespace protocols

const ProtocolOps rendezvous_protocol{
    .id = Protocol::rendezvous,
    .name = "rendezvous",
    .aliases = {"rzv", ""},
    .first_packet = wire::kScout,
    .first_overtakes = false,
    .slotted = true,
    .match_cost = &virtual_time::Params::rzv_match_cycles,
    .check_post = protocols::no_post_check,
    .send = protocols::send,
    .check_first = protocols::check_first,
    .start = protocols::start,
    .accepted = protocols::accepted,
    .complete = protocols::complete,
    .send_data = protocols::send_rendezvous_data,
    .packets = protocols::kPackets,
};

}  // namespace bgl::message_layer
