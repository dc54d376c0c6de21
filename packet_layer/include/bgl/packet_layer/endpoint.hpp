#pragma once
// The packet-layer API of one task: inject packets into its injection FIFOs, poll its FIFO group's
// reception FIFOs, peek at a header without unloading the packet, receive a payload straight into
// its destination, or discard it. Nothing here allocates or locks after construction.
//
// Emulated network: injecting moves a packet across the torus in one step into the reception FIFO
// its route ends in (final-hop direction; local; high priority), accounting every link on the
// route. When that FIFO is full the packet waits at the head of its injection FIFO, as on the real
// machine, and later packets of that injection FIFO wait behind it; the task's own packet-layer
// calls (inject, poll, advance, wait) move waiting packets on. inject() reports "full" only when
// the injection FIFO itself is full: backpressure, never loss.
#include <cstdint>
#include <cstring>
#include <optional>
#include <span>
#include <vector>

#include "bgl/job_runtime/backoff.hpp"
#include "bgl/job_runtime/call_sites.hpp"
#include "bgl/job_runtime/rate_limit.hpp"
#include "bgl/job_runtime/trace.hpp"
#include "bgl/packet_layer/backend.hpp"
#include "bgl/packet_layer/header.hpp"
#include "bgl/packet_layer/held_packets.hpp"
#include "bgl/packet_layer/machine.hpp"
#include "bgl/torus_emu/link_counters.hpp"
#include "bgl/torus_emu/rng.hpp"
#include "bgl/torus_emu/route.hpp"
#include "bgl/virtual_time/clock.hpp"
#include "bgl/virtual_time/horizon.hpp"
#include "bgl/virtual_time/torus_timing.hpp"

namespace bgl::packet_layer {

struct Destination {
  torus_emu::NodeId node = 0;
  std::uint8_t group = 0;  // FIFO group at the destination node (the task slot t in VN mode)
};

inline constexpr std::uint64_t kOriginAtDeparture = ~std::uint64_t{0};

// What a packet's arrival does to its receiver, asleep on its doorbell (job_runtime::Doorbell).
enum class Ring : std::uint8_t {
  wake,   // wakes it: the packet may need an answer or let it go on
  count,  // completes a message it need not answer: counts its counted sleep down (wait(count))
  none,   // a part of such a message before its last: nothing to act on yet
};

struct PacketSpec {
  Destination dest;
  std::uint8_t dispatch = 0;  // software: packet type / handler id
  std::uint32_t word = 0;     // software: protocol word
  Routing routing = Routing::deterministic;
  bool high_priority = false;
  // Deposit bit: deliver a copy to every node along the line from this node to dest, travelling
  // in this direction. Requires deterministic routing and a destination in one dimension.
  std::optional<torus_emu::Direction> deposit_line;
  // Virtual time: cycles of software that precede this packet's departure (the protocol's work to
  // produce it), charged to the clock when the packet is accepted, not when inject() says "full".
  std::uint32_t vt_cycles = 0;
  // Virtual time: when the message this packet belongs to was started on the sender's clock (the
  // receiver's end-to-end latencies count from it); by default the packet's own departure.
  std::uint64_t vt_origin = kOriginAtDeparture;
  // What the packet's arrival does to a receiver asleep on its doorbell.
  Ring ring = Ring::wake;
};

enum class InjectStatus : std::uint8_t { ok, full };

inline constexpr int kInjectionFifos = 8;
inline constexpr std::uint32_t kDefaultInjectionDepth = 16;

// A reception FIFO of this endpoint's group that has a packet at its head.
struct FifoRef {
  std::uint8_t index = 0;
};

class Endpoint {
 public:
  Endpoint(const Machine& machine, torus_emu::Rank rank, int group,
           const job_runtime::WaitPolicy& policy);

  // Copies the packet into the network; its payload is `payload` followed by `more` (so a protocol
  // prefix and user data need not be assembled first). Throws std::invalid_argument for a
  // malformed request (payload > 240 bytes, destination outside the partition, bad deposit line).
  InjectStatus inject(int injection_fifo, const PacketSpec& spec,
                      std::span<const std::byte> payload, std::span<const std::byte> more = {});

