// The receive side: dispatch on packet type to the protocols, message order and stall queues,
// matching up-calls, placement at offsets, the unexpected pool, completion, and validation of
// everything a peer's packet claims that is not a protocol's own business.
#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <string>

#include "bgl/job_runtime/log.hpp"
#include "data_copy.hpp"
#include "engine.hpp"
#include "protocols/protocol_ops.hpp"

namespace bgl::message_layer {
// Held adaptive-eager first packets whose predecessors have been matched now.
bool MessageLayer::Engine::release_held() {
  bool progress = false;
  for (std::size_t i = 0; i < held_.size();) {
    const Rank source = held_[i].source;
    SourceState& src = sources_[source];
    const packet_layer::Packet& p = held_[i].packet;
    const std::span<const std::byte> payload(p.payload.data(), p.header.payload_bytes);
    vt_origin_ = held_[i].vt_origin;
    const auto first = wire::load<wire::First>(payload);
    Taken t = Taken::blocked;
    if (first.seq == src.expected_seq) {
      // Behind a stalled message of its source it queues up, to be matched in turn.
      t = src.stall_head != kNone ? Taken::hold : match(p.header, payload, first, false);
      if (t == Taken::hold) t = hold_packet(source, p.header, payload) ? Taken::consumed : t;
    }
    if (t != Taken::consumed) {
      ++i;
      continue;
    }
    src.holds_first = false;
    if (i + 1 != held_.size()) held_[i] = held_.back();
    held_.pop_back();
    progress = true;
  }
  return progress;
}

// Stall queues whose head can go on now (a receive entry or pool space freed up, or accept()).
bool MessageLayer::Engine::release_stalled() {
  bool progress = false;
  for (std::size_t i = 0; i < stalled_.size();) {
    SourceState& src = sources_[stalled_[i]];
    while (src.stall_head != kNone) {
      const packet_layer::Packet& p = hold_[src.stall_head].packet;
      vt_origin_ = hold_[src.stall_head].vt_origin;
      const Taken t = src.resume != kNone
                          ? resume(src, p)
                          : dispatch(p.header, {p.payload.data(), p.header.payload_bytes}, true);
      if (t != Taken::consumed) break;
      pop_held(src);
      progress = true;
    }
    if (src.stall_head == kNone) {
      stalled_[i] = stalled_.back();
      stalled_.pop_back();
    } else {
      ++i;
    }
  }
  return progress;
}

bool MessageLayer::Engine::receive_some(bool arrived_only) {
  bool progress = false;
  if (!held_.empty()) progress |= release_held();
  if (!stalled_.empty()) progress |= release_stalled();
  const std::uint64_t delivered = delivered_;
  // Up to kBudget packets, but back to the caller as soon as a message was delivered: its
  // progress loop may be waiting for just that (one reception poll less on the latency path).
  for (int budget = kBudget; budget > 0 && delivered_ == delivered; --budget) {
    packet_layer::FifoRef f;
    const packet_layer::Packet* packet = ep_.next(f, blocked_fifos_, arrived_only);
    if (!packet) break;
    const packet_layer::Packet& p = *packet;
    const packet_layer::PacketHeader& h = p.header;
    const std::span<const std::byte> payload(p.payload.data(), h.payload_bytes);
    if (vt_) [[unlikely]]
      vt_origin_ = ep_.stamp_of(f, p).origin;
    const Taken t = h.dispatch == wire::kOnePacket ? protocols::take_one_packet(*this, h, payload)
                                                   : take(h, payload);
    if (t == Taken::blocked) {
      // No room to hold it: leave the packet where it is (backpressure towards its sender) until
      // resources free up.
      blocked_fifos_ |= 1u << f.index;
      continue;
    }
    ep_.discard(f, p);  // the data were copied straight from the FIFO slot to their destination
    progress = true;
    if (!held_.empty()) release_held();
    if (!stalled_.empty()) release_stalled();
  }
  return progress;
}

// A packet from a reception FIFO. Packets of a source with a stall queue that must stay in order
// behind it join the queue; a first packet whose message must wait starts one.
MessageLayer::Engine::Taken MessageLayer::Engine::take(const packet_layer::PacketHeader& h,
                                                       std::span<const std::byte> payload) {
  const Rank source = h.source_rank();
  if (source >= static_cast<std::uint32_t>(size_)) {
    malformed(h, "source rank outside the job");
    return Taken::consumed;
  }
  Taken t = sources_[source].stall_head != kNone && joins_stall(h, payload, sources_[source])
                ? Taken::hold
                : dispatch(h, payload, false);
  if (t == Taken::hold) t = hold_packet(source, h, payload) ? Taken::consumed : Taken::blocked;
  return t;
}

// The packets that must not overtake a stalled message of their source: its ordered stream (first
// packets and ordered data), and an overtaking first packet whose turn it is (a later one waits
// in `held`). Data of acknowledged messages, acks, fins and tokens never depend on it.
bool MessageLayer::Engine::joins_stall(const packet_layer::PacketHeader& h,
                                       std::span<const std::byte> payload,
                                       const SourceState& src) const {
  if (h.dispatch >= kForeignDispatchFirst) return false;
  if (const std::uint8_t p = first_protocol_[h.dispatch]; p != kProtocols) {
    if (!kProtocolTable[p]->first_overtakes) return true;
    return payload.size() >= wire::kFirstBytes &&
           wire::load<wire::First>(payload).seq == src.expected_seq;
  }
  return packet_ops_[h.dispatch] && packet_ops_[h.dispatch]->ordered;
}

bool MessageLayer::Engine::hold_packet(Rank source, const packet_layer::PacketHeader& h,
                                       std::span<const std::byte> payload) {
  std::uint32_t i = 0;
  if (!hold_.acquire(i)) {
    ++stats_.hold_full_waits;
    return false;
  }
  HeldPacket& e = hold_[i];
  std::memcpy(&e.packet.header, &h, sizeof h);
  std::memcpy(e.packet.payload.data(), payload.data(), payload.size());
  e.next = kNone;
  e.vt_origin = vt_origin_;
  SourceState& src = sources_[source];
  if (src.stall_tail == kNone) {
    src.stall_head = i;
    stalled_.push_back(source);
  } else {
    hold_[src.stall_tail].next = i;
  }
  src.stall_tail = i;
  stats_.held_packets_max = std::max(stats_.held_packets_max, ++stats_.held_packets);
  return true;
}

void MessageLayer::Engine::pop_held(SourceState& src) {
  const std::uint32_t i = src.stall_head;
  src.stall_head = hold_[i].next;
  if (src.stall_head == kNone) src.stall_tail = kNone;
  hold_.release(i);
  --stats_.held_packets;
  blocked_fifos_ = 0;  // room to hold packets again
}

MessageLayer::Engine::Taken MessageLayer::Engine::dispatch(const packet_layer::PacketHeader& h,
                                                           std::span<const std::byte> payload,
                                                           bool from_queue) {
  if (h.dispatch < kForeignDispatchFirst) {
    if (first_protocol_[h.dispatch] != kProtocols) return on_first(h, payload, from_queue);
    if (const PacketOps* ops = packet_ops_[h.dispatch]) {
      ops->on_packet(*this, h, payload);
      return Taken::consumed;
    }
  } else if (h.dispatch <= kForeignDispatchLast) {
    const auto& [handler, context] = packet_handlers_[h.dispatch - kForeignDispatchFirst];
    if (handler) {
      handler(context, h, payload);
      return Taken::consumed;
    }
  }
  malformed(h, "unknown packet type");
  return Taken::consumed;
}

MessageLayer::Engine::Taken MessageLayer::Engine::on_first(const packet_layer::PacketHeader& h,
                                                           std::span<const std::byte> payload,
                                                           bool from_queue) {
  if (payload.size() < wire::kFirstBytes)
    return malformed(h, "first packet too short"), Taken::consumed;
  const auto first = wire::load<wire::First>(payload);
  const std::size_t prefix = wire::kFirstBytes + first.header_bytes;
  if (first.header_bytes > kMaxUserHeader || prefix > payload.size())
    return malformed(h, "user header larger than the packet"), Taken::consumed;
  if (first.handler >= kMaxHandlers || !handlers_[first.handler].first)
    return malformed(h, "no handler registered for the message"), Taken::consumed;
  const ProtocolOps& ops = *kProtocolTable[first_protocol_[h.dispatch]];
  const Rank source = h.source_rank();
  SourceState& src = sources_[source];
  if (const char* why = ops.check_first(*this, h, first.bytes(), payload.subspan(prefix), src))
    return malformed(h, why), Taken::consumed;
  if (first.seq != src.expected_seq) {
    // Only an adaptively routed first packet can overtake earlier messages of its sender, and its
    // protocol allows one in flight: hold it until its predecessors are matched. A number behind
    // the expected one (half the number space back) was used already.
    const auto ahead = static_cast<std::uint16_t>(first.seq - src.expected_seq);
    if (!ops.first_overtakes || src.holds_first || ahead >= 0x8000)
      return malformed(h, "message out of sequence"), Taken::consumed;
    HeldFirst& held = held_.emplace_back();
    held.source = source;
    held.vt_origin = vt_origin_;
    std::memcpy(&held.packet.header, &h, sizeof h);
    std::memcpy(held.packet.payload.data(), payload.data(), payload.size());
    src.holds_first = true;
    return Taken::consumed;
  }
  return match(h, payload, first, from_queue);
}

// The handler is asked first: a message it gives a destination needs no pool. Only a message
// answered "later" is charged to the pool; without room it waits in its source's stall queue
// (backpressure for that source alone) until pool space frees up or accept() names a destination.
MessageLayer::Engine::Taken MessageLayer::Engine::match(const packet_layer::PacketHeader& h,
                                                        std::span<const std::byte> payload,
                                                        const wire::First& first, bool from_queue) {
  // A packet still in its FIFO may have to be held: without room for that it stays in the FIFO.
  if (!from_queue && hold_.full()) {
    ++stats_.hold_full_waits;
    return Taken::blocked;
  }
  if (recvs_.full()) {
    if (!from_queue) ++stats_.table_waits;
    if (!table_full_reported_ && 2 * stats_.unexpected_depth > config_.max_receives) [[unlikely]]
      report_table_full();
    return Taken::hold;  // the handler runs once an entry is free
  }
  const ProtocolOps& ops = *kProtocolTable[first_protocol_[h.dispatch]];
  const Protocol protocol = ops.id;
  const std::uint64_t bytes = first.bytes();
  const Rank source = h.source_rank();
  SourceState& src = sources_[source];
  std::uint32_t id = 0;
  recvs_.acquire(id);
  RecvState& r = *recvs_.find(id);
  r.protocol = protocol;
  r.source = source;
  r.bytes = bytes;
  r.sender_slot = h.word;
  r.vt_origin = vt_origin_;
  const auto chunk = payload.subspan(wire::kFirstBytes + first.header_bytes);
  const auto [handler, context] = handlers_[first.handler];
  // Field by field: an aggregate initialisation clears the padding first (a rep stos).
  Arrival arrival;
  arrival.source = source;
  arrival.handler = first.handler;
  arrival.header = payload.subspan(wire::kFirstBytes, first.header_bytes);
  arrival.bytes = bytes;
  arrival.protocol = protocol;
  arrival.handle = RecvHandle{id};
  ++src.expected_seq;
  ++stats_.protocol[static_cast<std::size_t>(protocol)].packets_received;
  charge(ops.match_cost);
  r.target = handler(context, arrival);
  if (r.target.kind == RecvTarget::Kind::later) return unexpected(id, r, src, chunk);
  ops.start(*this, id, r, src, chunk);
  return Taken::consumed;
}

// The handler answered "later": the message's data go to the pool, if it has room.
MessageLayer::Engine::Taken MessageLayer::Engine::unexpected(std::uint32_t id, RecvState& r,
                                                             SourceState& src,
                                                             std::span<const std::byte> chunk) {
  r.unexpected = true;
  ++stats_.unexpected_messages;
  stats_.unexpected_depth_max = std::max(stats_.unexpected_depth_max, ++stats_.unexpected_depth);
  const ProtocolOps& ops = protocol_ops(r.protocol);
  if (!ops.slotted && r.bytes > 0 && !charge_pool(r)) {
    r.pool_wait = true;
    ++stats_.pool_waits;
    src.resume = id;
    return Taken::hold;
  }
  ops.start(*this, id, r, src, chunk);
  return Taken::consumed;
}

// The stall queue's head is the first packet of a matched message that waited for pool space.
MessageLayer::Engine::Taken MessageLayer::Engine::resume(SourceState& src,
                                                         const packet_layer::Packet& p) {
  const std::uint32_t id = src.resume;
  RecvState& r = *recvs_.find(id);
  if (r.pool_wait) {
    if (r.unexpected && !charge_pool(r)) return Taken::blocked;
    r.pool_wait = false;  // pool space, or accept() gave it a destination
  }
  src.resume = kNone;
  const std::span<const std::byte> payload(p.payload.data(), p.header.payload_bytes);
  const auto first = wire::load<wire::First>(payload);
  protocol_ops(r.protocol)
      .start(*this, id, r, src, payload.subspan(wire::kFirstBytes + first.header_bytes));
  return Taken::consumed;
}

bool MessageLayer::Engine::charge_pool(RecvState& r) {
  if (pool_in_use_ + r.bytes > config_.pool_bytes) return false;
  if (r.bytes > kSmallPoolBlock) {
    r.pool = std::make_unique_for_overwrite<std::byte[]>(r.bytes);
  } else if (!small_pool_blocks_.empty()) {
    r.pool = std::move(small_pool_blocks_.back());
    small_pool_blocks_.pop_back();
  } else {
    r.pool = std::make_unique_for_overwrite<std::byte[]>(kSmallPoolBlock);
  }
  pool_in_use_ += r.bytes;
  stats_.pool_bytes_in_use = pool_in_use_;
  stats_.pool_bytes_max = std::max<std::uint64_t>(stats_.pool_bytes_max, pool_in_use_);
  return true;
}

void MessageLayer::Engine::place(RecvState& r, std::uint64_t offset,
                                 std::span<const std::byte> data) {
  if (r.unexpected)
    copy_into({r.pool.get(), r.bytes}, offset, data);
  else if (r.target.kind == RecvTarget::Kind::iov)
    scatter_into(r.target.iov, offset, data);
  else
    copy_into(r.target.buffer, offset, data);
}

void MessageLayer::Engine::data_arrived(std::uint32_t id, RecvState& r, std::uint64_t offset,
                                        std::span<const std::byte> data) {
  place(r, offset, data);
  r.received += data.size();
  if (r.received == r.bytes) complete(id, r);
}

void MessageLayer::Engine::complete(std::uint32_t id, RecvState& r) {
  r.data_complete = true;
  protocol_ops(r.protocol).complete(*this, id, r, sources_[r.source]);
  auto& c = stats_.protocol[static_cast<std::size_t>(r.protocol)];
  ++c.messages_received;
  c.bytes_received += r.bytes;
  record_latency(r.protocol, r.vt_origin);
  if (!r.unexpected) finish_receive(id, r);
}

void MessageLayer::Engine::finish_receive(std::uint32_t id, RecvState& r) {
  const RecvTarget target = r.target;
  // Data beyond the destination's size were dropped: report what fitted (MPI truncation).
  const std::uint64_t capacity =
      target.kind == RecvTarget::Kind::iov ? iov_bytes(target.iov) : target.buffer.size();
  const std::uint64_t delivered = std::min(r.bytes, capacity);
  if (trace_) [[unlikely]]
    trace_receive(r.source, r.bytes, r.protocol);
  recvs_.release(id);
  blocked_fifos_ = 0;  // a receive slot is free again
  ++delivered_;
  if (target.done) target.done(target.context, id, delivered);
}

void MessageLayer::Engine::accept(RecvHandle handle, const RecvTarget& target) {
  RecvState* r = recvs_.find(handle.id);
  if (!r || !r->unexpected)
    throw std::invalid_argument("accept() of a message that is not waiting for a buffer");
  if (target.kind == RecvTarget::Kind::later)
    throw std::invalid_argument("accept() needs a destination");
  r->target = target;
  r->unexpected = false;
  --stats_.unexpected_depth;
  if (r->pool) {
    // Whatever arrived so far, at its offsets (the rest of the pool copy is overwritten by the
    // packets still to come, which now go straight to the target).
    place(*r, 0, {r->pool.get(), r->bytes});
  }
  release_pool(*r);
  protocol_ops(r->protocol).accepted(*this, handle.id, *r);
}

void MessageLayer::Engine::release_pool(RecvState& r) {
  if (!r.pool) return;
  pool_in_use_ -= r.bytes;
  stats_.pool_bytes_in_use = pool_in_use_;
  if (r.bytes <= kSmallPoolBlock && small_pool_blocks_.size() < kSmallPoolBlocksKept) {
    if (small_pool_blocks_.capacity() == 0) small_pool_blocks_.reserve(kSmallPoolBlocksKept);
    small_pool_blocks_.push_back(std::move(r.pool));
  }
  r.pool.reset();
  blocked_fifos_ = 0;
}

// Once per task, when messages held for receives not posted yet take most entries: if they take
// them all, a receive that waits for a message behind them (from another source) never completes.
void MessageLayer::Engine::report_table_full() {
  table_full_reported_ = true;
  spdlog::warn(
      "rank {}: all {} receive entries are taken ({} by messages whose receives are not posted "
      "yet); further messages wait for an entry, and a receive waiting for one of them waits "
      "until others are received (BGL_ML_MAX_RECVS raises the limit)",
      rank(), config_.max_receives, stats_.unexpected_depth);
}

void MessageLayer::Engine::malformed(const packet_layer::PacketHeader& h, const char* why) {
  malformed(h.source_rank(), why, &h);
}

// Logged at a limited rate (a faulty or hostile peer can send millions), always counted.
void MessageLayer::Engine::malformed(Rank source, const char* why,
                                     const packet_layer::PacketHeader* h) {
  ++malformed_packets_;
  malformed_log_.report(rank(), "", malformed_packets_, [&] {
    spdlog::error("rank {}: discarding packet from rank {}: {}{}", rank(), source, why,
                  h ? " [" + h->describe() + "]" : std::string());
  });
}

bool MessageLayer::Engine::advance() {
  // With virtual time, packets that arrive after this task's clock wait until it has sent what it
  // can: a polling processor would not have found them yet.
  bool received = receive_some(vt_ != nullptr) | (!co_active_.empty() && coprocessor_complete());
  const bool sent = send_some();
  if (vt_ && !received && !sent) [[unlikely]]
    received = receive_some(false);
  return received || sent;
}

}  // namespace bgl::message_layer
