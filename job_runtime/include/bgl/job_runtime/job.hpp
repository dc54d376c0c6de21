#pragma once
// The job as laid out in its shared-memory segment: the job description (shape, mode, mapping,
// placement on hosts, virtual-time parameters), per-task slots, the job barrier, the remote-store
// rings and the agent's doorbell, and the named regions the layers above request (the packet
// layer's FIFOs, the collective network's tree, the traffic matrix). The launcher formats it;
// every task maps it and takes a view. What a region holds is its owner's business.
//
// A region is either one block or one block per node that hosts tasks (`per_node`): only this
// host's nodes' blocks are allocated (used_extents), the others stay sparse.
#include <array>
#include <atomic>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "bgl/job_runtime/backoff.hpp"
#include "bgl/job_runtime/doorbell.hpp"
#include "bgl/job_runtime/job_barrier.hpp"
#include "bgl/job_runtime/job_config.hpp"
#include "bgl/job_runtime/remote_store.hpp"
#include "bgl/job_runtime/segment.hpp"
#include "bgl/job_runtime/wait_state.hpp"

namespace bgl::job_runtime {

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
  // Conservative synchronisation: waits for the other tasks to catch up before taking a packet,
  // and packets taken anyway after waiting too long (a task stuck in a wait it does not publish).
  std::uint64_t vt_held = 0;
  std::uint64_t vt_unsafe = 0;
};

inline constexpr std::size_t kExchangeBytes = 256;

struct alignas(64) TaskSlot {
  std::atomic<std::uint32_t> published{0};
  std::int32_t pid = 0;
  TaskCounters counters;
  WaitState wait;  // what the task's main thread sleeps for (the launcher's deadlock detection)
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

// The index of a node among the nodes that host tasks (per-node regions are indexed by it).
using NodeSlot = std::uint32_t;
inline constexpr NodeSlot kNoNodeSlot = ~NodeSlot{0};

class Job {
 public:
  // Regions the layers can request (RegionRequest), the packet layer's included.
  static constexpr int kMaxRegions = 12;

  static std::size_t segment_bytes(const JobConfig& config);
  // The parts of the segment this host uses (all but other hosts' nodes' blocks of per-node
  // regions), which the launcher allocates up front.
  static std::vector<Segment::Extent> used_extents(const JobConfig& config);
  // Lays the job out in a zero-filled segment of segment_bytes(config) bytes. The regions' owners
  // format their regions afterwards.
  static Job format(std::span<std::byte> segment, const JobConfig& config);
  // Validates the segment (magic, version, size, description) and takes a view; throws ConfigError.
  static Job attach(std::span<std::byte> segment);
  // The node -> slot table of a job (what node_slot() answers).
  static std::vector<NodeSlot> node_slots(const JobConfig& config);

  const JobConfig& config() const { return config_; }
  const torus_emu::Shape& shape() const { return config_.shape; }
  const torus_emu::Mapping& mapping() const { return config_.mapping; }
  const Placement& placement() const { return config_.placement; }
  // Tasks of this host (the others run on other hosts, with segments of their own).
  bool local(torus_emu::Rank rank) const {
    return config_.placement.local(config_.mapping.location(rank).node);
  }
  int local_tasks() const;
  // JobConfig::busy_threads: what a WaitPolicy and the fence mode must weigh.
  int busy_threads() const;
  // Which side of a doorbell handshake fences (asymmetric_fence.hpp), chosen when formatted.
  FenceMode fences() const;
  std::uint64_t job_id() const { return config_.job_id; }
  std::span<std::byte> bytes() const { return segment_; }

  // The node's slot, or kNoNodeSlot when it hosts no task (or lies outside the partition).
  NodeSlot node_slot(torus_emu::NodeId node) const {
    return node < node_slots_.size() ? node_slots_[node] : kNoNodeSlot;
  }
  // The nodes that host tasks, in slot order.
  std::span<const torus_emu::NodeId> occupied_nodes() const { return occupied_; }

  TaskSlot& task(torus_emu::Rank rank) const;
  JobBarrier& barrier() const;
  // Who takes part in barrier(): the local tasks, plus the libfabric agent when the job spans
  // hosts (it completes a barrier generation only when every host's tasks have arrived).
  std::uint32_t barrier_participants() const;

  // A region requested in JobConfig::regions (64-byte aligned); empty span when there is none.
  // A per-node region's span covers every node's block, other hosts' included (unallocated).
  std::span<std::byte> region(std::string_view name) const;
  // The region's index in the segment's table (what a StoreRequest names), or -1.
  int region_index(std::string_view name) const;
  int region_count() const;
  std::span<std::byte> region(int index) const;  // empty span for an index outside the table
  // The distance between two nodes' blocks of a per-node region (0 for a plain region).
  std::size_t region_stride(std::string_view name) const;

  // Transport ofi only: the ring from `rank` (a local task) to the agent for remote stores
  // (remote_store.hpp), and the agent's doorbell.
  StoreRing& store_ring(torus_emu::Rank rank) const;
  Doorbell& agent_bell() const;
  // A one-sided put into host `r.host`'s copy of a region, queued for the agent; false when the
  // task's store ring is full. Throws std::invalid_argument for a store that check_store refuses.
  bool try_remote_store(torus_emu::Rank from, const StoreRequest& r,
                        std::span<const std::byte> bytes) const;
  // Same, but waits (spin, yield, sleep on the ring's doorbell) while the ring is full.
  void remote_store(torus_emu::Rank from, const StoreRequest& r, std::span<const std::byte> bytes,
                    const WaitPolicy& policy) const;

  // Virtual time: the job's model parameters (nullptr when virtual time is off).
  const virtual_time::Params* vt_params() const {
    return config_.virtual_time ? &*config_.virtual_time : nullptr;
  }

  // The job description's parts in the segment (header, mapping table, host placement table).
  std::vector<ControlPart> description() const;
  // What is corrupt in the job description (magic number, checksum), or nothing.
  std::optional<std::string> check_description() const;

 private:
  struct Layout;
  Job(std::span<std::byte> segment, JobConfig config);

  std::span<std::byte> segment_;
  JobConfig config_;
  std::vector<NodeSlot> node_slots_;         // node -> slot (kNoNodeSlot: no task there)
  std::vector<torus_emu::NodeId> occupied_;  // slot -> node
  std::size_t tasks_offset_ = 0, stores_offset_ = 0;
};

}  // namespace bgl::job_runtime
