#pragma once
// The emulated partition as laid out in the job's segment: the job description, the rank mapping,
// per node that hosts tasks two FIFO groups of reception FIFOs with a doorbell each, per-link and
// per-task statistics. The creator formats it; every task maps it and takes a view.
//
// Only nodes that host tasks have FIFOs: a node's storage is found through its node slot (its
// index among the occupied nodes, in node-id order), which callers on a hot path resolve once.
#include <array>
#include <atomic>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "bgl/job_runtime/asymmetric_fence.hpp"
#include "bgl/job_runtime/backoff.hpp"
#include "bgl/job_runtime/doorbell.hpp"
#include "bgl/job_runtime/job_barrier.hpp"
#include "bgl/job_runtime/job_config.hpp"
#include "bgl/job_runtime/remote_store.hpp"
#include "bgl/job_runtime/segment.hpp"
#include "bgl/job_runtime/wait_state.hpp"
#include "bgl/packet_layer/outbound_ring.hpp"
#include "bgl/packet_layer/reception_fifo.hpp"
#include "bgl/packet_layer/virtual_fifo.hpp"
#include "bgl/virtual_time/link_calendar.hpp"

namespace bgl::packet_layer {

inline constexpr int kFifoGroups = 2;
// Reception FIFOs of a group: one per direction of travel of the last hop (0..5), one for packets
// from the node itself (an emulator extension: BG/L had no torus loopback), one high-priority.
inline constexpr int kLinkFifos = torus_emu::kDirections;
inline constexpr int kLocalFifo = 6;
inline constexpr int kHighPriorityFifo = 7;
inline constexpr int kReceptionFifos = 8;
// Index of the virtual FIFO (from the node's other task, virtual-node mode) in a FifoRef.
inline constexpr int kVirtualFifo = 8;

// Per-task counters, written by the task when it finishes, read by the launcher.
struct TaskCounters {
  std::uint64_t packets_injected = 0;
  std::uint64_t bytes_injected = 0;  // whole packets (32-byte chunks)
  std::uint64_t packets_received = 0;
  std::uint64_t payload_bytes_received = 0;
  std::uint64_t deposit_copies = 0;   // extra copies delivered along deposit-bit lines
  std::uint64_t injection_full = 0;   // inject() answered "full" (backpressure seen by the caller)
  std::uint64_t delivery_stalls = 0;  // a reception FIFO was full; the packet waited
  std::uint64_t malformed = 0;        // packets rejected by header validation
  std::uint64_t sleeps = 0;           // doorbell sleeps while waiting
  std::uint64_t virtual_packets = 0;  // sent through the node's virtual FIFO (VN mode)
  // Virtual time (cycles of the task's BG/L clock): the clock at the end, and what moved it.
  std::uint64_t vt_clock = 0;
  std::uint64_t vt_software = 0;
  std::uint64_t vt_waiting = 0;
  std::uint64_t vt_computing = 0;
};

inline constexpr std::size_t kExchangeBytes = 256;

struct alignas(64) TaskSlot {
  std::atomic<std::uint32_t> published{0};
  std::int32_t pid = 0;
  TaskCounters counters;
  job_runtime::WaitState
      wait;  // what the task's main thread sleeps for (the launcher's deadlock detection)
  // A few bytes each task publishes for the others during start-up (bootstrap allgather).
  std::array<std::byte, kExchangeBytes> exchange{};
  // Statistics of the layers above, as a JSON object text (NUL-terminated), written at the end.
  std::array<char, 4096> report{};
};

// A named part of the segment that nobody writes after start-up (the job description, the
// collective network's tree): what the launcher watches for corruption.
struct ControlPart {
  std::string name;
  std::span<const std::byte> bytes;
};

struct LinkTotals {
  std::atomic<std::uint64_t> packets{0};
  std::atomic<std::uint64_t> bytes{0};
};

// The index of a node's FIFO storage among the nodes that host tasks.
using NodeSlot = std::uint32_t;
inline constexpr NodeSlot kNoNodeSlot = ~NodeSlot{0};
// In Machine::link_index(): a link that no packet can cross.
inline constexpr std::uint32_t kNoLink = virtual_time::kNoCalendar;

class Machine {
 public:
  static std::size_t segment_bytes(const job_runtime::JobConfig& config);
  // The parts of the segment this host uses (all but other hosts' nodes' FIFOs), which the
  // launcher allocates up front.
  static std::vector<job_runtime::Segment::Extent> used_extents(
      const job_runtime::JobConfig& config);
  // Lays the job out in a zero-filled segment of segment_bytes(config) bytes.
  static Machine format(std::span<std::byte> segment, const job_runtime::JobConfig& config);
  // Validates the segment (magic, version, size) and takes a view; throws ConfigError.
  static Machine attach(std::span<std::byte> segment);

  const job_runtime::JobConfig& config() const { return config_; }
  const torus_emu::Shape& shape() const { return config_.shape; }
  const torus_emu::Mapping& mapping() const { return config_.mapping; }
  const job_runtime::Placement& placement() const { return config_.placement; }
  // Tasks of this host (the others run on other hosts, with segments of their own).
  bool local(torus_emu::Rank rank) const {
    return config_.placement.local(config_.mapping.location(rank).node);
  }
  int local_tasks() const;
  // Which side of a doorbell handshake fences (asymmetric_fence.hpp), chosen when formatted.
  job_runtime::FenceMode fences() const;
  std::uint64_t job_id() const { return config_.job_id; }

