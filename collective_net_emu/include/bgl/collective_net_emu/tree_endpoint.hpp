#pragma once
// One task's packet-level access to the emulated collective (tree) network, in the style of the
// packet layer: inject a 256-byte contribution for (class, sequence number), receive the combined
// result; broadcast from any task; point-to-point packets to and from the tree root.
//
// Emulated hardware: there is no router thread. The task whose contribution completes a node's
// slot for a sequence number (the last of the node's local tasks and children to arrive) combines
// the inputs in the fixed order local tasks (t = 0, 1), then children in tree order, and writes the
// result into its input at the parent, where it may complete that slot in turn; at the root the
// result goes to the result ring that every task reads. The result is therefore independent of
// arrival order, and every packet of a long message combines as soon as it is complete (streaming).
//
// Flow control: a task injects sequence numbers in increasing order and at most ring() ahead of
// the next result it has to receive (inject answers `full` beyond that). Every task receives every
// sequence number of a class in order, so when a task may inject s, every slot that s will use in
// the network is free: a slow task throttles everybody through the window (backpressure), nothing
// is ever overwritten or lost, and the combining path never waits. A broadcast writes the result
// ring directly and waits (`full`) until every task has read the slot's previous occupant.
//
// Sequence numbers are per class and shared by all tasks: every task contributes to a reduction's
// sequence number (the same operation); a broadcast's sequence number is written by its source
// only. Participation is always the whole job (BG/L: MPI_COMM_WORLD only). Nothing here allocates
// or locks after construction; misuse (bad class, operation or order) throws std::invalid_argument.
//
// Several hosts: each host combines its own tasks' contributions in a tree of its own nodes; the
// task that completes a host's tree stores the host's partial result into its replica and forwards
// it to the other hosts (remote stores); on every host, the first task that wants the result and
// finds every host's partial there combines them in host order into the host's result slot. The
// operations are exact integer operations, so the result is the one a single host computes.
#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <optional>
#include <span>
#include <vector>

#include "bgl/collective_net_emu/alu.hpp"
#include "bgl/collective_net_emu/layout.hpp"
#include "bgl/collective_net_emu/meanwhile.hpp"
#include "bgl/collective_net_emu/status.hpp"
#include "bgl/job_runtime/backoff.hpp"
#include "bgl/job_runtime/job.hpp"
#include "bgl/virtual_time/clock.hpp"
#include "bgl/virtual_time/horizon.hpp"

namespace bgl::collective_net_emu {

using Seq = std::uint64_t;
// What an injection into the tree answers: taken, or no room now (backpressure, never loss).
enum class InjectStatus : std::uint8_t { ok, full };

// BG/L's packet classes (route ids). combine0 and combine1 carry partition-wide reductions and
// broadcasts, each with its own sequence numbers and rings; point-to-point traffic between a task
// and the tree root (BG/L: compute node <-> I/O node) uses send() and the inbox.
enum class RouteClass : std::uint8_t { combine0 = 0, combine1 = 1, to_root = 2 };

struct Result {
  Seq seq = 0;
  Op op{};
  Status status = Status::ok;  // ok, or mismatch when tasks contributed different operations
  bool broadcast = false;
  torus_emu::Rank source = 0;  // the broadcasting task
};

struct Incoming {
  torus_emu::Rank source = 0;
  std::uint32_t tag = 0;
  std::span<const std::byte> data;
};

struct TreeCounters {
  std::uint64_t injected = 0;     // contributions
  std::uint64_t combines = 0;     // slots this task completed and combined
  std::uint64_t received = 0;     // results
  std::uint64_t broadcasts = 0;   // packets this task broadcast
  std::uint64_t window_full = 0;  // inject/broadcast answered full
  std::uint64_t sleeps = 0;       // futex sleeps while waiting
};

class TreeEndpoint {
 public:
  // Throws ConfigError when the job has no collective network.
  TreeEndpoint(const job_runtime::Job& job, torus_emu::Rank rank,
               const job_runtime::WaitPolicy& policy);

  // --- combining classes -------------------------------------------------------------------
  // This task's contribution to `seq`: `data` (at most 256 bytes, the rest of the packet zero).
  InjectStatus inject(RouteClass c, Seq seq, Op op, std::span<const std::byte> data) {
    return inject_with(c, seq, op, [&](PacketSpan p) { copy_padded(p, data); });
  }
  // Same, but fill(PacketSpan) writes the contribution straight into the network's slot.
  template <class Fill>
  InjectStatus inject_with(RouteClass c, Seq seq, Op op, Fill&& fill) {
    const auto slot = reserve(c, seq, op);
    if (!slot) return InjectStatus::full;
    fill(*slot);
    commit(c, seq, op);
    return InjectStatus::ok;
  }

