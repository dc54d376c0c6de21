// The send side: per-destination queues, protocol steps, rendezvous data, control packets.
#include <sys/prctl.h>
#include <unistd.h>

#include <cerrno>

#include <cstring>
#include <stdexcept>
#include <string>

#include "bgl/log.hpp"
#include "bgl/torus/route.hpp"
#include "engine.hpp"
#include "placement.hpp"

namespace bgl::msg {
namespace {

constexpr int kDataFifo = 6;     // adaptive data: order does not matter
constexpr int kControlFifo = 7;  // acks, fins, tokens

std::size_t one_packet_capacity(std::size_t header_bytes) {
  return pkt::kMaxPayloadBytes - wire::kFirstBytes - header_bytes;
}

}  // namespace

MessageLayer::Engine::Engine(pkt::Endpoint& endpoint, Config config)
    : ep_(endpoint),
      vt_(endpoint.vt_params()),
      trace_(endpoint.trace()),
      config_(config),
      size_(endpoint.machine().mapping().size()),
      handlers_(kMaxHandlers, {nullptr, nullptr}),
      dests_(static_cast<std::size_t>(size_)),
      traffic_(static_cast<std::size_t>(size_)),
      rzv_sends_(config.max_rendezvous),
      // Every receive produces at most two control packets (ack, then fin or token).
      controls_(2 * std::size_t{config.max_receives} + 16),
      sources_(static_cast<std::size_t>(size_)),
      recvs_(config.max_receives) {
  active_.reserve(static_cast<std::size_t>(size_));
  if (config.hold_packets == 0) throw std::invalid_argument("hold_packets must be at least 1");
  hold_.resize(config.hold_packets);
  hold_free_.reserve(config.hold_packets);
  for (std::uint32_t i = config.hold_packets; i-- > 0;)
    hold_free_.push_back(i);
  stalled_.reserve(static_cast<std::size_t>(size_));
  held_sources_.reserve(static_cast<std::size_t>(size_));
  vn_copy_refused_ = !config.vn_direct_copy;
  pid_ = getpid();
  if (trace_) {
    trace_names_.send = trace_->intern("send");
    trace_names_.recv = trace_->intern("receive");
    for (int p = 0; p < kProtocols; ++p)
      trace_names_.protocol[static_cast<std::size_t>(p)] =
          trace_->intern(to_string(static_cast<Protocol>(p)));
  }
  const auto& machine = endpoint.machine();
  if (machine.config().mode == pkt::NodeMode::coprocessor) start_coprocessor();
  if (machine.config().mode == pkt::NodeMode::virtual_node) {
    const auto here = machine.mapping().location(endpoint.rank());
    sibling_ = machine.mapping().rank_at(here.node, 1 - here.t);
    // The two tasks of a node share its memory: each buffers half of the node's unexpected data.
    config_.pool_bytes /= 2;
  }
  stats_.pool_bytes_limit = config_.pool_bytes;
  // The largest adaptive-eager message a peer may send, and so the most early data one source may
  // leave here: the eager limit, or the pool's size for a message that asks for adaptive eager
  // itself (early data are unexpected data), or the protocol's 2 GiB when the job forces it.
  staging_limit_ = config_.limits.forced == Protocol::adaptive_eager
                       ? wire::kParityBit
                       : std::min<std::uint64_t>(wire::kParityBit,
                                                 std::max<std::uint64_t>(config_.limits.eager_limit,
                                                                         config_.pool_bytes));
  visiting_.reserve(static_cast<std::size_t>(size_));
  const auto& shape = endpoint.machine().shape();
  for (Rank r = 0; r < static_cast<Rank>(size_); ++r) {
    DestState& d = dests_[r];
    d.where = endpoint.destination_of(r);
    const auto route = torus::deterministic_route(shape, endpoint.node(), d.where.node);
    d.fifo = static_cast<std::uint8_t>(route.hops() ? torus::index_of(route.steps()[0]) : r % 6);
  }
}

// The receiver of a virtual-node message reads this task's memory. Where Yama restricts ptrace to
// descendants (kernel.yama.ptrace_scope = 1, the default of several distributions) only a task
// this one names may do so: name the node's other task. Without Yama the call fails harmlessly
// (EINVAL) and ordinary same-user permission applies.
void MessageLayer::Engine::allow_sibling_reads(Rank sibling) {
  const std::int32_t pid = ep_.machine().task(sibling).pid;
  if (pid <= 0) return;  // not attached yet: try again with the next message
  vn_reader_allowed_ = true;
  if (::prctl(PR_SET_PTRACER, static_cast<unsigned long>(pid), 0, 0, 0) != 0 && errno != EINVAL)
    spdlog::debug("rank {}: PR_SET_PTRACER for rank {} failed: {}", rank(), sibling,
                  std::strerror(errno));
}

void MessageLayer::Engine::register_handler(HandlerId id, ArrivalHandler handler, void* context) {
  if (id >= kMaxHandlers) throw std::invalid_argument("handler id must be below 64");
  handlers_[id] = {handler, context};
}

void MessageLayer::Engine::register_packet_handler(std::uint8_t dispatch, PacketHandler handler,
                                                   void* context) {
  if (dispatch < kForeignDispatchFirst || dispatch > kForeignDispatchLast)
    throw std::invalid_argument(
        "packet handlers take dispatch ids " + std::to_string(kForeignDispatchFirst) + ".." +
        std::to_string(kForeignDispatchLast) + ", not " + std::to_string(dispatch));
  packet_handlers_[dispatch - kForeignDispatchFirst] = {handler, context};
}

Protocol MessageLayer::Engine::choose(const SendMessage& m) const {
  return choose(m, m.data.size());
}

Protocol MessageLayer::Engine::choose(const SendMessage& m, std::size_t bytes) const {
  if (m.protocol) return *m.protocol;
  const bool to_sibling = sibling_ && m.dest == *sibling_ && m.data.iov.empty();
  if (config_.limits.forced && (*config_.limits.forced != Protocol::virtual_node || to_sibling))
    return *config_.limits.forced;
  if (bytes <= one_packet_capacity(m.header.size())) return Protocol::one_packet;
  if (to_sibling) return Protocol::virtual_node;
  if (bytes <= config_.limits.eager_limit)
    return config_.limits.adaptive_eager ? Protocol::adaptive_eager : Protocol::eager;
  return Protocol::rendezvous;
}

void MessageLayer::Engine::post(SendMessage& m) {
  if (m.dest >= static_cast<Rank>(size_))
    throw std::invalid_argument("message to rank " + std::to_string(m.dest) + " of a " +
                                std::to_string(size_) + "-task job");
  if (m.header.size() > kMaxUserHeader)
    throw std::invalid_argument("user header of " + std::to_string(m.header.size()) +
                                " bytes exceeds " + std::to_string(kMaxUserHeader));
  if (m.handler >= kMaxHandlers) throw std::invalid_argument("handler id must be below 64");
  const std::size_t bytes = m.data.size();
  const Protocol p = choose(m, bytes);
  if (p == Protocol::one_packet && bytes > one_packet_capacity(m.header.size()))
    throw std::invalid_argument(
        "one-packet protocol forced for " + std::to_string(bytes) + " bytes; at most " +
        std::to_string(one_packet_capacity(m.header.size())) + " fit with this header");
  if (p == Protocol::virtual_node && (!sibling_ || m.dest != *sibling_ || !m.data.iov.empty()))
    throw std::invalid_argument(
        "the virtual-node protocol needs a contiguous message to this node's other "
        "task in virtual-node mode");
  if ((p == Protocol::eager || p == Protocol::adaptive_eager) && bytes >= wire::kParityBit)
    throw std::invalid_argument("eager protocols carry at most 2 GiB; use rendezvous");
  auto& s = m.state;
  // The bookkeeping only (header_copy is written below if the message has to wait).
  s.next = nullptr;
  s.offset = 0;
  s.packets = 0;
  s.remote_id = 0;
  s.local_id = 0;
  s.phase = 0;
  s.data_group = 0;
  s.protocol = p;
  if (trace_) [[unlikely]]
    trace_send(m, true);
  s.header_bytes = static_cast<std::uint8_t>(m.header.size());
  if (vt_) [[unlikely]]
    s.vt_posted = ep_.clock().now();  // read only with virtual time on
  DestState& d = dests_[m.dest];
  s.seq = d.next_seq++;
  // Fast path: a one-packet message to a destination with nothing queued goes out at once (the
  // latency of the next advance()'s reception poll saved), its header straight from the caller's
  // buffer; done() still runs from advance().
  if (p == Protocol::one_packet && !d.head && may_start(d) && inject_one_packet(m, d, bytes)) {
    if (sent_tail_)
      sent_tail_->state.next = &m;
    else
      sent_head_ = &m;
    sent_tail_ = &m;
    return;
  }
  if (!m.header.empty()) std::memcpy(s.header_copy, m.header.data(), m.header.size());
  ++queued_;
  if (d.tail)
    d.tail->state.next = &m;
  else
    d.head = &m;
  d.tail = &m;
  activate(m.dest);
}

void MessageLayer::Engine::activate(Rank dest) {
  DestState& d = dests_[dest];
  if (!d.active && d.head && may_start(d)) {
    d.active = true;
    active_.push_back(dest);
  }
}

// Round-robin over destinations with queued messages; a destination's messages go strictly one
// after another (so the receiver can attribute ordered data packets), then rendezvous data.
bool MessageLayer::Engine::send_some() {
  // Nothing to send (the common case of a progress call on the receive path): done.
  if (control_count_ == 0 && !sent_head_ && active_.empty() && !rzv_head_) return false;
  bool progress = control_count_ != 0 && flush_controls();
  // Messages post() sent at once; their done() may post again (onto a fresh list).
  while (sent_head_) {
    SendMessage& m = *sent_head_;
    sent_head_ = m.state.next;
    if (!sent_head_) sent_tail_ = nullptr;
    m.state.next = nullptr;
    finish_send(m);
    progress = true;
  }
  int budget = kBudget;
  if (active_.empty()) return (rzv_head_ && send_rzv_some(budget)) || progress;
  // Callbacks below may post messages (activating destinations): they land in the fresh active_.
  visiting_.clear();
  std::swap(visiting_, active_);
  const std::size_t n = visiting_.size();
  for (std::size_t i = 0; i < n; ++i) {
    const Rank dest = visiting_[(next_active_ + i) % n];
    DestState& d = dests_[dest];
    while (d.head && budget > 0) {
      if (!may_start(d)) {
        ++stats_.token_waits;
        break;
      }
      SendMessage& m = *d.head;
      const std::uint32_t before = m.state.packets;
      const Step step = send_step(m, d);
      budget -= static_cast<int>(m.state.packets - before);
      progress |= m.state.packets != before;
      if (step == Step::blocked) break;
      if (step == Step::finished) {
        --queued_;
        d.head = m.state.next;
        if (!d.head) d.tail = nullptr;
        m.state.next = nullptr;
        if (!slotted(m.state.protocol)) finish_send(m);
      }
    }
    d.active = d.head != nullptr && may_start(d);
    if (d.active) active_.push_back(dest);
  }
  next_active_ = active_.empty() ? 0 : (next_active_ + 1) % active_.size();
  return (rzv_head_ && send_rzv_some(budget)) || progress;
}

// Rendezvous data of acknowledged messages, oldest first, within what is left of the budget.
// Rendezvous data of all acknowledged messages, a burst of each in turn: messages to different
// destinations leave over their links at the same time instead of one after the other.
bool MessageLayer::Engine::send_rzv_some(int budget) {
  bool progress = false;
  SendMessage* prev = nullptr;
  SendMessage* m = rzv_head_;
  while (m && budget > 0) {
    const std::uint32_t before = m->state.packets;
    const Step step = send_rzv_data(*m);
    budget -= static_cast<int>(m->state.packets - before);
    progress |= m->state.packets != before;
    if (step == Step::blocked) break;
    SendMessage* next = m->state.next;
    if (step == Step::finished) {
      (prev ? prev->state.next : rzv_head_) = next;
      if (rzv_tail_ == m) rzv_tail_ = prev;
      m->state.next = nullptr;
      finish_send(*m);
    } else {
      prev = m;
    }
    m = next;
  }
  return progress;
}

MessageLayer::Engine::Step MessageLayer::Engine::send_step(SendMessage& m, DestState& d) {
  switch (m.state.protocol) {
    case Protocol::one_packet:
      return send_one_packet(m);
    case Protocol::eager:
      return send_eager(m, d, false);
    case Protocol::adaptive_eager:
      return send_eager(m, d, true);
    case Protocol::rendezvous:
      return send_scout(m, false);
    case Protocol::virtual_node:
      return send_scout(m, true);
  }
  return Step::blocked;
}

std::span<const std::byte> MessageLayer::Engine::first_prefix(const SendMessage& m,
                                                              std::byte* buffer) const {
  const std::uint64_t bytes = m.data.size();
  const wire::First f{m.handler, m.state.header_bytes, m.state.seq,
                      static_cast<std::uint32_t>(bytes), static_cast<std::uint32_t>(bytes >> 32)};
  std::memcpy(buffer, &f, sizeof f);
  std::memcpy(buffer + sizeof f, m.state.header_copy, m.state.header_bytes);
  return {buffer, sizeof f + m.state.header_bytes};
}

// The next n data bytes at `offset`: a view of the caller's buffer, or gathered into `scratch`.
std::span<const std::byte> MessageLayer::Engine::data_view(const SendMessage& m, std::size_t offset,
                                                           std::size_t n,
                                                           std::byte* scratch) const {
  if (m.data.iov.empty()) return m.data.buffer.subspan(offset, n);
  return {scratch, gather_from(m.data.iov, offset, {scratch, n})};
}

// post()'s one-packet message: [First][user header] built on the stack from the caller's header,
// the data gathered only if they are a list. False: the injection FIFO is full (the message then
// waits in its destination's queue like any other).
bool MessageLayer::Engine::inject_one_packet(SendMessage& m, const DestState& d,
                                             std::size_t bytes) {
  std::byte prefix[wire::kFirstBytes + kMaxUserHeader];
  const wire::First f{m.handler, m.state.header_bytes, m.state.seq,
                      static_cast<std::uint32_t>(bytes), 0};
  std::memcpy(prefix, &f, sizeof f);
  if (!m.header.empty()) std::memcpy(prefix + sizeof f, m.header.data(), m.header.size());
  std::byte scratch[pkt::kMaxPayloadBytes];
  const auto data = m.data.iov.empty() ? m.data.buffer
                                       : std::span<const std::byte>{
                                             scratch, gather_from(m.data.iov, 0, {scratch, bytes})};
  const pkt::PacketSpec spec{.dest = d.where,
                             .dispatch = wire::kOnePacket,
                             .vt_cycles = cost(&virtual_time::Params::one_packet_send_cycles),
                             .vt_origin = m.state.vt_posted};
  if (ep_.inject(ordered_fifo(m.dest), spec, {prefix, sizeof f + m.header.size()}, data) ==
      pkt::InjectStatus::full)
    return false;
  m.state.packets = 1;
  m.state.offset = bytes;
  return true;
}

MessageLayer::Engine::Step MessageLayer::Engine::send_one_packet(SendMessage& m) {
  std::byte prefix[pkt::kMaxPayloadBytes], scratch[pkt::kMaxPayloadBytes];
  const auto head = first_prefix(m, prefix);
  const auto data = data_view(m, 0, m.data.size(), scratch);
  const pkt::PacketSpec spec{.dest = ep_.destination_of(m.dest),
                             .dispatch = wire::kOnePacket,
                             .vt_cycles = cost(&virtual_time::Params::one_packet_send_cycles),
                             .vt_origin = m.state.vt_posted};
  if (ep_.inject(ordered_fifo(m.dest), spec, head, data) == pkt::InjectStatus::full)
    return Step::blocked;
  ++m.state.packets;
  m.state.offset = m.data.size();
  return Step::finished;
}

MessageLayer::Engine::Step MessageLayer::Engine::send_eager(SendMessage& m, DestState& d,
                                                            bool adaptive) {
  auto& s = m.state;
  const std::size_t bytes = m.data.size();
  const int fifo = adaptive ? kDataFifo : ordered_fifo(m.dest);
  pkt::PacketSpec spec{.dest = ep_.destination_of(m.dest),
                       .routing = adaptive ? pkt::Routing::adaptive : pkt::Routing::deterministic,
                       .vt_origin = s.vt_posted};
  if (adaptive && s.packets == 0) s.phase = d.parity;  // this message's parity bit
  const std::uint32_t parity = adaptive && s.phase ? wire::kParityBit : 0;
  std::byte prefix[pkt::kMaxPayloadBytes], scratch[pkt::kMaxPayloadBytes];
  for (;;) {
    std::span<const std::byte> head;
    std::size_t room = pkt::kMaxPayloadBytes;
    using P = virtual_time::Params;
    if (s.packets == 0) {
      head = first_prefix(m, prefix);
      room -= head.size();
      spec.dispatch = adaptive ? wire::kAeFirst : wire::kEagerFirst;
      spec.vt_cycles = cost(adaptive ? &P::adaptive_send_cycles : &P::eager_send_cycles);
    } else {
      spec.dispatch = adaptive ? wire::kAeData : wire::kEagerData;
      spec.vt_cycles = cost(adaptive ? &P::adaptive_data_cycles : &P::eager_data_cycles);
    }
    spec.word = static_cast<std::uint32_t>(s.offset) | parity;
    const std::size_t n = std::min(room, bytes - s.offset);
    if (ep_.inject(fifo, spec, head, data_view(m, s.offset, n, scratch)) == pkt::InjectStatus::full)
      return Step::blocked;
    if (adaptive && s.packets == 0) {
      d.token = false;  // until the receiver has this message
      d.parity = !d.parity;
    }
    ++s.packets;
    s.offset += n;
    if (s.offset == bytes) return Step::finished;
    if (s.packets % 16 == 0) return Step::more;  // let other destinations in
  }
}

// Rendezvous scout, or the virtual-node request that also says where the data are.
MessageLayer::Engine::Step MessageLayer::Engine::send_scout(SendMessage& m, bool virtual_node) {
  auto& s = m.state;
  if (!rzv_sends_.acquire(s.local_id)) return Step::blocked;  // table full: wait for fins
  std::byte prefix[pkt::kMaxPayloadBytes];
  const pkt::PacketSpec spec{
      .dest = ep_.destination_of(m.dest),
      .dispatch = virtual_node ? wire::kVnRts : wire::kScout,
      .word = s.local_id,
      .vt_cycles = cost(virtual_node ? &virtual_time::Params::vn_send_cycles
                                     : &virtual_time::Params::rzv_send_cycles),
      .vt_origin = s.vt_posted};
  // Only the virtual-node request says where the data are (the pid is cached: getpid() is a
  // syscall, and a rendezvous used to pay it on every scout).
  if (virtual_node && !vn_reader_allowed_) allow_sibling_reads(m.dest);
  wire::VnSource source{};
  std::span<const std::byte> where;
  if (virtual_node) {
    source = {reinterpret_cast<std::uintptr_t>(m.data.buffer.data()), pid_, 0};
    where = std::as_bytes(std::span(&source, 1));
  }
  if (ep_.inject(ordered_fifo(m.dest), spec, first_prefix(m, prefix), where) ==
      pkt::InjectStatus::full) {
    rzv_sends_.release(s.local_id);
    return Step::blocked;
  }
  *rzv_sends_.find(s.local_id) = RzvSend{&m, m.dest, m.remote_done != nullptr};
  ++s.packets;
  s.phase = 1;  // waiting for the ack
  return Step::finished;
}

MessageLayer::Engine::Step MessageLayer::Engine::send_rzv_data(SendMessage& m) {
  auto& s = m.state;
  const std::size_t bytes = m.data.size();
  pkt::PacketSpec spec{.dest = ep_.destination_of(m.dest),
                       .dispatch = wire::kRzvData,
                       .word = s.remote_id,
                       .routing = pkt::Routing::adaptive,
                       .vt_cycles = cost(&virtual_time::Params::rzv_data_cycles),
                       .vt_origin = s.vt_posted};
  spec.dest.group = s.data_group;
  std::byte scratch[pkt::kMaxPayloadBytes];
  for (int i = 0; i < 16 && s.offset < bytes; ++i) {
    const auto index = static_cast<std::uint32_t>(s.offset / wire::kRzvChunk);
    const std::size_t n = std::min(wire::kRzvChunk, bytes - s.offset);
    const std::span<const std::byte> prefix(reinterpret_cast<const std::byte*>(&index),
                                            sizeof index);
    if (ep_.inject(ordered_fifo(m.dest), spec, prefix, data_view(m, s.offset, n, scratch)) ==
        pkt::InjectStatus::full)
      return Step::blocked;
    ++s.packets;
    s.offset += n;
  }
  return s.offset == bytes ? Step::finished : Step::more;
}

void MessageLayer::Engine::finish_send(SendMessage& m) {
  auto& c = stats_.protocol[static_cast<std::size_t>(m.state.protocol)];
  ++c.messages_sent;
  c.packets_sent += m.state.packets;
  c.bytes_sent += m.data.size();
  auto& pair = traffic_[m.dest];
  ++pair.messages;
  pair.bytes += m.data.size();
  if (trace_) [[unlikely]]
    trace_send(m, false);
  if (m.done) m.done(m);
}

void MessageLayer::Engine::trace_send(const SendMessage& m, bool begin) {
  const auto id = reinterpret_cast<std::uintptr_t>(&m);
  if (!begin) return trace_->end(pkt::TraceCategory::message, trace_names_.send, id);
  trace_->begin(pkt::TraceCategory::message, trace_names_.send, id,
                {static_cast<std::int64_t>(m.dest), m.data.size(),
                 trace_names_.protocol[static_cast<std::size_t>(m.state.protocol)]});
}

void MessageLayer::Engine::trace_receive(Rank source, std::uint64_t bytes, Protocol p) {
  trace_->instant(pkt::TraceCategory::message, trace_names_.recv,
                  {static_cast<std::int64_t>(source), bytes,
                   trace_names_.protocol[static_cast<std::size_t>(p)]});
}

void MessageLayer::Engine::on_ack(Rank source, std::span<const std::byte> payload) {
  const auto ack = wire::load<wire::Ack>(payload);
  RzvSend* r = rzv_sends_.find(ack.sender_slot);
  if (!r || !r->message || r->message->state.phase != 1 || r->dest != source)
    return malformed(source, "rendezvous ack for no send waiting for one", nullptr);
  if (ack.data_group >= pkt::kFifoGroups)
    return malformed(source, "rendezvous ack names a FIFO group that does not exist", nullptr);
  charge(&virtual_time::Params::rzv_ack_cycles);
  SendMessage& m = *r->message;
  m.state.remote_id = ack.receiver_slot;
  m.state.data_group = static_cast<std::uint8_t>(ack.data_group);
  m.state.phase = 2;
  if (!r->notify_remote) r->message = nullptr;  // the caller may reuse it after done()
  if (m.data.size() == 0) {
    finish_send(m);
    return;
  }
  if (rzv_tail_)
    rzv_tail_->state.next = &m;
  else
    rzv_head_ = &m;
  rzv_tail_ = &m;
}

void MessageLayer::Engine::on_fin(const pkt::PacketHeader& h) {
  RzvSend* r = rzv_sends_.find(h.word);
  if (!r || r->dest != h.source_rank()) return malformed(h, "rendezvous fin for no send");
  SendMessage* m = r->message;
  // A fin ends a rendezvous once all its data went out; before the ack only a virtual-node message
  // (the receiver copied it) may end.
  if (m && m->state.phase == 1 && m->state.protocol != Protocol::virtual_node)
    return malformed(h, "rendezvous fin before the ack");
  if (m && m->state.phase == 2 && m->state.offset < m->data.size())
    return malformed(h, "rendezvous fin before all data were sent");
  const bool notify = r->notify_remote;
  // A fin without an ack: the receiver copied the data itself (virtual-node protocol).
  const bool copied = m && m->state.phase == 1;
  rzv_sends_.release(h.word);
  if (copied) finish_send(*m);                       // may hand the message back to its owner...
  if (notify && m->remote_done) m->remote_done(*m);  // ...unless it asked to hear this too
}

void MessageLayer::Engine::on_token(Rank source) {
  DestState& d = dests_[source];
  if (d.token) return malformed(source, "adaptive-eager token that was never lent", nullptr);
  // The receiver returns it when it has the whole message: not while this one still sends it.
  const SendMessage* head = d.head;
  if (head && head->state.protocol == Protocol::adaptive_eager && head->state.packets > 0 &&
      head->state.offset < head->data.size())
    return malformed(source, "adaptive-eager token before the message was sent", nullptr);
  charge(&virtual_time::Params::token_cycles);
  d.token = true;
  activate(source);
}

void MessageLayer::Engine::send_control(const Control& c) {
  ++stats_.control_packets_sent;
  if (control_count_ == 0 && inject_control(c)) return;
  if (control_count_ == controls_.size()) {
    // Cannot happen: each receive slot owes at most two control packets.
    spdlog::critical("rank {}: control queue overflow", rank());
    std::abort();
  }
  controls_[(control_head_ + control_count_++) % controls_.size()] = c;
}

bool MessageLayer::Engine::inject_control(const Control& c) {
  const pkt::PacketSpec spec{
      .dest = ep_.destination_of(c.dest),
      .dispatch = c.type,
      .word = c.word,
      .vt_cycles = c.type == wire::kAeToken ? cost(&virtual_time::Params::token_cycles) : 0};
  const std::span<const std::byte> ack(reinterpret_cast<const std::byte*>(&c.ack), sizeof c.ack);
  const auto payload = c.type == wire::kRzvAck ? ack : std::span<const std::byte>{};
  return ep_.inject(kControlFifo, spec, payload) == pkt::InjectStatus::ok;
}

bool MessageLayer::Engine::flush_controls() {
  bool progress = false;
  while (control_count_ > 0 && inject_control(controls_[control_head_])) {
    control_head_ = (control_head_ + 1) % controls_.size();
    --control_count_;
    progress = true;
  }
  return progress;
}

bool MessageLayer::Engine::idle() const {
  return queued_ == 0 && active_.empty() && sent_head_ == nullptr && rzv_head_ == nullptr &&
         rzv_sends_.in_use() == 0 && control_count_ == 0 && co_active_.empty() &&
         ep_.injection_idle();
}

}  // namespace bgl::msg
