// The send side: per-destination queues, the protocols' send steps in turn, the data of
// acknowledged messages, control packets.
#include <unistd.h>

#include <cstring>
#include <stdexcept>
#include <string>

#include "bgl/job_runtime/log.hpp"
#include "bgl/torus_emu/route.hpp"
#include "data_copy.hpp"
#include "engine.hpp"
#include "protocols/protocol_ops.hpp"

namespace bgl::message_layer {
namespace {

std::size_t one_packet_capacity(std::size_t header_bytes) {
  return packet_layer::kMaxPayloadBytes - wire::kFirstBytes - header_bytes;
}

}  // namespace

MessageLayer::Engine::Engine(packet_layer::Endpoint& endpoint, Config config)
    : ep_(endpoint),
      vt_(endpoint.vt_params()),
      trace_(endpoint.trace()),
      config_(config),
      size_(endpoint.machine().mapping().size()),
      handlers_(kMaxHandlers, {nullptr, nullptr}),
      dests_(static_cast<std::size_t>(size_)),
      traffic_(static_cast<std::size_t>(size_)),
      rzv_sends_(config.max_rendezvous),
      // Every receive produces at most two control packets (ack, then fin or token). Left
      // uninitialised: entries are written before they are read, and untouched pages cost nothing.
      control_capacity_(2 * std::size_t{config.max_receives} + 16),
      controls_(std::make_unique_for_overwrite<Control[]>(control_capacity_)),
      sources_(static_cast<std::size_t>(size_)),
      recvs_(config.max_receives),
      hold_(config.hold_packets) {
  active_.reserve(static_cast<std::size_t>(size_));
  if (config.hold_packets == 0) throw std::invalid_argument("hold_packets must be at least 1");
  stalled_.reserve(static_cast<std::size_t>(size_));
  held_.reserve(static_cast<std::size_t>(size_));
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
  if (machine.config().mode == job_runtime::NodeMode::coprocessor) start_coprocessor();
  if (machine.config().mode == job_runtime::NodeMode::virtual_node) {
    const auto here = machine.mapping().location(endpoint.rank());
    sibling_ = machine.mapping().rank_at(here.node, 1 - here.t);
    if (config.vn_direct_copy && config.vn_cells && sibling_) {
      vn_out_cells_ = &machine.virtual_cells(here.node, here.t);
      vn_in_cells_ = &machine.virtual_cells(here.node, 1 - here.t);
    }
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
  first_protocol_.fill(kProtocols);
  for (const ProtocolOps* ops : kProtocolTable) {
    first_protocol_[ops->first_packet] = static_cast<std::uint8_t>(ops->id);
    for (const PacketOps& p : ops->packets)
      packet_ops_[p.type] = &p;
  }
  const auto& shape = endpoint.machine().shape();
  for (Rank r = 0; r < static_cast<Rank>(size_); ++r) {
    DestState& d = dests_[r];
    d.where = endpoint.destination_of(r);
    const auto route = torus_emu::deterministic_route(shape, endpoint.node(), d.where.node);
    d.fifo =
        static_cast<std::uint8_t>(route.hops() ? torus_emu::index_of(route.steps()[0]) : r % 6);
  }
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
  // choose() picks a protocol by size only for messages it can carry; a forced one may not fit.
  if (m.protocol || config_.limits.forced) [[unlikely]]
    protocol_ops(p).check_post(*this, m, bytes);
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
  if (p == Protocol::one_packet && !d.head && may_start(d) &&
      protocols::inject_one_packet(*this, m, d, bytes)) {
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
  if (control_count_ == 0 && !sent_head_ && active_.empty() && !data_head_) return false;
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
  if (active_.empty()) return (data_head_ && send_data_some(budget)) || progress;
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
      const Step step = protocol_ops(m.state.protocol).send(*this, m, d);
      budget -= static_cast<int>(m.state.packets - before);
      progress |= m.state.packets != before;
      if (step == Step::blocked) break;
      if (step == Step::finished) {
        --queued_;
        d.head = m.state.next;
        if (!d.head) d.tail = nullptr;
        m.state.next = nullptr;
        // Read after send(): a protocol may hand a message to another (virtual-node to eager).
        if (!protocol_ops(m.state.protocol).slotted || m.state.phase == kPhaseDoneAtInjection)
          finish_send(m);
      }
    }
    d.active = d.head != nullptr && may_start(d);
    if (d.active) active_.push_back(dest);
  }
  next_active_ = active_.empty() ? 0 : (next_active_ + 1) % active_.size();
  return (data_head_ && send_data_some(budget)) || progress;
}

// The data of all acknowledged messages, a burst of each in turn within what is left of the
// budget: messages to different destinations leave over their links at the same time instead of
// one after the other.
bool MessageLayer::Engine::send_data_some(int budget) {
  bool progress = false;
  SendMessage* prev = nullptr;
  SendMessage* m = data_head_;
  while (m && budget > 0) {
    const std::uint32_t before = m->state.packets;
    const Step step = protocol_ops(m->state.protocol).send_data(*this, *m);
    budget -= static_cast<int>(m->state.packets - before);
    progress |= m->state.packets != before;
    if (step == Step::blocked) break;
    SendMessage* next = m->state.next;
    if (step == Step::finished) {
      (prev ? prev->state.next : data_head_) = next;
      if (data_tail_ == m) data_tail_ = prev;
      m->state.next = nullptr;
      finish_send(*m);
    } else {
      prev = m;
    }
    m = next;
  }
  return progress;
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
  if (!begin) return trace_->end(job_runtime::TraceCategory::message, trace_names_.send, id);
  trace_->begin(job_runtime::TraceCategory::message, trace_names_.send, id,
                {static_cast<std::int64_t>(m.dest), m.data.size(),
                 trace_names_.protocol[static_cast<std::size_t>(m.state.protocol)]});
}

void MessageLayer::Engine::trace_receive(Rank source, std::uint64_t bytes, Protocol p) {
  trace_->instant(job_runtime::TraceCategory::message, trace_names_.recv,
                  {static_cast<std::int64_t>(source), bytes,
                   trace_names_.protocol[static_cast<std::size_t>(p)]});
}

void MessageLayer::Engine::send_control(const Control& c) {
  ++stats_.control_packets_sent;
  if (control_count_ == 0 && inject_control(c)) return;
  if (control_count_ == control_capacity_) {
    // Cannot happen: each receive slot owes at most two control packets.
    spdlog::critical("rank {}: control queue overflow", rank());
    std::abort();
  }
  controls_[(control_head_ + control_count_++) % control_capacity_] = c;
}

bool MessageLayer::Engine::inject_control(const Control& c) {
  const packet_layer::PacketSpec spec{
      .dest = ep_.destination_of(c.dest),
      .dispatch = c.type,
      .word = c.word,
      .vt_cycles = c.type == wire::kAeToken ? cost(&virtual_time::Params::token_cycles) : 0};
  const std::span<const std::byte> ack(reinterpret_cast<const std::byte*>(&c.ack), sizeof c.ack);
  const auto payload = c.type == wire::kRzvAck ? ack : std::span<const std::byte>{};
  return ep_.inject(kControlFifo, spec, payload) == packet_layer::InjectStatus::ok;
}

bool MessageLayer::Engine::flush_controls() {
  bool progress = false;
  while (control_count_ > 0 && inject_control(controls_[control_head_])) {
    control_head_ = (control_head_ + 1) % control_capacity_;
    --control_count_;
    progress = true;
  }
  return progress;
}

void MessageLayer::Engine::queue_data(SendMessage& m) {
  if (data_tail_)
    data_tail_->state.next = &m;
  else
    data_head_ = &m;
  data_tail_ = &m;
}

bool MessageLayer::Engine::idle() const {
  return queued_ == 0 && active_.empty() && sent_head_ == nullptr && data_head_ == nullptr &&
         rzv_sends_.in_use() == 0 && control_count_ == 0 && co_active_.empty() &&
         ep_.injection_idle();
}

}  // namespace bgl::message_layer
