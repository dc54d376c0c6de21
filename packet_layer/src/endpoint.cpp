#include "bgl/packet_layer/endpoint.hpp"

#include <unistd.h>

#include <bit>
#include <cstring>
#include <optional>
#include <stdexcept>

#include "bgl/job_runtime/env.hpp"
#include "bgl/job_runtime/futex.hpp"
#include "bgl/job_runtime/log.hpp"
#include "bgl/torus_emu/route.hpp"

namespace bgl::packet_layer {
namespace {

// A task whose own packets wait for space elsewhere must not sleep long: nobody rings its bell
// when that space appears.
constexpr std::chrono::microseconds kPendingSleepCap{200};

// Tells the receiver asleep on `bell` of a packet just published.
void ring(job_runtime::Doorbell& bell, Ring how) {
  switch (how) {
    case Ring::wake:
      return bell.ring();
    case Ring::count:
      return bell.ring_counted();
    case Ring::none:
      return;
  }
}

// Packets taken from one reception FIFO before polling moves on to the next: keeps the stream's
// cache lines hot without starving the other FIFOs.
constexpr int kPollBurst = 16;

std::uint32_t injection_depth() {
  return static_cast<std::uint32_t>(job_runtime::env::get_int("BGL_INJ_FIFO_PACKETS", 1, 1 << 16)
                                        .value_or(kDefaultInjectionDepth));
}

}  // namespace

namespace {

torus_emu::Rank checked_rank(const Machine& machine, torus_emu::Rank rank, int group) {
  if (rank >= static_cast<torus_emu::Rank>(machine.mapping().size()))
    throw std::invalid_argument("endpoint for rank " + std::to_string(rank) + " of a " +
                                std::to_string(machine.mapping().size()) + "-task job");
  if (group < 0 || group >= kFifoGroups) throw std::invalid_argument("FIFO group must be 0 or 1");
  return rank;
}

}  // namespace

Endpoint::Endpoint(const Machine& machine, torus_emu::Rank rank, int group,
                   const job_runtime::WaitPolicy& policy)
    : machine_(&machine),
      rank_(checked_rank(machine, rank, group)),
      node_(machine.mapping().location(rank).node),
      group_(group),
      shm_(machine),
      bell_(&machine.doorbell(node_, group)),
      me_(machine.shape().coord(node_)),
      rng_(machine.config().seed * 0x9e3779b97f4a7c15ULL + rank + 1),
      links_(machine.shape()),
      backoff_(policy) {
  for (int i = 0; i < kReceptionFifos; ++i) {
    fifos_[static_cast<std::size_t>(i)] = machine.fifo(node_, group, i);
    fifos_[static_cast<std::size_t>(i)].attach_consumer();
  }
  const auto& shape = machine.shape();
  const auto& placement = machine.placement();
  const bool ofi = placement.transport == job_runtime::Transport::ofi;
  if (ofi) ofi_.emplace(machine.outbound(rank), machine.job().agent_bell());
  peers_.resize(static_cast<std::size_t>(shape.node_count()));
  deterministic_traffic_.resize(peers_.size());
  for (torus_emu::NodeId n = 0; n < peers_.size(); ++n) {
    const auto c = shape.coord(n);
    const auto last = torus_emu::deterministic_route(shape, node_, n).last();
    const job_runtime::NodeSlot slot = machine.node_slot(n);
    peers_[n] = Peer{{static_cast<std::uint8_t>(c.x), static_cast<std::uint8_t>(c.y),
                      static_cast<std::uint8_t>(c.z)},
                     static_cast<std::uint32_t>(c.x | c.y << 8 | c.z << 16),
                     static_cast<std::uint8_t>(last ? torus_emu::index_of(*last) : kLocalFifo),
                     // With BGL_TRANSPORT=ofi on one host every other node goes through the agent
                     // (a loopback test of the libfabric path); the node itself never does.
                     ofi && n != node_ && (!placement.local(n) || placement.host_count() == 1),
                     0,
                     static_cast<std::uint8_t>(slot == job_runtime::kNoNodeSlot ? 0 : kFifoGroups),
                     slot};
    peers_[n].hops = torus_emu::minimal_hops(shape, node_, n);
    if (peers_[n].remote && machine.job().vt_params())
      peers_[n].vt_hops = static_cast<std::uint8_t>(
          links_timed_by_sender(shape, placement, torus_emu::deterministic_route(shape, node_, n)));
    if (!peers_[n].remote && slot != job_runtime::kNoNodeSlot)
      for (int g = 0; g < kFifoGroups; ++g)
        peers_[n].lanes[static_cast<std::size_t>(g)] = {
            machine.fifo_in_slot(slot, g, peers_[n].deterministic_fifo),
            &machine.doorbell_in_slot(slot, g),
            static_cast<std::int32_t>(machine.mapping().rank_at(n, g).value_or(-1))};
  }
  const std::array<std::uint8_t, 4> here{
      static_cast<std::uint8_t>(me_.x), static_cast<std::uint8_t>(me_.y),
      static_cast<std::uint8_t>(me_.z), static_cast<std::uint8_t>(group)};
  std::memcpy(&here_, here.data(), sizeof here_);
  source_ = {static_cast<std::uint8_t>(rank_), static_cast<std::uint8_t>(rank_ >> 8),
             static_cast<std::uint8_t>(rank_ >> 16)};
  source_bits_ = std::uint64_t{static_cast<std::uint32_t>(rank_) & kMaxSourceRank} << 8;
  machine.job().task(rank).pid =
      static_cast<std::int32_t>(getpid());  // peers validate VN copies by it
  if (machine.config().mode == job_runtime::NodeMode::virtual_node) {
    virtual_out_ = &machine.virtual_fifo(node_, group);
    virtual_in_ = &machine.virtual_fifo(node_, 1 - group);
  }
  const std::uint32_t depth = injection_depth();
  std::uint32_t slot = 0;
  for (auto& q : injection_) {
    q.ring.resize(depth);
    for (auto& pending : q.ring)
      pending.slot = slot++;
  }
  if (const auto* params = machine.job().vt_params()) {
    timing_ = virtual_time::TorusTiming(*params, machine.shape(), machine.calendars(),
                                        machine.link_index());
    line_arrivals_.resize(slot);
    vt_injection_depth_ = static_cast<std::uint32_t>(params->injection_fifo_packets);
    meter_ = virtual_time::ComputeMeter(params->cpu_factor * params->cpu_hz / 1e9);
    horizon_ = machine.horizon();
    if (horizon_) {
      held_.emplace(machine.config().ntasks());
      horizon_.on_wake(
          [](std::atomic<std::uint32_t>& signal) { job_runtime::futex_wake_all(signal); });
    }
    // A packet arrives at least a transit after its departure, which a task's published clock
    // may already include: a node's own packet, the virtual FIFO, or one hop.
    lookahead_ = std::max<virtual_time::Tick>(
        1, std::min({virtual_time::Params::ticks(params->local_packet_cycles),
                     virtual_time::Params::ticks(params->vn_packet_cycles),
                     virtual_time::Params::ticks(params->hop_cycles) +
                         params->link_cycles(static_cast<std::uint32_t>(kChunkBytes))}));
  }
}

// The packet is written into its injection FIFO once the FIFO has room: when it is full, the task
// waits for the oldest packet's tail to leave the node.
std::uint64_t Endpoint::depart(std::uint32_t software_cycles) {
  clock_.charge(software_cycles +
                virtual_time::Params::ticks(timing_.params().packet_write_cycles));
  auto& q = vt_injection_[static_cast<std::size_t>(injecting_)];
  if (q.count == vt_injection_depth_) {
    clock_.arrive(q.left[q.head]);
    q.head = (q.head + 1) % vt_injection_depth_;
    --q.count;
  }
  if (horizon_) [[unlikely]]
    depart_in_order();
  return clock_.now();
}

// Links are reserved in the order of their packets' departures: a packet leaves only when no other
// task can still send one that leaves earlier.
void Endpoint::depart_in_order() {
  while (!departs_first(clock_.now()) && !held_too_long()) {
    ++counters_.vt_held;
    // A sender whose packets wait for room in this task's FIFOs may be the one holding it back.
    hold_arrivals();
    wait_for_others(virtual_time::kNever);
  }
  held_since_ = {};
}

void Endpoint::left_node(std::uint64_t when) {
  auto& q = vt_injection_[static_cast<std::size_t>(injecting_)];
  q.left[(q.head + q.count) % vt_injection_depth_] = when;
  ++q.count;
}

std::uint64_t Endpoint::arrival_over(const torus_emu::Route& route, std::uint32_t packet_bytes,
                                     std::uint32_t software_cycles) {
  const auto t = timing_.transit(route, depart(software_cycles), packet_bytes);
  left_node(t.left);
  return t.arrival;
}

std::uint64_t Endpoint::head_over(const torus_emu::Route& route, std::uint32_t packet_bytes,
                                  std::uint32_t software_cycles, int hops) {
  const auto t = timing_.transit_first(route, depart(software_cycles), packet_bytes, hops);
  left_node(t.left);
  return t.head;
}

void Endpoint::time_line(const torus_emu::Route& route, std::uint32_t packet_bytes,
                         std::uint32_t software_cycles) {
  left_node(
      timing_.transit_line(route, depart(software_cycles), packet_bytes,
                           std::span(line_scratch_).first(static_cast<std::size_t>(route.hops()))));
}

virtual_time::Stamp Endpoint::stamp_of(FifoRef f, const Packet& p) const {
  if (held_) [[unlikely]]
    return HeldPackets::stamp_of(p);
  return f.index == kVirtualFifo ? reinterpret_cast<const VirtualPacket&>(p).stamp
                                 : ReceptionFifo::stamp_of(p);
}

// Waits for the packet's arrival and reads it, once per packet however often next() shows it.
void Endpoint::take_time(FifoRef f, const Packet& p) {
  if (&p == timed_packet_) return;
  timed_packet_ = &p;
  clock_.arrive(stamp_of(f, p).arrival);
  clock_.charge(virtual_time::Params::ticks(timing_.params().packet_read_cycles));
}

// The head packet that arrived first in virtual time, over all reception FIFOs: the order the
// emulated processor would find them in, whatever order the host delivered them in.
const Packet* Endpoint::next_in_virtual_order(FifoRef& f, std::uint32_t skip, bool arrived_only) {
  if (pending_mask_) advance();
  if (held_) hold_arrivals();
  for (;;) {
    const Packet* best = nullptr;
    std::uint64_t best_arrival = 0;
    for (int i = 0; i < kReceptionFifos; ++i) {
      const FifoRef at{static_cast<std::uint8_t>(i)};
      const Packet* p = current(at);
      if (!p || (skip >> i & 1u)) continue;
      const std::uint64_t arrival = stamp_of(at, *p).arrival;
      if (!best || arrival < best_arrival) best = p, best_arrival = arrival, f = at;
    }
    if (virtual_in_ && !(skip >> kVirtualFifo & 1u)) {
      const FifoRef at{kVirtualFifo};
      if (const Packet* p = current(at); p && (!best || stamp_of(at, *p).arrival < best_arrival))
        best = p, best_arrival = stamp_of(at, *p).arrival, f = at;
    }
    if (!best || (arrived_only && best_arrival > clock_.now())) return nullptr;
    if (horizon_) [[unlikely]] {
      if (!safe(best_arrival) && !held_too_long()) return nullptr;
      held_since_ = {};
    }
    if (plainly_mine(best->header) || check(best->header) == PacketHeader::Problem::none) {
      take_time(f, *best);
      return best;
    }
    reject(f.index, check(best->header));
  }
}

// Safe when no other task can still send a packet that arrives earlier: each of them acts no
// earlier than its bound, and a packet arrives a lookahead after the action that sent it. The
// bounds are read (and this task's clock published) only when the last reading does not settle it.
bool Endpoint::safe(virtual_time::Tick arrival) {
  if (arrival < virtual_time::later(others_, lookahead_)) return true;
  others_ = horizon_.run(static_cast<int>(rank_), clock_.now());
  return arrival < virtual_time::later(others_, lookahead_);
}

// A running task may depart at its bound: a departure is safe before every other task's bound, or
// at the same time when no running task of a lower rank holds that bound (ties go by rank).
bool Endpoint::departs_first(virtual_time::Tick departure) {
  if (departure < others_) return true;
  others_ = horizon_.run(static_cast<int>(rank_), departure);
  if (departure != others_) return departure < others_;
  return horizon_.first(static_cast<int>(rank_));
}

// Waits until the others' least bound reaches `need` (kNever: until this task's departure comes
// first): rings the task holding the least bound if it is blocked (asleep in a wait that nothing
// else rings, its bound computed when it last looked), then sleeps until the others get there or a
// short time passes, rather than spinning through every other task's turn on a shared core. A
// task waiting to take a packet wakes for new packets too; one waiting to depart only when a
// sender finds its FIFOs full (it empties them first).
void Endpoint::wait_for_others(virtual_time::Tick need) {
  const auto rank = static_cast<int>(rank_);
  if (const Holder h = horizon_.holder(rank); h.actor >= 0 && !h.running()) {
    const auto where = machine_->mapping().location(static_cast<torus_emu::Rank>(h.actor));
    machine_->doorbell(where.node, where.t).ring();
    // A task waiting for a collective event takes its bound from the tasks yet to join the event,
    // when it looks: it must look again, which it does only when rung. Give it the core.
    if (h.waits == virtual_time::Horizon::Waits::for_event) return job_runtime::Backoff::yield();
  }
  constexpr std::chrono::milliseconds kLongest{10};  // the safety net counts host time
  const bool departs = need == virtual_time::kNever;
  auto& signal = horizon_.signal(rank);
  const std::uint32_t signalled = signal.load(std::memory_order_acquire);
  const std::uint32_t rings = departs ? 0 : bell_->arm();
  if (!(departs ? horizon_.watch_first(rank) : horizon_.watch(rank, need))) return;
  job_runtime::heavy_fence();
  if (departs)
    job_runtime::futex_wait(signal, signalled, kLongest);
  else if (!fifos_ready())
    job_runtime::futex_wait_either(bell_->rings, rings, signal, signalled, kLongest);
  horizon_.unwatch(rank);
}

// Nothing can arrive before the earliest packet held, nor before the others' bounds plus the
// lookahead: a processor polling in a loop finds nothing until then.
void Endpoint::spin_until_arrival() {
  others_ = horizon_.run(static_cast<int>(rank_), clock_.now());
  const virtual_time::Tick until =
      std::min(earliest_head(), virtual_time::later(others_, lookahead_));
  if (until != virtual_time::kNever && until > clock_.now()) clock_.arrive(until);
}

// A task that waits in a place that publishes no bound (a program's own polling loop) holds
// everybody back; when the others' bounds have not moved for a second, the packet is taken anyway,
// and counted. (On a loaded host the tasks that hold it back may just not have had a core: they
// still move the bounds, if slowly.)
bool Endpoint::held_too_long() {
  constexpr std::chrono::seconds kPatience{1};
  const auto now = std::chrono::steady_clock::now();
  if (held_since_ == std::chrono::steady_clock::time_point{} || others_ != held_at_) {
    held_since_ = now;
    held_at_ = others_;
    return false;
  }
  if (now - held_since_ < kPatience) return false;
  held_since_ = {};
  ++counters_.vt_unsafe;
  if (spdlog::should_log(spdlog::level::debug)) {
    const Holder h = horizon_.holder(static_cast<int>(rank_));
    spdlog::debug(
        "rank {}: takes a packet before it is safe, at clock {}: held back by rank {} "
        "(bound {}, {})",
        rank_, clock_.now(), h.actor, h.bound, h.running() ? "running" : "waiting");
  }
  return true;
}

// Publishes this task blocked: it acts no earlier than its earliest packet (or a packet delivered
// from now on), its clock, and a lookahead before its own packets still waiting to be delivered
// (their receivers must not pass them). Returns its earliest packet's arrival (kNever: none).
virtual_time::Tick Endpoint::park() {
  horizon_.arm(static_cast<int>(rank_));
  const virtual_time::Tick earliest = earliest_head();
  others_ =
      horizon_.block(static_cast<int>(rank_), pending_bound(std::max(clock_.now(), earliest)));
  return earliest;
}

void Endpoint::park_for_event(std::uint64_t event) {
  if (!horizon_) return;
  horizon_.arm(static_cast<int>(rank_), virtual_time::Horizon::Waits::for_event, event);
  others_ = horizon_.block_for_event(static_cast<int>(rank_), event, clock_.now(), earliest_head(),
                                     pending_bound(virtual_time::kNever));
}

// Everything in the reception FIFOs and the virtual FIFO moves to the held packets.
void Endpoint::hold_arrivals() {
  for (int i = 0; i < kReceptionFifos; ++i) {
    ReceptionFifo& fifo = fifos_[static_cast<std::size_t>(i)];
    for (const Packet* p; (p = fifo.front()) != nullptr; fifo.pop())
      held_->add(i, *p, ReceptionFifo::stamp_of(*p));
  }
  for (const Packet* p; (p = virtual_front()) != nullptr; virtual_in_->pop())
    held_->add(kVirtualFifo, *p, reinterpret_cast<const VirtualPacket&>(*p).stamp);
}

// The earliest arrival among the packets at the heads of this task's FIFOs (kNever: none).
virtual_time::Tick Endpoint::earliest_head() {
  if (held_) hold_arrivals();
  virtual_time::Tick earliest = virtual_time::kNever;
  for (int i = 0; i < kReceptionFifos; ++i) {
    const FifoRef at{static_cast<std::uint8_t>(i)};
    if (const Packet* p = current(at)) earliest = std::min(earliest, stamp_of(at, *p).arrival);
  }
  if (virtual_in_)
    if (const Packet* p = current(FifoRef{kVirtualFifo}))
      earliest = std::min(earliest, stamp_of(FifoRef{kVirtualFifo}, *p).arrival);
  return earliest;
}

// `bound`, or a lookahead before the arrival of a packet of this task still waiting to be
// delivered, if that is earlier.
virtual_time::Tick Endpoint::pending_bound(virtual_time::Tick bound) const {
  for (std::uint32_t mask = pending_mask_; mask != 0; mask &= mask - 1) {
    const InjectionFifo& q = injection_[static_cast<std::size_t>(__builtin_ctz(mask))];
    for (std::uint32_t k = 0; k < q.count; ++k) {
      const Pending& p = q.ring[(q.head + k) % q.ring.size()];
      const virtual_time::Tick arrival =
          p.packet.header.deposit() ? line_arrivals_[p.slot][p.delivered] : p.stamp.arrival;
      bound = std::min(bound, arrival > lookahead_ ? arrival - lookahead_ : 0);
    }
  }
  return bound;
}

// Publishes this task blocked until a barrier's release: it takes no packet before then, so its
// packets do not lower it; only its own undelivered packets bound it.
void Endpoint::park_until_release() {
  horizon_.arm(static_cast<int>(rank_), virtual_time::Horizon::Waits::for_release);
  others_ = horizon_.block(static_cast<int>(rank_), pending_bound(virtual_time::kNever));
}

// A packet just went into a task's FIFO: if that task is blocked, it may now act at the packet's
// arrival (before this task publishes a later bound of its own).
void Endpoint::delivered(torus_emu::NodeId node, std::uint8_t group, virtual_time::Tick arrival) {
  const std::int32_t actor = peers_[node].lanes[group].actor;
  if (actor >= 0 && horizon_.delivered(actor, arrival)) others_ = 0;  // H may have fallen
}

Destination Endpoint::destination_of(torus_emu::Rank rank) const {
  const auto loc = machine_->mapping().location(rank);
  return {loc.node, static_cast<std::uint8_t>(loc.t)};
}

void Endpoint::check_spec(const PacketSpec& spec, std::size_t payload) const {
  const auto& shape = machine_->shape();
  if (payload > kMaxPayloadBytes)
    throw std::invalid_argument("packet payload of " + std::to_string(payload) +
                                " bytes exceeds 240");
  if (spec.dest.node >= static_cast<torus_emu::NodeId>(shape.node_count()) ||
      spec.dest.group >= kFifoGroups)
    throw std::invalid_argument("packet destination outside the partition");
  // A deposit-bit line may end at a node without tasks (its copies reach only nodes with tasks).
  if (!spec.deposit_line && peers_[spec.dest.node].groups == 0)
    throw std::invalid_argument("packet destination node " +
                                torus_emu::to_string(shape.coord(spec.dest.node)) +
                                " hosts no task of the job");
  if (spec.deposit_line) {
    if (spec.routing != Routing::deterministic)
      throw std::invalid_argument("deposit-bit packets must be deterministically routed");
    auto line = torus_emu::make_line(shape, node_, spec.dest.node, *spec.deposit_line);
    if (!line.line) throw std::invalid_argument(line.error);
  }
}

void Endpoint::build_header(const PacketSpec& spec, std::size_t payload, PacketHeader& h) const {
  h.dest = peers_[spec.dest.node].coord;
  h.dest_group = spec.dest.group;
  h.flags = static_cast<std::uint8_t>(
      (spec.routing == Routing::adaptive ? PacketHeader::kAdaptive : 0) |
      (spec.high_priority ? PacketHeader::kHighPriority : 0) |
      (spec.deposit_line ? PacketHeader::kDeposit | (torus_emu::index_of(*spec.deposit_line)
                                                     << PacketHeader::kLineDirShift)
                         : 0));
  h.chunks = chunks_for(payload);
  h.payload_bytes = static_cast<std::uint8_t>(payload);
  h.dispatch = spec.dispatch;
  h.source = source_;
  h.word = spec.word;
  h.seal();
}

std::uint8_t Endpoint::route_and_account(const PacketSpec& spec, std::uint8_t chunks,
                                         std::uint64_t& arrival) {
  const std::uint32_t bytes = chunks * static_cast<std::uint32_t>(kChunkBytes);
  // The node's other task in virtual-node mode: through the scratchpad, no torus link
  // (high-priority packets keep their own FIFO, so they still overtake normal traffic).
  if (virtual_out_ && spec.dest.node == node_ && spec.dest.group != group_ && !spec.deposit_line &&
      !spec.high_priority) {
    ++counters_.virtual_packets;
    if (timed())
      arrival =
          depart(spec.vt_cycles) + virtual_time::Params::ticks(timing_.params().vn_packet_cycles);
    return kVirtualFifo;
  }
  if (!spec.deposit_line && spec.routing == Routing::deterministic) {
    auto& traffic = deterministic_traffic_[spec.dest.node];
    ++traffic.packets;
    traffic.bytes += bytes;
    if (timed()) {
      const auto route = torus_emu::deterministic_route(machine_->shape(), node_, spec.dest.node);
      const Peer& peer = peers_[spec.dest.node];
      // Another host's node: that host's agent times the links its host keeps.
      arrival = peer.remote ? head_over(route, bytes, spec.vt_cycles, peer.vt_hops)
                            : arrival_over(route, bytes, spec.vt_cycles);
    }
    return spec.high_priority ? kHighPriorityFifo : peers_[spec.dest.node].deterministic_fifo;
  }
  const auto& shape = machine_->shape();
  torus_emu::Route route;
  if (spec.deposit_line) {
    route = torus_emu::line_route(
        shape, *torus_emu::make_line(shape, node_, spec.dest.node, *spec.deposit_line).line);
  } else {
    route = torus_emu::adaptive_route(node_, peers_[spec.dest.node].hops, rng_);
  }
  links_.account(route, bytes);
  if (timed()) {
    if (spec.deposit_line)
      time_line(route, bytes, spec.vt_cycles);
    else
      arrival = arrival_over(route, bytes, spec.vt_cycles);
  }
  if (spec.high_priority) return kHighPriorityFifo;
  const auto last = route.last();
  return last ? static_cast<std::uint8_t>(torus_emu::index_of(*last)) : kLocalFifo;
}

void Endpoint::fold_deterministic_traffic() const {
  const auto& shape = machine_->shape();
  for (torus_emu::NodeId n = 0; n < deterministic_traffic_.size(); ++n) {
    auto& traffic = deterministic_traffic_[n];
    if (traffic.packets == 0) continue;
    torus_emu::deterministic_route(shape, node_, n).for_each_link(shape, [&](torus_emu::Link l) {
      links_.add(l, traffic);
    });
    traffic = {};
  }
}

// The common packet (deterministically routed, normal priority, no deposit bit) is checked,
// built, accounted and pushed inline from the per-node table; everything else takes the general
// route_and_account(). Both count and account exactly the same.
InjectStatus Endpoint::inject(int fifo, const PacketSpec& spec, std::span<const std::byte> payload,
                              std::span<const std::byte> more) {
  if (fifo < 0 || fifo >= kInjectionFifos) throw std::invalid_argument("no such injection FIFO");
  const std::size_t bytes = payload.size() + more.size();
  if (bytes > kMaxPayloadBytes || spec.dest.node >= peers_.size() ||
      spec.dest.group >= peers_[spec.dest.node].groups || spec.deposit_line) [[unlikely]]
    check_spec(spec, bytes);  // throws for a bad request; checks a deposit line
  InjectionFifo& q = injection_[static_cast<std::size_t>(fifo)];
  if (q.count == q.ring.size()) [[unlikely]] {
    advance();
    if (q.count == q.ring.size()) {
      ++counters_.injection_full;
      return InjectStatus::full;
    }
  }
  Peer& peer = peers_[spec.dest.node];
  const bool plain = (spec.routing == Routing::deterministic || peer.hops.single_path()) &&
                     !spec.high_priority && !spec.deposit_line;
  // The header stays in registers (words) until a slower path needs it in memory: written as two
  // words and read back as one header, it would wait for the store buffer. Only a deposit-bit
  // line's header is built field by field.
  const std::uint8_t chunks = chunks_for(bytes);
  const std::uint32_t packet_bytes = chunks * static_cast<std::uint32_t>(kChunkBytes);
  const bool in_registers = !spec.deposit_line;
  PacketHeader h;
  ReceptionFifo::HeaderWords words{};
  if (in_registers)
    words = header_words(peer, spec, bytes);
  else
    build_header(spec, bytes, h);
  std::uint8_t index;
  virtual_time::Stamp stamp;  // virtual time only
  if (!plain || timed()) [[unlikely]] {
    injecting_ = fifo;
    index = route_and_account(spec, chunks, stamp.arrival);
    if (timed())
      stamp.origin = spec.vt_origin == kOriginAtDeparture ? clock_.now() : spec.vt_origin;
  } else if (virtual_out_ && spec.dest.node == node_ && spec.dest.group != group_) {
    ++counters_.virtual_packets;  // the node's other task: through the scratchpad, no link
    index = kVirtualFifo;
  } else {
    auto& traffic = deterministic_traffic_[spec.dest.node];
    ++traffic.packets;
    traffic.bytes += packet_bytes;
    index = peer.deterministic_fifo;
  }
  ++counters_.packets_injected;
  counters_.bytes_injected += packet_bytes;
  if (q.count == 0 && !spec.deposit_line) {
    if (plain && index != kVirtualFifo && !peer.remote && !timed()) {
      Lane& lane = peer.lanes[spec.dest.group];
      if (lane.fifo.try_push(words, payload, more)) {
        ring(*lane.bell, spec.ring);
        return InjectStatus::ok;
      }
    } else {
      h = std::bit_cast<PacketHeader>(words);
      if (push(spec.dest.node, spec.dest.group, index, h, payload, more, stamp, spec.ring))
        return InjectStatus::ok;
    }
  }
  if (in_registers) h = std::bit_cast<PacketHeader>(words);
  enqueue(fifo, h, payload, more, index, stamp);
  drain(fifo);
  return InjectStatus::ok;
}

void Endpoint::enqueue(int fifo, const PacketHeader& h, std::span<const std::byte> payload,
                       std::span<const std::byte> more, std::uint8_t index,
                       virtual_time::Stamp stamp) {
  InjectionFifo& q = injection_[static_cast<std::size_t>(fifo)];
  Pending& p = q.ring[(q.head + q.count) % q.ring.size()];
  p.packet.header = h;
  if (!payload.empty()) std::memcpy(p.packet.payload.data(), payload.data(), payload.size());
  if (!more.empty())
    std::memcpy(p.packet.payload.data() + payload.size(), more.data(), more.size());
  p.fifo_index = index;
  p.delivered = 0;
  p.stamp = stamp;
  if (timed() && h.deposit()) line_arrivals_[p.slot] = line_scratch_;
  ++q.count;
  ++pending_packets_;
  pending_mask_ |= 1u << fifo;
}

bool Endpoint::push(torus_emu::NodeId node, std::uint8_t group, std::uint8_t index,
                    const PacketHeader& h, std::span<const std::byte> payload,
                    std::span<const std::byte> more, virtual_time::Stamp stamp, Ring how) {
  if (index == kVirtualFifo) {
    if (virtual_out_->write_available() == 0) {
      peers_[node].lanes[group].bell->ring();  // full: wake its reader whatever it counts
      if (horizon_) horizon_.nudge(peers_[node].lanes[group].actor);
      return false;
    }
    VirtualPacket v;
    v.packet.header = h;
    if (!payload.empty()) std::memcpy(v.packet.payload.data(), payload.data(), payload.size());
    if (!more.empty())
      std::memcpy(v.packet.payload.data() + payload.size(), more.data(), more.size());
    v.stamp = stamp;
    virtual_out_->push(v);
    if (horizon_) delivered(node, group, stamp.arrival);
    ring(*peers_[node].lanes[group].bell, how);
    return true;
  }
  const Target to{node, group, index};
  Peer& peer = peers_[node];
  if (peer.remote) [[unlikely]] {
    if (timed()) return ofi_->try_deliver_at(to, stamp, h, payload, more);
    return ofi_->try_deliver(to, h, payload, more);
  }
  if (timed()) {
    if (!shm_.try_deliver_at(peer.slot, to, stamp, h, payload, more)) {
      if (horizon_) horizon_.nudge(peers_[node].lanes[group].actor);  // it may wait to depart
      return false;
    }
    if (horizon_) delivered(node, group, stamp.arrival);
    return true;
  }
  if (index == peer.deterministic_fifo) {
    Lane& lane = peer.lanes[group];
    if (!lane.fifo.try_push(h, payload, more)) {
      // Its reader may be asleep until a count this FIFO cannot hold (drain() comes back here).
      lane.bell->ring();
      return false;
    }
    ring(*lane.bell, how);
    return true;
  }
  return shm_.try_deliver(peer.slot, to, h, payload, more);
}

bool Endpoint::deliver(Pending& p) {
  const PacketHeader& h = p.packet.header;
  if (h.deposit()) return deliver_line(p);
  const auto node = machine_->shape().node_id(h.destination());
  if (!push(node, h.dest_group, p.fifo_index, h, {p.packet.payload.data(), h.payload_bytes}, {},
            p.stamp)) {
    ++counters_.delivery_stalls;
    return false;
  }
  return true;
}

bool Endpoint::deliver_line(Pending& p) {
  const auto& shape = machine_->shape();
  const PacketHeader& h = p.packet.header;
  const auto dir = h.line_direction();
  const auto dest = shape.node_id(h.destination());
  const std::span<const std::byte> payload(p.packet.payload.data(), h.payload_bytes);
  torus_emu::NodeId at = node_;
  for (int i = 0; i <= p.delivered; ++i)
    at = *shape.neighbour(at, dir);
  for (;;) {
    // A node without tasks has no FIFOs: the copy for it reaches nobody.
    const bool hosted = peers_[at].groups != 0;
    const virtual_time::Stamp stamp{timed() ? line_arrivals_[p.slot][p.delivered] : 0,
                                    p.stamp.origin};
    if (hosted && !push(at, h.dest_group, p.fifo_index, h, payload, {}, stamp)) {
      ++counters_.delivery_stalls;
      return false;
    }
    ++p.delivered;
    if (at == dest) break;
    if (hosted) ++counters_.deposit_copies;
    at = *shape.neighbour(at, dir);
  }
  return true;
}

void Endpoint::drain(int fifo) {
  InjectionFifo& q = injection_[static_cast<std::size_t>(fifo)];
  while (q.count != 0 && deliver(q.ring[q.head])) {
    q.head = (q.head + 1) % static_cast<std::uint32_t>(q.ring.size());
    --q.count;
    --pending_packets_;
  }
  if (q.count == 0) pending_mask_ &= ~(1u << fifo);
}

bool Endpoint::advance() {
  for (std::uint32_t mask = pending_mask_; mask != 0; mask &= mask - 1)
    drain(__builtin_ctz(mask));
  return pending_mask_ == 0;
}

std::optional<FifoRef> Endpoint::poll(std::uint32_t skip) {
  FifoRef f;
  if (next(f, skip) == nullptr) return std::nullopt;
  return f;
}

const Packet* Endpoint::next_in_host_order(FifoRef& f, std::uint32_t skip) {
  if (pending_mask_) advance();
  for (;;) {
    int index;
    const Packet* p = find_nonempty(skip, index);
    if (!p) return nullptr;
    f = FifoRef{static_cast<std::uint8_t>(index)};
    if (plainly_mine(p->header)) [[likely]]
      return p;
    const auto problem = check(p->header);
    if (problem == PacketHeader::Problem::none) return p;
    reject(index, problem);
  }
}

// High priority first, then the normal FIFOs round-robin, in bursts of up to kPollBurst packets.
// The position is kept in a local and stored once: an empty poll (the common case of a waiting
// task) is one acquire load per FIFO and nothing else.
const Packet* Endpoint::find_nonempty(std::uint32_t skip, int& index) {
  if (!(skip >> kHighPriorityFifo & 1u)) {
    if (const Packet* p = fifos_[kHighPriorityFifo].front()) {
      index = kHighPriorityFifo;
      return p;
    }
  }
  // Round-robin positions 0..6 are the normal torus FIFOs, 7 the virtual FIFO (if any).
  constexpr int kPositions = kHighPriorityFifo + 1;
  static_assert((kPositions & (kPositions - 1)) == 0);
  // The head is looked at before the skip mask (a skipped FIFO is rare, a load is cheap): the
  // loop over empty FIFOs, a waiting task's every poll, stays a few instructions per FIFO.
  int position = next_poll_;
  for (int scanned = 0; scanned < kPositions; ++scanned) {
    int i = position;
    const Packet* p;
    if (position != kHighPriorityFifo) [[likely]] {
      p = fifos_[static_cast<std::size_t>(position)].front();
    } else {
      i = kVirtualFifo;
      p = virtual_front();
    }
    if (p && !(skip >> i & 1u)) {
      if (position != next_poll_) burst_ = 0;  // passed over empty FIFOs: a new burst
      next_poll_ = position;
      if (++burst_ >= kPollBurst) {
        burst_ = 0;
        next_poll_ = (position + 1) & (kPositions - 1);
      }
      index = i;
      return p;
    }
    position = (position + 1) & (kPositions - 1);
  }
  burst_ = 0;
  return nullptr;
}

PacketHeader::Problem Endpoint::check(const PacketHeader& h) const {
  const auto problem = h.validate(machine_->shape(), kFifoGroups);
  if (problem != PacketHeader::Problem::none) return problem;
  if (h.dest_group != group_) return PacketHeader::Problem::wrong_group;
  if (!h.deposit() && h.destination() != me_) return PacketHeader::Problem::wrong_node;
  return problem;
}

void Endpoint::reject(int index, PacketHeader::Problem problem) {
  const FifoRef f{static_cast<std::uint8_t>(index)};
  ++counters_.malformed;
  reject_log_.report(rank_, "", counters_.malformed, [&] {
    spdlog::error("rank {}: discarding malformed packet from reception FIFO {}: {} [{}]", rank_,
                  index, to_string(problem), current(f)->header.describe());
  });
  pop(f);
}

void Endpoint::receive(FifoRef f, std::span<std::byte> dst) {
  const Packet* p = current(f);
  const std::size_t n = p->header.payload_bytes;
  if (dst.size() < n)
    throw std::invalid_argument("receive buffer of " + std::to_string(dst.size()) +
                                " bytes is smaller than the payload (" + std::to_string(n) + ")");
  copy_packet_bytes(dst.data(), p->payload.data(), n);
  ++counters_.packets_received;
  counters_.payload_bytes_received += n;
  pop(f);
}

void Endpoint::discard(FifoRef f) {
  discard(f, *current(f));
}

bool Endpoint::reception_ready() const {
  return (held_ && !held_->empty()) || fifos_ready();
}

bool Endpoint::fifos_ready() const {
  for (const auto& f : fifos_)
    if (f.front() != nullptr) return true;
  return virtual_front() != nullptr;
}

void Endpoint::wait(std::uint32_t count) {
  if (horizon_) [[unlikely]] {
    // Blocked until a packet is safe to take. One that is there but not yet safe waits for the
    // other tasks, which ring nobody when they move on: give them the core and let the caller poll.
    if (pending_mask_) advance();
    const virtual_time::Tick earliest = park();
    if (earliest != virtual_time::kNever) {
      if (earliest >= virtual_time::later(others_, lookahead_)) {
        ++counters_.vt_held;
        wait_for_others(earliest - lookahead_ + 1);
      }
      return;
    }
  }
  // A wait that follows one that slept, with no packet moved in between, continues it: the task
  // stays asleep in its wait record (the caller's loop between the two found nothing to do).
  const std::uint64_t moved =
      counters_.packets_received + counters_.packets_injected + counters_.malformed;
  if (moved != moved_at_wait_) {
    moved_at_wait_ = moved;
    backoff_.reset();
  } else {
    backoff_.restart();
  }
  const std::uint32_t pending = pending_packets_;
  const auto ready = [this] { return reception_ready(); };
  const auto cap = pending_mask_ ? kPendingSleepCap : std::chrono::microseconds::max();
  while (!ready()) {
    if (pending_mask_) advance();
    if (pending_packets_ < pending) return;
    if (backoff_.sleeping()) {
      // One sleep, then back to the caller: a ring may announce something other than a packet
      // (a coprocessor finishing a receive), which only the caller's progress loop can see.
      ++counters_.sleeps;
      // What it sleeps for, unless the caller said (the thread-local record: only when sleeping).
      std::optional<job_runtime::wait_record::Reason> reason;
      if (job_runtime::wait_record::current_kind() == job_runtime::WaitKind::unspecified)
        reason.emplace(
            pending_mask_ ? job_runtime::WaitKind::injection_room : job_runtime::WaitKind::packets,
            0);
      backoff_.sleep(*bell_, ready, std::min(cap, backoff_.policy().max_sleep), count);
      return;
    }
    backoff_.idle(*bell_, ready, cap, count);
  }
}

void Endpoint::publish_statistics() {
  if (published_) return;
  published_ = true;
  if (horizon_) horizon_.finish(static_cast<int>(rank_));  // it takes and sends nothing more
  job_runtime::TaskSlot& slot = machine_->job().task(rank_);
  slot.pid = static_cast<std::int32_t>(getpid());
  counters_.vt_clock = clock_.now();
  counters_.vt_software = clock_.software();
  counters_.vt_waiting = clock_.waiting();
  counters_.vt_computing = clock_.computing();
  slot.counters = counters_;
  slot.published.store(1, std::memory_order_release);
  fold_deterministic_traffic();
  const auto shared = machine_->links();
  const auto index = machine_->link_index();
  const auto mine = links_.raw();
  for (std::size_t i = 0; i < mine.size(); ++i) {
    if (mine[i].packets == 0) continue;
    if (index[i] == kNoLink) [[unlikely]] {  // cannot happen: every route has its links' totals
      spdlog::error("rank {}: {} packets crossed link {} of the torus, which has no totals", rank_,
                    mine[i].packets, i);
      continue;
    }
    shared[index[i]].packets.fetch_add(mine[i].packets, std::memory_order_relaxed);
    shared[index[i]].bytes.fetch_add(mine[i].bytes, std::memory_order_relaxed);
  }
}

}  // namespace bgl::packet_layer