  // Broadcast `data` as the result of `seq` (which must be next_result(c)); full while some task
  // has not yet received the slot's previous occupant. The source's own copy counts as received.
  InjectStatus broadcast(RouteClass c, Seq seq, std::span<const std::byte> data) {
    return broadcast_with(c, seq, [&](PacketSpan p) { copy_padded(p, data); });
  }
  template <class Fill>
  InjectStatus broadcast_with(RouteClass c, Seq seq, Fill&& fill) {
    const auto slot = reserve_broadcast(c, seq);
    if (!slot) return InjectStatus::full;
    fill(*slot);
    commit_broadcast(c, seq);
    return InjectStatus::ok;
  }

  // The result of `seq` (which must be next_result(c)) if it has arrived: the first out.size()
  // bytes (at most 256) are copied to `out`. nullopt when it is not there yet.
  std::optional<Result> receive(RouteClass c, Seq seq, std::span<std::byte> out) {
    return receive_with(c, seq, [&](ConstPacketSpan p, const Result&) {
      if (!out.empty()) std::memcpy(out.data(), p.data(), std::min(out.size(), kPacketBytes));
    });
  }
  // Same, but read(ConstPacketSpan, const Result&) reads the result where it lies.
  template <class Read>
  std::optional<Result> receive_with(RouteClass c, Seq seq, Read&& read) {
    const layout::DownSlot* slot = arrived(c, seq);
    if (slot == nullptr) return std::nullopt;
    const Result r = describe(*slot, seq);
    if (clock_) [[unlikely]]
      take_time(*slot);
    read(ConstPacketSpan(slot->data), r);
    release(c, seq);
    return r;
  }

  // --- contributions made for other tasks (one host) ---------------------------------------
  // When every task's contributions to some sequence numbers follow from the result of an earlier
  // one and data the task already had (CollectiveNetwork's short sum of doubles: phase 2 from
  // phase 1's exponents and the task's values), one task can make them all: each task leaves its
  // data in its deferred line and skips them; the task that claims `after` injects them for every
  // task, timed as that task's own would have been (leaving once the result of `after` reached
  // it, one packet write after another). The other tasks so wake once for the operation instead
  // of once per phase.
  bool can_inject_for() const { return !multi_ && !direct_; }
  std::span<std::byte, layout::kDeferredBytes> deferred_line(RouteClass c, torus_emu::Rank r);
  bool claim(RouteClass c, Seq seq);  // true for exactly one task per sequence number
  // Another task injects this task's contributions up to `last`.
  void skip(RouteClass c, Seq last);
  // Rank r's contributions to first .. first + count - 1: fill(k, PacketSpan) writes the k-th.
  template <class Fill>
  void inject_for(torus_emu::Rank r, RouteClass c, Seq first, std::size_t count, Seq after, Op op,
                  Fill&& fill) {
    enter_as(r);
    for (std::size_t k = 0; k < count; ++k) {
      fill(k, reserve_for(c, first + k));
      commit_for(c, first + k, after, op);
    }
  }

  Seq next_result(RouteClass c) const { return state(c).next_result; }
  // (With several hosts, the first task of a host to ask combines the hosts' partials.)
  bool result_ready(RouteClass c, Seq seq);
  // Block (spin, yield, then futex sleep) until the result of `seq` has arrived / until this task
  // may broadcast `seq`.
  void wait_result(RouteClass c, Seq seq);
  void wait_broadcast_space(RouteClass c, Seq seq);

  // --- point-to-point class (to_root) ------------------------------------------------------
  // A packet to `dest`, which must be the root task unless this task is the root. full when the
  // destination's inbox is full.
  InjectStatus send(torus_emu::Rank dest, std::uint32_t tag, std::span<const std::byte> data);
  std::optional<Incoming> peek_inbox() const;  // the oldest packet; valid until pop_inbox()
  void pop_inbox();
  void wait_inbox();
  // Block until `dest`'s inbox has room (after send() answered full).
  void wait_send_space(torus_emu::Rank dest);

