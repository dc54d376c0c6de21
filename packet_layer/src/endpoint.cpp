#include "bgl/packet_layer/endpoint.hpp"

#include <unistd.h>

#include <bit>
#include <cstring>
#include <optional>
#include <stdexcept>

#include "bgl/job_runtime/env.hpp"
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
            &machine.doorbell_in_slot(slot, g)};
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
  return clock_.now();
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
    if (plainly_mine(best->header) || check(best->header) == PacketHeader::Problem::none) {
      take_time(f, *best);
      return best;
    }
    reject(f.index, check(best->header));
  }
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
      return false;
    }
    VirtualPacket v;
    v.packet.header = h;
    if (!payload.empty()) std::memcpy(v.packet.payload.data(), payload.data(), payload.size());
    if (!more.empty())
      std::memcpy(v.packet.payload.data() + payload.size(), more.data(), more.size());
    v.stamp = stamp;
    virtual_out_->push(v);
    ring(*peers_[node].lanes[group].bell, how);
    return true;
  }
  const Target to{node, group, index};
  Peer& peer = peers_[node];
  if (peer.remote) [[unlikely]] {
    if (timed()) return ofi_->try_deliver_at(to, stamp, h, payload, more);
    return ofi_->try_deliver(to, h, payload, more);
  }
  if (timed()) return shm_.try_deliver_at(peer.slot, to, stamp, h, payload, more);
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
  for (const auto& f : fifos_)
    if (f.front() != nullptr) return true;
  return virtual_front() != nullptr;
}

void Endpoint::wait(std::uint32_t count) {
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