  // A node that hosts no task has no FIFOs: asking for them throws std::invalid_argument.
  ReceptionFifo fifo(torus_emu::NodeId node, int group, int index) const;
  job_runtime::Doorbell& doorbell(torus_emu::NodeId node, int group) const;
  // The node's slot, or kNoNodeSlot when it hosts no task (or lies outside the partition).
  NodeSlot node_slot(torus_emu::NodeId node) const {
    return node < node_slots_.size() ? node_slots_[node] : kNoNodeSlot;
  }
  // The node -> slot table of a job (what node_slot() answers), for storage laid out the same way
  // elsewhere (the collective network's region).
  static std::vector<NodeSlot> node_slots(const job_runtime::JobConfig& config);
  // The nodes that host tasks, in slot order.
  std::span<const torus_emu::NodeId> occupied_nodes() const { return occupied_; }
  // fifo() and doorbell() of a slot already resolved (no table look-up).
  ReceptionFifo fifo_in_slot(NodeSlot slot, int group, int index) const;
  job_runtime::Doorbell& doorbell_in_slot(NodeSlot slot, int group) const;
  job_runtime::JobBarrier& barrier() const;
  // Who takes part in barrier(): the local tasks, plus the libfabric agent when the job spans
  // hosts (it completes a barrier generation only when every host's tasks have arrived).
  std::uint32_t barrier_participants() const;
  // Transport ofi only: the ring from `rank` (a local task) to the host's agent, and the agent's
  // doorbell.
  OutboundRing& outbound(torus_emu::Rank rank) const;
  job_runtime::Doorbell& agent_bell() const;
  // Transport ofi only: the ring from `rank` (a local task) to the agent for remote stores
  // (remote_store.hpp).
  job_runtime::StoreRing& store_ring(torus_emu::Rank rank) const;
  // A one-sided put into host `r.host`'s copy of a region, queued for the agent; false when the
  // task's store ring is full. Throws std::invalid_argument for a store that check_store refuses.
  bool try_remote_store(torus_emu::Rank from, const job_runtime::StoreRequest& r,
                        std::span<const std::byte> bytes) const;
  // Same, but waits (spin, yield, sleep on the ring's doorbell) while the ring is full.
  void remote_store(torus_emu::Rank from, const job_runtime::StoreRequest& r,
                    std::span<const std::byte> bytes, const job_runtime::WaitPolicy& policy) const;
  // The directed links that packets can cross (routes run between nodes with tasks), each with
  // its totals and, with virtual time, its calendar; link_index() maps every directed link
  // (node * 6 + direction) to its index in links() and calendars(), or to kNoLink.
  std::span<LinkTotals> links() const;
  std::span<const std::uint32_t> link_index() const { return link_index_; }
  TaskSlot& task(torus_emu::Rank rank) const;
  // Virtual-node mode: the ring from FIFO group `from` of `node` (which hosts tasks) to the node's
  // other group.
  VirtualFifo& virtual_fifo(torus_emu::NodeId node, int from) const;
  // Virtual-node mode: the shared cells from FIFO group `from` of `node` to its other group.
  VirtualCells& virtual_cells(torus_emu::NodeId node, int from) const;
  // A region requested in JobConfig::regions (64-byte aligned); empty span when there is none.
  std::span<std::byte> region(std::string_view name) const;
  // The region's index in the segment's table (what a StoreRequest names), or -1.
  int region_index(std::string_view name) const;
  int region_count() const;
  std::span<std::byte> region(int index) const;  // empty span for an index outside the table
  // Virtual time: the job's model parameters (nullptr when virtual time is off) and the links'
  // calendars (indexed like links(); empty when off).
  const virtual_time::Params* vt_params() const {
    return config_.virtual_time ? &*config_.virtual_time : nullptr;
  }
  std::span<virtual_time::LinkCalendar> calendars() const;

  // The job description's parts in the segment (header, mapping table, host placement table).
  std::vector<ControlPart> description() const;
  // What is corrupt in the job description (magic number, checksum), or nothing.
  std::optional<std::string> check_description() const;

 private:
  struct Layout;
  Machine(std::span<std::byte> segment, job_runtime::JobConfig config);
  std::byte* group_region(NodeSlot slot, int group) const;
  NodeSlot checked_slot(torus_emu::NodeId node) const;

  std::span<std::byte> segment_;
  job_runtime::JobConfig config_;
  std::vector<NodeSlot> node_slots_;         // node -> slot (kNoNodeSlot: no task there)
  std::vector<torus_emu::NodeId> occupied_;  // slot -> node
  std::vector<std::uint32_t> link_index_;    // directed link -> links() index (kNoLink: none)
  std::size_t link_count_ = 0;
  std::size_t nodes_offset_ = 0, group_stride_ = 0, fifo_stride_ = 0;
  std::size_t links_offset_ = 0, tasks_offset_ = 0, virtual_offset_ = 0, outbound_offset_ = 0;
  std::size_t stores_offset_ = 0, vt_offset_ = 0;
};

}  // namespace bgl::packet_layer
