// The receive side: dispatch on packet type, matching up-calls, placement at offsets, the
// unexpected pool, completion, and validation of everything a peer's packet claims.
#include <sys/uio.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <string>

#include "bgl/log.hpp"
#include "engine.hpp"
#include "placement.hpp"

namespace bgl::msg {
namespace {

// What a receiver's first packet costs, by protocol: matching, and for a rendezvous the answer.
// Indexed by Protocol.
constexpr double virtual_time::Params::*kMatchCost[] = {
    &virtual_time::Params::one_packet_recv_cycles, &virtual_time::Params::eager_recv_cycles,
    &virtual_time::Params::rzv_match_cycles, &virtual_time::Params::adaptive_recv_cycles,
    &virtual_time::Params::vn_recv_cycles};
static_assert(std::size(kMatchCost) == kProtocols);

// Early adaptive-eager data buffers larger than this are freed once their message is matched.
constexpr std::size_t kKeptStaging = 64 * 1024;

Protocol protocol_of(std::uint8_t first_packet_type) {
  switch (first_packet_type) {
    case wire::kOnePacket:
      return Protocol::one_packet;
    case wire::kEagerFirst:
      return Protocol::eager;
    case wire::kAeFirst:
      return Protocol::adaptive_eager;
    case wire::kVnRts:
      return Protocol::virtual_node;
    default:
      return Protocol::rendezvous;
  }
}

}  // namespace

// Held adaptive-eager first packets whose predecessors have been matched now.
bool MessageLayer::Engine::release_held() {
  bool progress = false;
  for (std::size_t i = 0; i < held_sources_.size();) {
    const Rank source = held_sources_[i];
    SourceState& src = sources_[source];
    const pkt::Packet& p = *src.held;
    const std::span<const std::byte> payload(p.payload.data(), p.header.payload_bytes);
    vt_origin_ = src.held_vt_origin;
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
    src.held.reset();
    held_sources_[i] = held_sources_.back();
    held_sources_.pop_back();
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
      const pkt::Packet& p = hold_[src.stall_head].packet;
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
  if (!held_sources_.empty()) progress |= release_held();
  if (!stalled_.empty()) progress |= release_stalled();
  const std::uint64_t delivered = delivered_;
  // Up to kBudget packets, but back to the caller as soon as a message was delivered: its
  // progress loop may be waiting for just that (one reception poll less on the latency path).
  for (int budget = kBudget; budget > 0 && delivered_ == delivered; --budget) {
    pkt::FifoRef f;
    const pkt::Packet* packet = ep_.next(f, blocked_fifos_, arrived_only);
    if (!packet) break;
    const pkt::Packet& p = *packet;
    const pkt::PacketHeader& h = p.header;
    const std::span<const std::byte> payload(p.payload.data(), h.payload_bytes);
    if (vt_) [[unlikely]]
      vt_origin_ = ep_.stamp_of(f, p).origin;
    const Taken t = h.dispatch == wire::kOnePacket ? take_one_packet(h, payload) : take(h, payload);
    if (t == Taken::blocked) {
      // No room to hold it: leave the packet where it is (backpressure towards its sender) until
      // resources free up.
      blocked_fifos_ |= 1u << f.index;
      continue;
    }
    ep_.discard(f, p);  // the data were copied straight from the FIFO slot to their destination
    progress = true;
    if (!held_sources_.empty()) release_held();
    if (!stalled_.empty()) release_stalled();
  }
  return progress;
}

// A packet from a reception FIFO. Packets of a source with a stall queue that must stay in order
// behind it join the queue; a first packet whose message must wait starts one.
MessageLayer::Engine::Taken MessageLayer::Engine::take(const pkt::PacketHeader& h,
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

// The one-packet message, the latency path: checked, matched and delivered here without the
// general dispatch when nothing unusual goes on (its source has no stall queue, the message is next
// in sequence, a receive entry and room to hold a packet are free). Anything else goes to take(),
// which checks again and decides exactly as for any first packet.
MessageLayer::Engine::Taken MessageLayer::Engine::take_one_packet(
    const pkt::PacketHeader& h, std::span<const std::byte> payload) {
  const Rank source = h.source_rank();
  if (source >= static_cast<std::uint32_t>(size_) || payload.size() < wire::kFirstBytes)
    return take(h, payload);
  SourceState& src = sources_[source];
  const auto first = wire::load<wire::First>(payload);
  const std::size_t prefix = wire::kFirstBytes + first.header_bytes;
  if (src.stall_head != kNone || first.header_bytes > kMaxUserHeader || prefix > payload.size() ||
      first.handler >= kMaxHandlers || first.seq != src.expected_seq ||
      payload.size() - prefix != first.bytes() || hold_free_.empty() || recvs_.full())
    return take(h, payload);
  const auto [handler, context] = handlers_[first.handler];
  if (!handler) return take(h, payload);
  const std::uint64_t bytes = first.bytes();
  const auto data = payload.subspan(prefix);
  std::uint32_t id = 0;
  // The entry's other fields are set only if the message turns out unexpected (below): a message
  // delivered at once needs none of them.
  RecvState& r = *recvs_.acquire_as_is(id);
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
  auto& stats = stats_.protocol[static_cast<std::size_t>(Protocol::one_packet)];
  ++stats.packets_received;
  charge(&virtual_time::Params::one_packet_recv_cycles);
  const RecvTarget target = handler(context, arrival);
  if (target.kind == RecvTarget::Kind::later) {
    r = RecvState{};
    r.protocol = Protocol::one_packet;
    r.vt_origin = vt_origin_;
    r.source = source;
    r.bytes = bytes;
    r.sender_slot = h.word;
    r.target = target;
    Taken t = unexpected(id, r, src, data);
    if (t == Taken::hold) t = hold_packet(source, h, payload) ? Taken::consumed : Taken::blocked;
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
  record_latency(Protocol::one_packet, vt_origin_);
  recvs_.release(id);
  blocked_fifos_ = 0;  // a receive slot is free again
  ++delivered_;
  if (trace_) [[unlikely]]
    trace_receive(source, bytes, Protocol::one_packet);
  if (target.done) target.done(target.context, id, std::min(bytes, capacity));
  return Taken::consumed;
}

// The packets that must not overtake a stalled message of their source: its ordered stream (first
// packets and eager data), and an adaptive-eager first packet whose turn it is (a later one waits
// in `held`). Rendezvous data, acks, fins and tokens never depend on it.
bool MessageLayer::Engine::joins_stall(const pkt::PacketHeader& h,
                                       std::span<const std::byte> payload,
                                       const SourceState& src) const {
  switch (h.dispatch) {
    case wire::kOnePacket:
    case wire::kEagerFirst:
    case wire::kEagerData:
    case wire::kScout:
    case wire::kVnRts:
      return true;
    case wire::kAeFirst:
      return payload.size() >= wire::kFirstBytes &&
             wire::load<wire::First>(payload).seq == src.expected_seq;
    default:
      return false;
  }
}

bool MessageLayer::Engine::hold_packet(Rank source, const pkt::PacketHeader& h,
                                       std::span<const std::byte> payload) {
  if (hold_free_.empty()) {
    ++stats_.hold_full_waits;
    return false;
  }
  const std::uint32_t i = hold_free_.back();
  hold_free_.pop_back();
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
  hold_free_.push_back(i);
  --stats_.held_packets;
  blocked_fifos_ = 0;  // room to hold packets again
}

MessageLayer::Engine::Taken MessageLayer::Engine::dispatch(const pkt::PacketHeader& h,
                                                           std::span<const std::byte> payload,
                                                           bool from_queue) {
  switch (h.dispatch) {
    case wire::kOnePacket:
    case wire::kEagerFirst:
    case wire::kScout:
    case wire::kVnRts:
    case wire::kAeFirst:
      return on_first(h, payload, from_queue);
    case wire::kEagerData:
      on_eager_data(h, payload);
      break;
    case wire::kRzvAck:
      if (payload.size() != sizeof(wire::Ack))
        malformed(h, "ack of the wrong size");
      else
        on_ack(h.source_rank(), payload);
      break;
    case wire::kRzvData:
      on_rzv_data(h, payload);
      break;
    case wire::kRzvFin:
      on_fin(h);
      break;
    case wire::kAeData:
      on_ae_data(h, payload);
      break;
    case wire::kAeToken:
      on_token(h.source_rank());
      break;
    default:
      if (h.dispatch >= kForeignDispatchFirst && h.dispatch <= kForeignDispatchLast) {
        const auto& [handler, context] = packet_handlers_[h.dispatch - kForeignDispatchFirst];
        if (handler) {
          handler(context, h, payload);
          break;
        }
      }
      malformed(h, "unknown packet type");
  }
  return Taken::consumed;
}

MessageLayer::Engine::Taken MessageLayer::Engine::on_first(const pkt::PacketHeader& h,
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
  const Protocol protocol = protocol_of(h.dispatch);
  const std::uint64_t bytes = first.bytes();
  const auto chunk = payload.subspan(prefix);
  const Rank source = h.source_rank();
  SourceState& src = sources_[source];
  if ((protocol == Protocol::one_packet && chunk.size() != bytes) ||
      (protocol == Protocol::rendezvous && !chunk.empty()) ||
      (protocol == Protocol::virtual_node && chunk.size() != sizeof(wire::VnSource)) ||
      (protocol != Protocol::virtual_node && chunk.size() > bytes))
    return malformed(h, "data size disagrees with the message size"), Taken::consumed;
  if ((protocol == Protocol::eager || protocol == Protocol::adaptive_eager) &&
      bytes >= wire::kParityBit)
    return malformed(h, "eager message beyond the eager protocols' 2 GiB"), Taken::consumed;
  if (protocol == Protocol::virtual_node && (!sibling_ || source != *sibling_))
    return malformed(h, "virtual-node request from a task that is not this node's other task"),
           Taken::consumed;
  if (protocol == Protocol::eager && src.eager != kNone)
    return malformed(h, "eager message starts inside another"), Taken::consumed;
  if (protocol == Protocol::adaptive_eager && (h.word & ~wire::kParityBit) != 0)
    return malformed(h, "adaptive-eager first packet at a nonzero offset"), Taken::consumed;
  if (protocol == Protocol::adaptive_eager &&
      (src.adaptive != kNone || ((h.word & wire::kParityBit) != 0) != src.parity))
    return malformed(h, "adaptive-eager message out of turn"), Taken::consumed;
  if (first.seq != src.expected_seq) {
    // Only an adaptively routed first packet can overtake earlier messages of its sender, and the
    // token allows one in flight: hold it until its predecessors are matched. A number behind the
    // expected one (half the number space back) was used already.
    const auto ahead = static_cast<std::uint16_t>(first.seq - src.expected_seq);
    if (protocol != Protocol::adaptive_eager || src.held || ahead >= 0x8000)
      return malformed(h, "message out of sequence"), Taken::consumed;
    src.held.emplace();
    std::memcpy(&src.held->header, &h, sizeof h);
    std::memcpy(src.held->payload.data(), payload.data(), payload.size());
    src.held_vt_origin = vt_origin_;
    held_sources_.push_back(source);
    return Taken::consumed;
  }
  return match(h, payload, first, from_queue);
}

// The handler is asked first: a message it gives a destination needs no pool. Only a message
// answered "later" is charged to the pool; without room it waits in its source's stall queue
// (backpressure for that source alone) until pool space frees up or accept() names a destination.
MessageLayer::Engine::Taken MessageLayer::Engine::match(const pkt::PacketHeader& h,
                                                        std::span<const std::byte> payload,
                                                        const wire::First& first, bool from_queue) {
  // A packet still in its FIFO may have to be held: without room for that it stays in the FIFO.
  if (!from_queue && hold_free_.empty()) {
    ++stats_.hold_full_waits;
    return Taken::blocked;
  }
  if (recvs_.full()) {
    if (!from_queue) ++stats_.table_waits;
    return Taken::hold;  // the handler runs once an entry is free
  }
  const Protocol protocol = protocol_of(h.dispatch);
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
  if (protocol == Protocol::virtual_node) r.vn = wire::load<wire::VnSource>(chunk);
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
  charge(kMatchCost[static_cast<std::size_t>(protocol)]);
  r.target = handler(context, arrival);
  if (r.target.kind == RecvTarget::Kind::later) return unexpected(id, r, src, chunk);
  start(id, r, src, chunk);
  return Taken::consumed;
}

// The handler answered "later": the message's data go to the pool, if it has room.
MessageLayer::Engine::Taken MessageLayer::Engine::unexpected(std::uint32_t id, RecvState& r,
                                                             SourceState& src,
                                                             std::span<const std::byte> chunk) {
  r.unexpected = true;
  ++stats_.unexpected_messages;
  stats_.unexpected_depth_max = std::max(stats_.unexpected_depth_max, ++stats_.unexpected_depth);
  if (!slotted(r.protocol) && r.bytes > 0 && !charge_pool(r)) {
    r.pool_wait = true;
    ++stats_.pool_waits;
    src.resume = id;
    return Taken::hold;
  }
  start(id, r, src, chunk);
  return Taken::consumed;
}

// The stall queue's head is the first packet of a matched message that waited for pool space.
MessageLayer::Engine::Taken MessageLayer::Engine::resume(SourceState& src, const pkt::Packet& p) {
  const std::uint32_t id = src.resume;
  RecvState& r = *recvs_.find(id);
  if (r.pool_wait) {
    if (r.unexpected && !charge_pool(r)) return Taken::blocked;
    r.pool_wait = false;  // pool space, or accept() gave it a destination
  }
  src.resume = kNone;
  const std::span<const std::byte> payload(p.payload.data(), p.header.payload_bytes);
  const auto first = wire::load<wire::First>(payload);
  start(id, r, src, payload.subspan(wire::kFirstBytes + first.header_bytes));
  return Taken::consumed;
}

bool MessageLayer::Engine::charge_pool(RecvState& r) {
  if (pool_in_use_ + r.bytes > config_.pool_bytes) return false;
  r.pool = std::make_unique_for_overwrite<std::byte[]>(r.bytes);
  pool_in_use_ += r.bytes;
  stats_.pool_bytes_in_use = pool_in_use_;
  stats_.pool_bytes_max = std::max<std::uint64_t>(stats_.pool_bytes_max, pool_in_use_);
  return true;
}

// The message's destination (or pool) is known: its first packet's data go there.
void MessageLayer::Engine::start(std::uint32_t id, RecvState& r, SourceState& src,
                                 std::span<const std::byte> chunk) {
  switch (r.protocol) {
    case Protocol::rendezvous:
    case Protocol::virtual_node:
      if (!r.unexpected) begin_receive(r, id);
      break;
    case Protocol::eager:
      if (chunk.size() < r.bytes) src.eager = id;
      data_arrived(id, r, 0, chunk);
      break;
    case Protocol::adaptive_eager:
      src.adaptive = id;
      src.parity = !src.parity;
      unstage(src, r, chunk.size());
      if (recvs_.find(id)) data_arrived(id, r, 0, chunk);
      break;
    case Protocol::one_packet:
      data_arrived(id, r, 0, chunk);
      break;
  }
}

void MessageLayer::Engine::on_eager_data(const pkt::PacketHeader& h,
                                         std::span<const std::byte> payload) {
  SourceState& src = sources_[h.source_rank()];
  RecvState* r = src.eager == kNone ? nullptr : recvs_.find(src.eager);
  if (!r) return malformed(h, "eager data without a message in progress");
  if (!fits(*r, h.word, payload.size())) return malformed(h, "eager data beyond the message");
  // The ordered stream delivers a message's eager data in order, each packet where the last ended.
  if (h.word != r->received) return malformed(h, "eager data out of order");
  ++stats_.protocol[static_cast<std::size_t>(Protocol::eager)].packets_received;
  charge(&virtual_time::Params::eager_data_cycles);
  data_arrived(src.eager, *r, h.word, payload);
}

void MessageLayer::Engine::on_rzv_data(const pkt::PacketHeader& h,
                                       std::span<const std::byte> payload) {
  RecvState* r = recvs_.find(h.word);
  if (!r || !slotted(r->protocol) || r->unexpected || r->on_coprocessor ||
      r->source != h.source_rank())
    return malformed(h, "rendezvous data for no matched message");
  if (payload.size() < wire::kRzvIndexBytes)
    return malformed(h, "rendezvous data packet too short");
  const std::uint64_t offset = std::uint64_t{wire::load<std::uint32_t>(payload)} * wire::kRzvChunk;
  const auto data = payload.subspan(wire::kRzvIndexBytes);
  if (!fits(*r, offset, data.size())) return malformed(h, "rendezvous data beyond the message");
  // Every chunk but the message's last is full.
  if (data.size() != std::min<std::uint64_t>(wire::kRzvChunk, r->bytes - offset))
    return malformed(h, "rendezvous data chunk of the wrong size");
  ++stats_.protocol[static_cast<std::size_t>(r->protocol)].packets_received;
  charge(&virtual_time::Params::rzv_data_cycles);
  data_arrived(h.word, *r, offset, data);
}

void MessageLayer::Engine::on_ae_data(const pkt::PacketHeader& h,
                                      std::span<const std::byte> payload) {
  SourceState& src = sources_[h.source_rank()];
  const bool parity = (h.word & wire::kParityBit) != 0;
  const std::uint64_t offset = h.word & ~wire::kParityBit;
  ++stats_.protocol[static_cast<std::size_t>(Protocol::adaptive_eager)].packets_received;
  charge(&virtual_time::Params::adaptive_data_cycles);
  RecvState* r = src.adaptive == kNone ? nullptr : recvs_.find(src.adaptive);
  // The message in progress has the parity before the flip made when its first packet arrived.
  if (r && parity != src.parity) {
    if (!fits(*r, offset, payload.size()))
      return malformed(h, "adaptive-eager data beyond the message");
    data_arrived(src.adaptive, *r, offset, payload);
    return;
  }
  if (r || parity != src.parity) return malformed(h, "adaptive-eager data out of turn");
  // Overtook its first packet: keep it until the first packet says where it goes. The token lets
  // one adaptive-eager message per source be in flight, so a source's early data never exceed
  // the largest adaptive-eager message (staging_limit_).
  if (payload.empty() || offset + payload.size() > staging_limit_)
    return malformed(h, "adaptive-eager data beyond the largest adaptive-eager message");
  if (src.staging.size() + payload.size() > staging_limit_)
    return malformed(h, "early adaptive-eager data beyond the largest adaptive-eager message");
  ++stats_.early_adaptive_packets;
  src.staging.insert(src.staging.end(), payload.begin(), payload.end());
  src.staged.emplace_back(offset, static_cast<std::uint32_t>(payload.size()));
  staged_bytes_ += payload.size();
  stats_.early_adaptive_bytes = staged_bytes_;
  stats_.early_adaptive_bytes_max = std::max(stats_.early_adaptive_bytes_max, staged_bytes_);
}

void MessageLayer::Engine::unstage(SourceState& src, RecvState& r, std::size_t first_bytes) {
  const std::uint32_t id = src.adaptive;
  std::size_t at = 0;
  for (const auto& [offset, n] : src.staged) {
    const std::span<const std::byte> data(src.staging.data() + at, n);
    at += n;
    // The first packet's own data (offset 0) arrive after these: leave room for them.
    if (offset < first_bytes || !fits(r, offset, n) || n + first_bytes > r.bytes - r.received) {
      malformed(r.source, "early adaptive-eager data beyond the message", nullptr);
      continue;
    }
    data_arrived(id, r, offset, data);
    if (!recvs_.find(id)) break;  // completed (and released) by this data
  }
  drop_staging(src);
}

void MessageLayer::Engine::drop_staging(SourceState& src) {
  staged_bytes_ -= src.staging.size();
  stats_.early_adaptive_bytes = staged_bytes_;
  src.staged.clear();
  src.staging.clear();
  // A large burst of early data (a big adaptive-eager message) does not keep its memory.
  if (src.staging.capacity() > kKeptStaging) {
    src.staging.shrink_to_fit();
    src.staged.shrink_to_fit();
  }
}

// The destination is known: a virtual-node message is copied now, straight from the sender's
// memory; a rendezvous (or a virtual-node message whose copy is refused) asks for the data.
void MessageLayer::Engine::begin_receive(RecvState& r, std::uint32_t id) {
  if (r.protocol == Protocol::virtual_node && copy_from_sender(r)) {
    charge_copy(r.bytes);
    r.received = r.bytes;
    complete(id, r);
    return;
  }
  begin_rendezvous_data(r, id);
}

bool MessageLayer::Engine::copy_from_sender(RecvState& r) {
  if (vn_copy_refused_) return false;
  if (r.vn.pid != ep_.machine().task(r.source).pid) {
    spdlog::error(
        "rank {}: virtual-node message from rank {} names pid {}, not the task's; streaming it "
        "instead",
        rank(), r.source, r.vn.pid);
    return false;
  }
  std::array<iovec, 64> local{};
  std::size_t count = 0;
  if (r.target.kind == RecvTarget::Kind::iov) {
    if (r.target.iov.size() > local.size()) return false;  // too many pieces for one call: stream
    std::uint64_t left = r.bytes;
    for (const iovec& v : r.target.iov) {
      if (left == 0 || count == local.size()) break;
      local[count++] = {v.iov_base,
                        static_cast<std::size_t>(std::min<std::uint64_t>(v.iov_len, left))};
      left -= local[count - 1].iov_len;
    }
  } else {
    local[count++] = {r.target.buffer.data(), static_cast<std::size_t>(std::min<std::uint64_t>(
                                                  r.target.buffer.size(), r.bytes))};
  }
  const std::uint64_t want = iov_bytes({local.data(), count});
  std::uint64_t done = 0;
  // process_vm_readv may copy less than asked (large transfers): continue where it stopped.
  while (done < want) {
    std::size_t skip = done, first = 0;
    while (skip >= local[first].iov_len)
      skip -= local[first++].iov_len;
    std::array<iovec, 64> part{};
    std::size_t n = 0;
    for (std::size_t i = first; i < count; ++i, ++n)
      part[n] = local[i];
    part[0].iov_base = static_cast<std::byte*>(part[0].iov_base) + skip;
    part[0].iov_len -= skip;
    const iovec remote{reinterpret_cast<void*>(r.vn.address + done),
                       static_cast<std::size_t>(want - done)};
    const ssize_t got = process_vm_readv(r.vn.pid, part.data(), n, &remote, 1, 0);
    if (got <= 0) {
      const int error = errno;
      if (done == 0 && (error == EPERM || error == ENOSYS)) {
        // The kernel forbids it (Yama's ptrace_scope, a non-dumpable sender, no such system
        // call): say so once, then every virtual-node message streams.
        vn_copy_refused_ = true;
        spdlog::warn(
            "rank {}: the kernel refuses process_vm_readv from rank {} ({}); virtual-node messages "
            "stream through the virtual FIFO instead (see BGL_ML_VN_COPY in docs/CONFIGURATION.md)",
            rank(), r.source, std::strerror(error));
      } else {
        spdlog::warn(
            "rank {}: process_vm_readv from rank {} failed after {} of {} bytes ({}); this "
            "message streams through the virtual FIFO instead",
            rank(), r.source, done, want, std::strerror(error));
      }
      if (done == 0) return false;
      break;
    }
    done += static_cast<std::uint64_t>(got);
  }
  return done == want;
}

// A memory copy by the processor at the streaming rate.
void MessageLayer::Engine::charge_copy(std::uint64_t bytes) {
  if (vt_)
    ep_.clock().charge(
        virtual_time::Params::ticks(static_cast<double>(bytes) / vt_->copy_bytes_per_cycle));
}

void MessageLayer::Engine::begin_rendezvous_data(RecvState& r, std::uint32_t id) {
  auto group =
      static_cast<std::uint32_t>(ep_.group());  // this task's FIFO group (its t in VN mode)
  if (coprocessor_eligible(r)) {
    CoReceive& d = co_table_[id & (SlotTable<int>::kMaxCapacity - 1)];
    d.buffer = r.target.buffer.data();
    d.bytes = r.bytes;
    d.received.store(0, std::memory_order_relaxed);
    charge(&virtual_time::Params::coprocessor_unit_cycles);  // posting the work unit
    d.vt_posted = vt_ ? ep_.clock().now() : 0;
    d.id.store(id, std::memory_order_release);  // published before the ack can bring data
    r.on_coprocessor = true;
    co_active_.push_back(id);
    ++stats_.coprocessor_messages;
    group = 1;
  }
  send_control({r.source, wire::kRzvAck, 0, wire::Ack{r.sender_slot, id, group}});
  if (r.bytes == 0) complete(id, r);
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
  if (r.protocol == Protocol::rendezvous) charge(&virtual_time::Params::rzv_complete_cycles);
  r.data_complete = true;
  SourceState& src = sources_[r.source];
  switch (r.protocol) {
    case Protocol::eager:
      if (src.eager == id) src.eager = kNone;
      break;
    case Protocol::adaptive_eager:
      src.adaptive = kNone;
      send_control({r.source, wire::kAeToken, 0, {}});
      break;
    case Protocol::rendezvous:
    case Protocol::virtual_node:
      send_control({r.source, wire::kRzvFin, r.sender_slot, {}});
      break;
    case Protocol::one_packet:
      break;
  }
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
  if (slotted(r->protocol))
    begin_receive(*r, handle.id);
  else if (r->data_complete)
    finish_receive(handle.id, *r);
}

void MessageLayer::Engine::release_pool(RecvState& r) {
  if (!r.pool) return;
  pool_in_use_ -= r.bytes;
  stats_.pool_bytes_in_use = pool_in_use_;
  r.pool.reset();
  blocked_fifos_ = 0;
}

void MessageLayer::Engine::malformed(const pkt::PacketHeader& h, const char* why) {
  malformed(h.source_rank(), why, &h);
}

// Logged at a limited rate (a faulty or hostile peer can send millions), always counted.
void MessageLayer::Engine::malformed(Rank source, const char* why, const pkt::PacketHeader* h) {
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

}  // namespace bgl::msg