  // The next reception FIFO with a packet: high priority first, then round-robin over the others.
  // Packets with malformed headers are logged, counted and discarded here. FIFOs whose bit is set
  // in `skip` are passed over (a caller that cannot take their head packet yet leaves it there).
  std::optional<FifoRef> poll(std::uint32_t skip = 0);
  // poll() and packet() in one (the receive loop's hot path): the next packet, or nullptr; `f` is
  // set to its FIFO. With virtual time the next packet is the one that arrived first, and
  // `arrived_only` leaves packets that arrive after the task's clock where they are (a task that
  // has something else to do first, as a polling processor would find them not there yet).
  const Packet* next(FifoRef& f, std::uint32_t skip = 0, bool arrived_only = false) {
    if (timed()) [[unlikely]]
      return next_in_virtual_order(f, skip, arrived_only);
    return next_in_host_order(f, skip);
  }
  const PacketHeader& peek(FifoRef f) const { return current(f)->header; }
  // Virtual time: the stamp of the packet next() returned for `f` (its arrival, and when its
  // message was started on the sender's clock).
  virtual_time::Stamp stamp_of(FifoRef f, const Packet& p) const;
  // The whole packet in its FIFO slot (header and payload; valid until receive() or discard()).
  const Packet& packet(FifoRef f) const { return *current(f); }
  std::span<const std::byte> payload(FifoRef f) const {
    const Packet* p = current(f);
    return {p->payload.data(), p->header.payload_bytes};
  }
  // Copies the payload to `dst` (any alignment; dst.size() >= payload size) and unloads the packet.
  void receive(FifoRef f, std::span<std::byte> dst);
  void discard(FifoRef f);
  // discard() of the packet next() returned for `f`.
  void discard(FifoRef f, const Packet& p) {
    ++counters_.packets_received;
    counters_.payload_bytes_received += p.header.payload_bytes;
    pop(f);
  }

  // Moves waiting injected packets on; true when all injection FIFOs are empty afterwards.
  bool advance();
  bool injection_idle() const { return pending_mask_ == 0; }
  // Whether poll() would find a packet (cheap; for sleep decisions).
  bool poll_ready() const { return reception_ready(); }
  // Waits until something may have happened: returns when poll() has something, when injected
  // packets that were waiting moved on (a sender blocked by "full" can inject again), or after one
  // doorbell sleep (woken by a ring, e.g. a coprocessor finishing a receive, or by its timeout).
  // Spins and yields first. Callers loop. `count`: the caller cannot act before this many counted
  // packets (Ring::count) arrive, so a sleep lasts until then or until a packet that wakes.
  void wait(std::uint32_t count = 1);
  // A poll that found nothing, before its caller returns: gives the core away once when the
  // host's tasks outnumber its cores (the task polled for may need this core), else nothing.
  // Conservatively synchronised, the poll also spins the clock on to the next moment something
  // can arrive (a task that only polls would otherwise hold every other task back).
  void poll_yield() {
    if (horizon_) [[unlikely]]
      spin_until_arrival();
    if (backoff_.policy().yield_on_empty_poll) job_runtime::Backoff::yield();
  }
  std::uint32_t pending_packets() const { return pending_packets_; }
  // What rings when a packet for this task arrives (or a coprocessor finishes a receive): for a
  // wait elsewhere that must also wake for this task's packets.
  job_runtime::Doorbell& doorbell() const { return *bell_; }

  Destination destination_of(torus_emu::Rank rank) const;
  torus_emu::Rank rank() const { return rank_; }
  torus_emu::NodeId node() const { return node_; }
  int group() const { return group_; }
  const Machine& machine() const { return *machine_; }
  const job_runtime::TaskCounters& counters() const { return counters_; }