  torus_emu::Rank rank() const { return rank_; }
  torus_emu::Rank root_rank() const { return header_->root_rank; }
  int tasks() const { return static_cast<int>(header_->ntasks); }
  std::uint32_t ring() const { return header_->ring; }
  int tree_height() const { return static_cast<int>(header_->height); }
  const TreeCounters& counters() const { return counters_; }
  const job_runtime::WaitPolicy& wait_policy() const { return policy_; }
  // Work to keep doing while waiting (meanwhile.hpp).
  void set_meanwhile(Meanwhile m) { meanwhile_ = m; }
  // Virtual time (a job run with it on): contributions leave at this clock's time, results set it
  // to when they reach every node (the task's packet-layer clock, so both networks share it). With
  // `horizon` (conservative synchronisation) a result's completion is published there.
  void set_clock(virtual_time::Clock& clock, virtual_time::Horizon horizon = {});

  // A burst of injections: results this task publishes meanwhile (it was the last contributor)
  // ring their class's doorbell once, when the burst ends, instead of once each. A task that
  // completes a multi-packet operation so wakes each waiting task once, not once per packet (on
  // more tasks than cores the woken found the next result not yet there and slept again).
  class InjectBurst {
   public:
    explicit InjectBurst(TreeEndpoint& tree) : tree_(tree) { tree_.holding_rings_ = true; }
    InjectBurst(const InjectBurst&) = delete;
    InjectBurst& operator=(const InjectBurst&) = delete;
    ~InjectBurst() { tree_.ring_held(); }

   private:
    TreeEndpoint& tree_;
  };

 private:
  struct ClassState {
    std::byte* up = nullptr;
    layout::DownControl* control = nullptr;
    layout::DownSlot* slots = nullptr;
    layout::PartialSlot* partials = nullptr;  // several hosts
    std::atomic<std::uint64_t>* free = nullptr;
    layout::DeferredControl* deferred = nullptr;  // and the tasks' deferred lines after it
    Seq next_result = 0;                          // the next sequence number to receive
    Seq next_inject = 0;  // the lowest sequence number this task may still inject
  };
  // One node on the way up: where its slots are and which input of the parent it feeds.
  struct Level {
    std::uint64_t ring_offset;
    std::uint32_t stride;
    std::uint8_t inputs;
    std::uint8_t position;
  };
  struct Inbox {
    layout::InboxControl* control = nullptr;
    std::atomic<std::uint64_t>* seq = nullptr;
    layout::InboxSlot* slots = nullptr;
  };

