#pragma once
// The emulated torus as laid out in the job's segment: per node that hosts tasks two FIFO groups
// of reception FIFOs with a doorbell each (the per-node region "torus.nodes"); per crossable link
// its totals and, with virtual time, its calendar, the virtual-node rings and cells, the outbound
// rings to the libfabric agent (the region "torus"). The job itself (description, task slots,
// regions, remote stores) is the job runtime's Job, which a Machine holds.
//
// Only nodes that host tasks have FIFOs: a node's storage is found through its node slot (its
// index among the occupied nodes, in node-id order), which callers on a hot path resolve once.
#include <atomic>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "bgl/job_runtime/doorbell.hpp"
#include "bgl/job_runtime/job.hpp"
#include "bgl/packet_layer/outbound_ring.hpp"
#include "bgl/packet_layer/reception_fifo.hpp"
#include "bgl/packet_layer/virtual_fifo.hpp"
#include "bgl/virtual_time/horizon.hpp"
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

struct LinkTotals {
  std::atomic<std::uint64_t> packets{0};
  std::atomic<std::uint64_t> bytes{0};
};

// In Machine::link_index(): a link that no packet can cross.
inline constexpr std::uint32_t kNoLink = virtual_time::kNoCalendar;

// The packet layer's regions of the segment.
inline constexpr std::string_view kNodesRegion = "torus.nodes";
inline constexpr std::string_view kTorusRegion = "torus";

class Machine {
 public:
  // `config` with the packet layer's regions added (unchanged when it has them already).
  static job_runtime::JobConfig with_regions(const job_runtime::JobConfig& config);
  // The whole job's segment (Job's, with the packet layer's regions).
  static std::size_t segment_bytes(const job_runtime::JobConfig& config);
  static std::vector<job_runtime::Segment::Extent> used_extents(
      const job_runtime::JobConfig& config);
  // Lays the job out (Job::format, with the packet layer's regions) in a zero-filled segment of
  // segment_bytes(config) bytes and formats this host's FIFOs.
  static Machine format(std::span<std::byte> segment, const job_runtime::JobConfig& config);
  // Validates the segment (Job::attach, then the packet layer's regions) and takes a view; throws
  // ConfigError.
  static Machine attach(std::span<std::byte> segment);

  const job_runtime::Job& job() const { return job_; }
  // The job's shape, mapping and placement (what the torus is).
  const job_runtime::JobConfig& config() const { return job_.config(); }
  const torus_emu::Shape& shape() const { return job_.shape(); }
  const torus_emu::Mapping& mapping() const { return job_.mapping(); }
  const job_runtime::Placement& placement() const { return job_.placement(); }
  bool local(torus_emu::Rank rank) const { return job_.local(rank); }
  job_runtime::NodeSlot node_slot(torus_emu::NodeId node) const { return job_.node_slot(node); }

  // A node that hosts no task has no FIFOs: asking for them throws std::invalid_argument.
  ReceptionFifo fifo(torus_emu::NodeId node, int group, int index) const;
  job_runtime::Doorbell& doorbell(torus_emu::NodeId node, int group) const;
  // fifo() and doorbell() of a slot already resolved (no table look-up).
  ReceptionFifo fifo_in_slot(job_runtime::NodeSlot slot, int group, int index) const;
  job_runtime::Doorbell& doorbell_in_slot(job_runtime::NodeSlot slot, int group) const;
  // Transport ofi only: the ring from `rank` (a local task) to the host's agent.
  OutboundRing& outbound(torus_emu::Rank rank) const;
  // The directed links that packets can cross (routes run between nodes with tasks), each with
  // its totals and, with virtual time, its calendar; link_index() maps every directed link
  // (node * 6 + direction) to its index in links() and calendars(), or to kNoLink.
  std::span<LinkTotals> links() const;
  std::span<const std::uint32_t> link_index() const { return link_index_; }
  // Virtual-node mode: the ring from FIFO group `from` of `node` (which hosts tasks) to the node's
  // other group.
  VirtualFifo& virtual_fifo(torus_emu::NodeId node, int from) const;
  // Virtual-node mode: the shared cells from FIFO group `from` of `node` to its other group.
  VirtualCells& virtual_cells(torus_emu::NodeId node, int from) const;
  // Virtual time: the links' calendars (indexed like links(); empty when off).
  std::span<virtual_time::LinkCalendar> calendars() const;
  // Virtual time, conservatively synchronised: the tasks' bounds (empty otherwise).
  virtual_time::Horizon horizon() const { return horizon_; }
  // Whether a job's tasks synchronise conservatively (virtual time asked so, and the job is one
  // host's, without the coprocessor's second clock).
  static bool synchronised(const job_runtime::JobConfig& config);

 private:
  struct Layout;
  explicit Machine(job_runtime::Job job);
  std::byte* group_region(job_runtime::NodeSlot slot, int group) const;
  std::byte* fifo_region(job_runtime::NodeSlot slot, int group, int index) const;
  job_runtime::NodeSlot checked_slot(torus_emu::NodeId node) const;

  job_runtime::Job job_;
  std::vector<std::uint32_t> link_index_;  // directed link -> links() index (kNoLink: none)
  std::size_t link_count_ = 0;
  std::byte* nodes_ = nullptr;  // the per-node region
  std::byte* torus_ = nullptr;  // the plain region
  std::size_t node_stride_ = 0, group_stride_ = 0, fifo_stride_ = 0;
  std::size_t virtual_offset_ = 0, outbound_offset_ = 0, calendars_offset_ = 0;
  virtual_time::Horizon horizon_;
};

}  // namespace bgl::packet_layer