  // Virtual time (bglrun --virtual-time): this endpoint's BG/L clock. Injecting charges a packet
  // write and stamps the packet with its arrival time at BG/L rates over its route; taking a
  // packet (next/poll) waits for that arrival and charges a packet read. The layers above charge
  // their own software costs to the same clock.
  bool timed() const { return timing_.enabled(); }
  virtual_time::Clock& clock() { return clock_; }
  const virtual_time::Clock& clock() const { return clock_; }
  const virtual_time::Params* vt_params() const { return machine_->job().vt_params(); }
  // Conservative synchronisation (bglrun --vt-sync conservative, virtual_time/horizon.hpp): a
  // packet is taken only when no other task can still send one that arrives earlier.
  bool synchronised() const { return static_cast<bool>(horizon_); }
  // A wait outside the layer (a job barrier): publishes this task as acting again only on a packet
  // (`takes_packets`: it polls while it waits) or when released; the barrier's last arrival
  // releases everybody (release_all), and each task leaves at the release time.
  void park_outside(bool takes_packets) {
    if (horizon_) takes_packets ? static_cast<void>(park()) : park_until_release();
  }
  // A wait for a collective event (virtual_time::event_key): publishes this task as acting again
  // on a packet or when the event completes (virtual_time::Horizon::block_for_event).
  void park_for_event(std::uint64_t event);
  void release_all(virtual_time::Tick release) {
    if (horizon_) horizon_.release_all(release);
  }
  void leave_at(virtual_time::Tick release) {
    clock_.arrive(release);
    others_ = 0;  // the others' bounds fell to the release: read them again
  }
  // The layers above call these around every entry into the emulated stack: with a CPU factor,
  // the host CPU time the program spent between them becomes computation on the clock.
  bool metered() const { return meter_.active(); }
  // bglrun --trace: this task's timeline, null when tracing is off (pkt/trace.hpp).
  job_runtime::Trace* trace() const { return trace_; }
  void set_trace(job_runtime::Trace* trace) { trace_ = trace; }
  // bglrun --stats/--report/--trace: this task's collective calls per call site, null otherwise
  // (pkt/call_sites.hpp).
  job_runtime::CallSites* call_sites() const { return call_sites_; }
  void set_call_sites(job_runtime::CallSites* sites) { call_sites_ = sites; }
  void enter_stack() {
    if (meter_.active()) [[unlikely]]
      meter_.enter(clock_);
  }
  void leave_stack() {
    if (meter_.active()) [[unlikely]]
      meter_.leave();
  }
  const torus_emu::LinkCounters& link_counters() const {
    fold_deterministic_traffic();
    return links_;
  }
  // Writes counters and link totals into the segment for the launcher (once, at the end).
  void publish_statistics();

 private:
  struct Pending {
    Packet packet;
    std::uint8_t fifo_index;    // reception FIFO (final-hop direction, local or high priority)
    std::uint16_t delivered;    // deposit-bit line: copies already delivered
    virtual_time::Stamp stamp;  // virtual time (a line's arrivals: line_arrivals_[slot])
    std::uint32_t slot;         // its index among all injection-FIFO slots
  };
  struct InjectionFifo {
    std::vector<Pending> ring;
    std::uint32_t head = 0, count = 0;
  };

  // A node's reception FIFO that deterministic routes from here end in, per FIFO group, with the
  // group's doorbell: the shared-memory hot path pushes into it without asking the Machine.
  struct Lane {
    ReceptionFifo fifo;
    job_runtime::Doorbell* bell = nullptr;
    std::int32_t actor = -1;  // the rank that reads it (conservative synchronisation)
  };
  // What the endpoint knows about each destination node, computed once so that injecting does no
  // coordinate arithmetic: its coordinates and the reception FIFO a deterministic route ends in.
  struct Peer {
    std::array<std::uint8_t, 3> coord;
    std::uint32_t coord_bytes;  // coord as header bytes 0..2 of a little-endian word
    std::uint8_t deterministic_fifo;
    bool remote;  // reached through the libfabric backend (another host, or BGL_TRANSPORT=ofi)
    // Virtual time, remote peers: the leading links of the deterministic route there whose
    // calendars this host keeps (links_timed_by_sender); the receiving agent times the rest.
    std::uint8_t vt_hops;
    // FIFO groups a packet may name: kFifoGroups, or 0 for a node that hosts no task (and so has
    // no FIFOs), which makes the range check of the group refuse packets for it at no extra cost.
    std::uint8_t groups;
    job_runtime::NodeSlot slot;  // where its FIFOs are (kNoNodeSlot: none)
    // What an adaptive route there crosses. Where that leaves a single minimal path (the
    // deterministic route), an adaptive packet takes the plain path (same links, same FIFO).
    torus_emu::MinimalHops hops;
    std::array<Lane, kFifoGroups> lanes{};  // shared-memory peers that host tasks only
  };
  // Deterministic routes are fixed, so their link traffic is counted per destination and spread
  // over the route's links only when somebody looks (exact, and off the hot path).
  void fold_deterministic_traffic() const;
  const Packet* find_nonempty(std::uint32_t skip, int& index);
  PacketHeader::Problem check(const PacketHeader& h) const;
  // The common case of check(), decided with a few compares: a well-formed packet for this node
  // and group without the deposit bit. False means "ask check()", not "malformed".
  bool plainly_mine(const PacketHeader& h) const {
    std::uint32_t where;
    std::memcpy(&where, &h, sizeof where);  // dest x, y, z and group
    return where == here_ && (h.flags & PacketHeader::kDeposit) == 0 &&
           h.chunks - 1u < kMaxPacketBytes / kChunkBytes &&
           h.payload_bytes + kHeaderBytes <= h.packet_bytes() && h.check == h.compute_check();
  }
  void reject(int index, PacketHeader::Problem problem);