  static void copy_padded(PacketSpan dst, std::span<const std::byte> src);
  static std::size_t class_index(RouteClass c);  // throws for to_root
  ClassState& state(RouteClass c) { return classes_[class_index(c)]; }
  const ClassState& state(RouteClass c) const { return classes_[class_index(c)]; }
  layout::DownSlot& down(const ClassState& s, Seq seq) const { return s.slots[seq & mask_]; }
  std::byte* up_slot(const ClassState& s, const Level& l, Seq seq) const {
    return s.up + l.ring_offset + (seq & mask_) * l.stride;
  }
  std::optional<PacketSpan> reserve(RouteClass c, Seq seq, Op op);
  void commit(RouteClass c, Seq seq, Op op);
  // Rank r's entry position; `chain` = the nodes from where its contributions land to the root
  // (empty when they are results: a single task).
  std::uint8_t chain_of(torus_emu::Rank r, std::vector<Level>& chain) const;
  void enter_as(torus_emu::Rank r);  // inject_for's task: its chain and entry position
  PacketSpan reserve_for(RouteClass c, Seq seq);
  void commit_for(RouteClass c, Seq seq, Seq after, Op op);
  std::optional<PacketSpan> reserve_broadcast(RouteClass c, Seq seq);
  void commit_broadcast(RouteClass c, Seq seq);
  const layout::DownSlot* arrived(RouteClass c, Seq seq);
  // Several hosts: combines every host's partial of `seq` into this host's result slot when they
  // are all there and no other task of the host does it; true when the result is published.
  bool finish_partials(ClassState& s, Seq seq);
  bool slot_writable(const ClassState& s, Seq seq) const;
  void publish_partial(ClassState& s, Seq seq, std::uint16_t code);
  layout::PartialSlot& partial(const ClassState& s, std::uint32_t host, Seq seq) const {
    return s.partials[std::uint64_t{host} * 2 * header_->ring + (seq & (2 * mask_ + 1))];
  }
  // Several hosts: the next sequence number down slot `seq` may take, as `host`'s readers see it.
  std::atomic<std::uint64_t>& slot_free(const ClassState& s, Seq seq, std::uint32_t host) const {
    return s.free[(seq & mask_) * header_->hosts + host];
  }
  void free_slot(ClassState& s, Seq seq);
  // A remote store of `bytes` (at `at`, in this replica) to every other host that runs tasks,
  // raising `word` to `value` there and ringing `bell`.
  void forward(const void* at, std::size_t bytes, const std::atomic<std::uint64_t>* word,
               std::uint64_t value, const job_runtime::Doorbell* bell) const;
  // Raises `word` to `value` in `host`'s replica and rings `bell` there.
  void forward_to(std::uint32_t host, const std::atomic<std::uint64_t>* word, std::uint64_t value,
                  const job_runtime::Doorbell* bell) const;
  std::uint64_t offset_of(const void* p) const {
    return static_cast<std::uint64_t>(static_cast<const std::byte*>(p) - region_);
  }
  Result describe(const layout::DownSlot& slot, Seq seq) const;
  void release(RouteClass c, Seq seq);
  void arrive(ClassState& s, Seq seq, std::span<const Level> chain);
  void wait_writable(ClassState& s, Seq seq);
  std::uint16_t combine_slot(std::byte* slot, int inputs, PacketSpan dst);
  void publish(ClassState& s, Seq seq, std::uint16_t code, std::uint32_t readers);
  // Rings the class's results doorbell, or records it during an InjectBurst.
  void ring_results(ClassState& s);
  void ring_held();
  // Virtual time: the moment a packet leaves this task (charges the write), an input's arrival at
  // the next level, a result's time at every node (after the class's previous result), reading.
  virtual_time::Tick depart();
  void raise_vt(std::byte* slot, virtual_time::Tick t) const;
  static void raise(std::atomic<virtual_time::Tick>& vt, virtual_time::Tick t);
  virtual_time::Tick result_vt(const ClassState& s, virtual_time::Tick at_root) const;
  void take_time(const layout::DownSlot& slot);
  Inbox inbox(torus_emu::Rank r, std::uint32_t lane) const;
  std::uint32_t host_of(torus_emu::Rank r) const;
  template <class Ready>
  void block(job_runtime::Doorbell& bell, Ready&& ready, std::uint64_t event = 0);
  // Conservative synchronisation: the event a task waiting for result `seq` of a class waits for,
  // and its completion.
  std::uint64_t result_event(const ClassState& s, Seq seq) const;
  void completed(const ClassState& s, Seq seq, const layout::DownSlot& d);

  const job_runtime::Job* job_;
  torus_emu::Rank rank_;
  job_runtime::WaitPolicy policy_;
  Meanwhile meanwhile_;
  virtual_time::Clock* clock_ = nullptr;  // virtual time on
  virtual_time::Horizon horizon_;         // conservatively synchronised
  virtual_time::Tick level_cycles_ = 0, packet_cycles_ = 0;
  // Several hosts: this task's contributions enter the whole partition's tree this many levels
  // below its root (NodeEntry::vt_levels); they are timed over that tree, not the host's.
  int vt_levels_ = 0;
  const layout::RegionHeader* header_;
  std::byte* region_;
  Seq mask_;
  std::vector<Level> chain_;  // from the node where this task's contributions land to the root
  std::uint8_t entry_position_ = 0;
  std::vector<Level> proxy_chain_;  // inject_for's task's chain (kept: no allocation per call)
  std::uint8_t proxy_position_ = 0;
  bool direct_ = false;  // a single task: contributions are results
  std::array<ClassState, layout::kCombineClasses> classes_;
  bool holding_rings_ = false;                              // inside an InjectBurst
  std::array<bool, layout::kCombineClasses> held_rings_{};  // classes with a result published
  // Several hosts.
  bool multi_ = false;
  std::uint32_t host_ = 0;                 // this task's host
  std::uint32_t local_tasks_ = 0;          // tasks on this host
  std::uint8_t region_index_ = 0;          // of the collnet region, for remote stores
  std::vector<std::uint32_t> task_hosts_;  // hosts that run tasks, in host order
  // Inbox lanes, one per sending host (one lane with one host).
  std::vector<Inbox> my_lanes_;
  std::vector<std::uint64_t> lane_heads_;
  std::uint32_t next_lane_ = 0;              // round robin over the lanes
  mutable std::uint32_t peeked_lane_ = ~0u;  // the lane peek_inbox() showed
  std::optional<std::uint32_t> lane_with_packet() const;
  TreeCounters counters_;
};

}  // namespace bgl::collective_net_emu