  const Packet* current(FifoRef f) const {
    if (held_) [[unlikely]]
      return held_->front(f.index);
    return f.index == kVirtualFifo ? virtual_front() : fifos_[f.index].front();
  }
  const Packet* virtual_front() const {
    return virtual_in_ && virtual_in_->read_available() ? &virtual_in_->front().packet : nullptr;
  }
  void pop(FifoRef f) {
    if (held_) [[unlikely]] {
      held_->pop(f.index);
      timed_packet_ = nullptr;  // the next packet may reuse the entry
      return;
    }
    if (f.index == kVirtualFifo)
      virtual_in_->pop();
    else
      fifos_[f.index].pop();
  }
  // Copies into the network: a torus reception FIFO, or the node's virtual FIFO.
  bool push(torus_emu::NodeId node, std::uint8_t group, std::uint8_t index, const PacketHeader& h,
            std::span<const std::byte> payload, std::span<const std::byte> more,
            virtual_time::Stamp stamp, Ring ring = Ring::wake);
  void build_header(const PacketSpec& spec, std::size_t payload, PacketHeader& h) const;
  // The header of a packet without the deposit bit, built in registers: no byte stores read back
  // as words (see ReceptionFifo::HeaderWords).
  ReceptionFifo::HeaderWords header_words(const Peer& peer, const PacketSpec& spec,
                                          std::size_t payload) const {
    const std::uint64_t flags =
        (spec.routing == Routing::adaptive ? std::uint64_t{PacketHeader::kAdaptive} : 0) |
        (spec.high_priority ? std::uint64_t{PacketHeader::kHighPriority} : 0);
    std::uint64_t hardware = peer.coord_bytes | std::uint64_t{spec.dest.group} << 24 | flags << 32 |
                             std::uint64_t{chunks_for(payload)} << 40 |
                             std::uint64_t{payload} << 48;
    hardware |= std::uint64_t{PacketHeader::check_of(hardware)} << 56;
    return {hardware, spec.dispatch | source_bits_ | std::uint64_t{spec.word} << 32};
  }
  std::uint8_t route_and_account(const PacketSpec& spec, std::uint8_t chunks,
                                 std::uint64_t& arrival);
  // Virtual time of a packet leaving now (charges the write); its arrival over `route`.
  std::uint64_t depart(std::uint32_t software_cycles);
  void left_node(std::uint64_t when);
  std::uint64_t arrival_over(const torus_emu::Route& route, std::uint32_t packet_bytes,
                             std::uint32_t software_cycles);
  // Virtual time of a packet for another host: when its head has crossed this host's links.
  std::uint64_t head_over(const torus_emu::Route& route, std::uint32_t packet_bytes,
                          std::uint32_t software_cycles, int hops);
  void time_line(const torus_emu::Route& route, std::uint32_t packet_bytes,
                 std::uint32_t software_cycles);
  void take_time(FifoRef f, const Packet& p);
  // Conservative synchronisation (virtual_time/horizon.hpp): whether a packet arriving at
  // `arrival` can be taken, and the blocked state a waiting task publishes.
  using Holder = virtual_time::Horizon::Holder;
  bool safe(virtual_time::Tick arrival);
  bool departs_first(virtual_time::Tick departure);
  void wait_for_others(virtual_time::Tick need);
  bool held_too_long();
  virtual_time::Tick park();
  void park_until_release();
  virtual_time::Tick earliest_head();
  void hold_arrivals();
  void depart_in_order();
  void spin_until_arrival();
  virtual_time::Tick pending_bound(virtual_time::Tick bound) const;
  void delivered(torus_emu::NodeId node, std::uint8_t group, virtual_time::Tick arrival);
  const Packet* next_in_host_order(FifoRef& f, std::uint32_t skip);
  const Packet* next_in_virtual_order(FifoRef& f, std::uint32_t skip, bool arrived_only);
  bool deliver(Pending& p);
  void drain(int fifo);
  bool deliver_line(Pending& p);
  void enqueue(int fifo, const PacketHeader& h, std::span<const std::byte> payload,
               std::span<const std::byte> more, std::uint8_t index, virtual_time::Stamp stamp);
  bool reception_ready() const;
  bool fifos_ready() const;  // reception_ready without the held packets
  void check_spec(const PacketSpec& spec, std::size_t payload) const;

  const Machine* machine_;
  torus_emu::Rank rank_;
  torus_emu::NodeId node_;
  int group_;
  std::array<ReceptionFifo, kReceptionFifos> fifos_;
  ShmBackend shm_;
  std::optional<OfiBackend> ofi_;
  VirtualFifo* virtual_out_ = nullptr;  // virtual-node mode: to the node's other task
  VirtualFifo* virtual_in_ = nullptr;   // and from it
  job_runtime::Doorbell* bell_;
  torus_emu::Coord me_;
  std::uint32_t here_ = 0;                // header bytes 0..3 of packets for this node and group
  std::array<std::uint8_t, 3> source_{};  // header bytes 9..11: this task's rank
  std::uint64_t source_bits_ = 0;         // the same, as bits 8..31 of header word 8..15
  std::vector<Peer> peers_;
  mutable std::vector<torus_emu::LinkCounters::Count> deterministic_traffic_;
  int next_poll_ = 0;
  int burst_ = 0;
  std::array<InjectionFifo, kInjectionFifos> injection_;
  std::uint32_t pending_mask_ = 0;
  std::uint32_t pending_packets_ = 0;
  torus_emu::Rng rng_;
  mutable torus_emu::LinkCounters links_;
  job_runtime::TaskCounters counters_;
  job_runtime::log::RateLimit reject_log_;  // malformed packets: a peer may send any number
  job_runtime::Backoff backoff_;
  std::uint64_t moved_at_wait_ = 0;  // packets moved when wait() was last called
  bool published_ = false;
  virtual_time::TorusTiming timing_;  // enabled only with virtual time on
  virtual_time::Clock clock_;
  virtual_time::ComputeMeter meter_;      // active only with virtual time and a CPU factor
  const Packet* timed_packet_ = nullptr;  // the packet whose arrival the clock last took
  // Conservative synchronisation: the job's table of bounds (empty when off), the least bound of
  // the other tasks as last read (it falls only when this task lowers somebody), the least time
  // from an action to an arrival, and since when a packet has been held back.
  virtual_time::Horizon horizon_;
  std::optional<HeldPackets> held_;  // the FIFOs' packets, taken out while they wait
  virtual_time::Tick others_ = 0;
  virtual_time::Tick lookahead_ = 1;
  std::chrono::steady_clock::time_point held_since_{};
  virtual_time::Tick held_at_ = 0;  // the others' bound then
  // Deposit-bit lines in injection FIFOs: each copy's arrival, per injection-FIFO slot (allocated
  // only with virtual time on).
  std::vector<std::array<std::uint64_t, torus_emu::Route::kMaxHops>> line_arrivals_;
  std::array<std::uint64_t, torus_emu::Route::kMaxHops> line_scratch_{};  // the line being injected
  // Virtual time: per injection FIFO, when its packets' tails leave the node; a task that has
  // injection_fifo_packets of them still in the FIFO waits for the oldest (backpressure).
  struct VirtualInjection {
    std::array<std::uint64_t, 64> left{};
    std::uint32_t head = 0, count = 0;
  };
  std::array<VirtualInjection, kInjectionFifos> vt_injection_{};
  std::uint32_t vt_injection_depth_ = 0;
  int injecting_ = 0;  // the injection FIFO of the packet being injected
  job_runtime::Trace* trace_ = nullptr;
  job_runtime::CallSites* call_sites_ = nullptr;
};

}  // namespace bgl::packet_layer
