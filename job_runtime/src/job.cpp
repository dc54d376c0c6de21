#include "bgl/job_runtime/job.hpp"

#include <spdlog/spdlog.h>
#include <boost/crc.hpp>

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <new>
#include <stdexcept>
#include <string>

#include "bgl/job_runtime/agent_wake.hpp"
#include "bgl/job_runtime/asymmetric_fence.hpp"
#include "bgl/torus_emu/error.hpp"

namespace bgl::job_runtime {
namespace {

constexpr std::uint64_t kMagic = 0x3130554d454c4742ULL;  // "BGLEMU01"
constexpr std::uint32_t kVersion = 11;

constexpr std::size_t align_up(std::size_t n, std::size_t a) {
  return (n + a - 1) / a * a;
}

constexpr std::size_t kRegionNameBytes = 16;

struct RegionEntry {
  char name[kRegionNameBytes];
  std::uint64_t offset;
  std::uint64_t bytes;   // the whole region
  std::uint64_t stride;  // per-node regions: between two nodes' blocks; 0 otherwise
  std::uint64_t block;   // per-node regions: the bytes requested per node
};

// Virtual time: the parameter set every task uses, and where it came from.
struct VirtualTimeBlock {
  virtual_time::Params params;
  char source[256];
};

struct MappingEntry {
  std::uint32_t node;
  std::uint32_t t;
};

// The first bytes of the segment. Plain integers only: it is read by other processes.
struct SegmentHeader {
  std::uint64_t magic;
  std::uint32_t version;
  std::uint32_t header_bytes;
  std::uint64_t total_bytes;
  std::int32_t extent[3];
  std::uint8_t torus[3];
  std::uint8_t mode;
  std::int32_t ntasks;
  std::uint32_t fifo_packets;
  std::uint64_t seed;
  std::uint64_t mapping_offset, node_host_offset, tasks_offset, stores_offset, vt_offset;
  std::uint64_t regions_offset;  // where the regions begin (everything before is the job's)
  char mapping_source[512];
  std::uint32_t region_count;
  RegionEntry regions[Job::kMaxRegions];
  // Placement: hosts, this host, transport, node -> host table (uint16 per node).
  std::uint32_t hosts, this_host, transport, local_tasks;
  std::uint32_t occupied_nodes;  // nodes that host tasks: the per-node regions' node slots
  std::uint32_t fences;          // FenceMode, the same for every process of the job on this host
  std::uint64_t job_id;
  // CRC-32 of the job description (this header from `version` up to here, the mapping table and
  // the host placement table): written once at format, checked at attach and by the launcher.
  std::uint32_t control_crc;
  JobBarrier barrier;
  Doorbell agent_bell;
};

std::uint32_t crc_of(std::span<const ControlPart> parts) {
  boost::crc_32_type crc;
  for (const auto& p : parts)
    crc.process_bytes(p.bytes.data(), p.bytes.size());
  return crc.checksum();
}

// The job description's parts, as laid out by `h` (checked against the segment's size first).
std::vector<ControlPart> description_parts(std::span<const std::byte> segment,
                                           const SegmentHeader& h, std::size_t ntasks,
                                           std::size_t nodes) {
  const auto* base = reinterpret_cast<const std::byte*>(&h);
  const std::size_t from = offsetof(SegmentHeader, version);
  return {
      {"segment header", {base + from, offsetof(SegmentHeader, control_crc) - from}},
      {"mapping table", segment.subspan(h.mapping_offset, sizeof(MappingEntry) * ntasks)},
      {"host placement table", segment.subspan(h.node_host_offset, sizeof(std::uint16_t) * nodes)}};
}

// Which nodes have per-node blocks: those that host tasks, numbered in node-id order.
struct NodeSlots {
  std::vector<NodeSlot> of_node;
  std::vector<torus_emu::NodeId> nodes;

  explicit NodeSlots(const JobConfig& c)
      : of_node(static_cast<std::size_t>(c.shape.node_count()), kNoNodeSlot) {
    for (const auto& loc : c.mapping.locations())
      of_node[loc.node] = 0;
    for (torus_emu::NodeId n = 0; n < of_node.size(); ++n)
      if (of_node[n] != kNoNodeSlot) {
        of_node[n] = static_cast<NodeSlot>(nodes.size());
        nodes.push_back(n);
      }
  }
};

const SegmentHeader& header_of(std::span<std::byte> segment) {
  return *std::launder(reinterpret_cast<const SegmentHeader*>(segment.data()));
}

SegmentHeader& mutable_header_of(std::span<std::byte> segment) {
  return *std::launder(reinterpret_cast<SegmentHeader*>(segment.data()));
}

}  // namespace

struct Job::Layout {
  struct Region {
    std::size_t offset, bytes, stride;
  };
  std::size_t mapping, node_hosts, tasks, stores, vt, regions_begin, total;
  std::vector<Region> regions;

  explicit Layout(const JobConfig& c) : Layout(c, NodeSlots(c).nodes.size()) {}

  Layout(const JobConfig& c, std::size_t occupied) {
    mapping = align_up(sizeof(SegmentHeader), 4096);
    node_hosts = mapping + sizeof(MappingEntry) * static_cast<std::size_t>(c.ntasks());
    tasks = align_up(
        node_hosts + sizeof(std::uint16_t) * static_cast<std::size_t>(c.shape.node_count()), 64);
    stores = align_up(tasks + sizeof(TaskSlot) * static_cast<std::size_t>(c.ntasks()), 4096);
    const std::size_t store_bytes = c.placement.transport == Transport::ofi
                                        ? sizeof(StoreRing) * static_cast<std::size_t>(c.ntasks())
                                        : 0;
    vt = align_up(stores + store_bytes, 4096);
    regions_begin = c.virtual_time ? align_up(vt + sizeof(VirtualTimeBlock), 4096) : vt;
    total = regions_begin;
    if (c.regions.size() > kMaxRegions) throw ConfigError("too many segment regions");
    for (const auto& r : c.regions) {
      if (r.name.empty() || r.name.size() >= kRegionNameBytes)
        throw ConfigError("segment region name '" + r.name + "' must have 1..15 characters");
      const std::size_t stride = r.per_node ? align_up(r.bytes, 4096) : 0;
      const std::size_t bytes = r.per_node ? stride * occupied : r.bytes;
      regions.push_back({total, bytes, stride});
      total = align_up(total + bytes, 4096);
    }
  }
};

std::vector<NodeSlot> Job::node_slots(const JobConfig& config) {
  return NodeSlots(config).of_node;
}

std::size_t Job::segment_bytes(const JobConfig& config) {
  return Layout(config).total;
}

std::vector<Segment::Extent> Job::used_extents(const JobConfig& config) {
  JobConfig c = config;
  if (c.placement.node_host.empty()) c.placement = Placement::single(c.shape);
  const NodeSlots slots(c);
  const Layout l(c, slots.nodes.size());
  std::vector<Segment::Extent> out{{0, l.regions_begin}};
  const auto add = [&out](std::size_t at, std::size_t bytes) {
    if (out.back().offset + out.back().bytes == at)
      out.back().bytes += bytes;
    else
      out.push_back({at, bytes});
  };
  for (const auto& r : l.regions) {
    const std::size_t end = align_up(r.offset + r.bytes, 4096);
    if (r.stride == 0) {
      add(r.offset, end - r.offset);
      continue;
    }
    for (std::size_t slot = 0; slot < slots.nodes.size(); ++slot)
      if (c.placement.local(slots.nodes[slot])) add(r.offset + slot * r.stride, r.stride);
  }
  return out;
}

Job::Job(std::span<std::byte> segment, JobConfig config)
    : segment_(segment), config_(std::move(config)) {
  if (config_.placement.node_host.empty()) config_.placement = Placement::single(config_.shape);
  NodeSlots slots(config_);
  node_slots_ = std::move(slots.of_node);
  occupied_ = std::move(slots.nodes);
  const Layout l(config_, occupied_.size());
  tasks_offset_ = l.tasks;
  stores_offset_ = l.stores;
}

Job Job::format(std::span<std::byte> segment, const JobConfig& config) {
  JobConfig c = config;
  if (c.placement.node_host.empty()) c.placement = Placement::single(c.shape);
  const Layout l(c);
  if (segment.size() < l.total) throw ConfigError("shared-memory segment too small for the job");
  auto* h = new (segment.data()) SegmentHeader{};
  h->version = kVersion;
  h->header_bytes = sizeof(SegmentHeader);
  h->total_bytes = l.total;
  for (int d = 0; d < 3; ++d) {
    h->extent[d] = c.shape.extent(static_cast<torus_emu::Dim>(d));
    h->torus[d] = c.shape.is_torus(static_cast<torus_emu::Dim>(d));
  }
  h->mode = static_cast<std::uint8_t>(c.mode);
  h->ntasks = c.ntasks();
  h->fifo_packets = c.fifo_packets;
  h->seed = c.seed;
  h->mapping_offset = l.mapping;
  h->node_host_offset = l.node_hosts;
  h->tasks_offset = l.tasks;
  h->stores_offset = l.stores;
  h->regions_offset = l.regions_begin;
  std::strncpy(h->mapping_source, c.mapping_source.c_str(), sizeof h->mapping_source - 1);
  h->region_count = static_cast<std::uint32_t>(c.regions.size());
  for (std::size_t i = 0; i < c.regions.size(); ++i) {
    std::strncpy(h->regions[i].name, c.regions[i].name.c_str(), kRegionNameBytes - 1);
    h->regions[i].offset = l.regions[i].offset;
    h->regions[i].bytes = l.regions[i].bytes;
    h->regions[i].stride = l.regions[i].stride;
    h->regions[i].block = c.regions[i].per_node ? c.regions[i].bytes : 0;
  }
  h->hosts = static_cast<std::uint32_t>(c.placement.host_count());
  h->this_host = static_cast<std::uint32_t>(c.placement.this_host);
  h->transport = static_cast<std::uint32_t>(c.placement.transport);
  h->job_id = c.job_id;
  if (c.virtual_time) {
    h->vt_offset = l.vt;
    auto* block = new (segment.data() + l.vt) VirtualTimeBlock{*c.virtual_time, {}};
    std::strncpy(block->source, c.vt_params_source.c_str(), sizeof block->source - 1);
  }
  std::memcpy(segment.data() + l.node_hosts, c.placement.node_host.data(),
              c.placement.node_host.size() * sizeof(std::uint16_t));
  auto* table = reinterpret_cast<MappingEntry*>(segment.data() + l.mapping);
  for (int r = 0; r < c.ntasks(); ++r) {
    const auto loc = c.mapping.location(static_cast<torus_emu::Rank>(r));
    table[r] = MappingEntry{loc.node, static_cast<std::uint32_t>(loc.t)};
  }
  Job job(segment, c);
  h->occupied_nodes = static_cast<std::uint32_t>(job.occupied_.size());
  for (int r = 0; r < c.ntasks(); ++r)
    new (&job.task(static_cast<torus_emu::Rank>(r))) TaskSlot{};
  if (c.placement.transport == Transport::ofi)
    for (int r = 0; r < c.ntasks(); ++r)
      new (&job.store_ring(static_cast<torus_emu::Rank>(r))) StoreRing{};
  h->local_tasks = static_cast<std::uint32_t>(job.local_tasks());
  h->fences =
      static_cast<std::uint32_t>(c.fences ? *c.fences : fence_mode_for_host(job.local_tasks()));
  use_fences(static_cast<FenceMode>(h->fences));
  h->control_crc = crc_of(job.description());
  // Publish last: a reader that sees the magic sees a fully formatted segment (the regions' owners
  // format theirs before the launcher starts any task).
  std::atomic_thread_fence(std::memory_order_release);
  h->magic = kMagic;
  return job;
}

namespace {

// The placement table of the segment, checked entry by entry.
Placement placement_of(std::span<std::byte> segment, const SegmentHeader& h,
                       const torus_emu::Shape& shape) {
  if (h.hosts < 1 || h.hosts > static_cast<std::uint32_t>(Placement::kMaxHosts) ||
      h.this_host >= h.hosts || h.transport > static_cast<std::uint32_t>(Transport::ofi) ||
      h.node_host_offset < h.mapping_offset ||
      h.node_host_offset + sizeof(std::uint16_t) * static_cast<std::uint64_t>(shape.node_count()) >
          h.tasks_offset)
    throw ConfigError("shared-memory segment has a corrupt host placement");
  Placement placement;
  placement.this_host = static_cast<int>(h.this_host);
  placement.transport = static_cast<Transport>(h.transport);
  placement.source = "segment";
  for (std::uint32_t i = 0; i < h.hosts; ++i)
    placement.hosts.push_back({"host" + std::to_string(i), "", 0});
  placement.node_host.resize(static_cast<std::size_t>(shape.node_count()));
  std::memcpy(placement.node_host.data(), segment.data() + h.node_host_offset,
              placement.node_host.size() * sizeof(std::uint16_t));
  for (auto host : placement.node_host) {
    if (host >= h.hosts) throw ConfigError("shared-memory segment has a corrupt host placement");
    ++placement.hosts[host].nodes;
  }
  return placement;
}

// The mapping table of the segment (checked by Mapping::from_locations).
torus_emu::Mapping mapping_of(std::span<std::byte> segment, const SegmentHeader& h,
                              const torus_emu::Shape& shape, NodeMode mode) {
  if (h.mapping_offset < sizeof(SegmentHeader) ||
      h.mapping_offset + sizeof(MappingEntry) * static_cast<std::uint64_t>(h.ntasks) >
          h.tasks_offset ||
      h.tasks_offset > h.total_bytes)
    throw ConfigError("shared-memory segment has a corrupt layout");
  const auto* table = reinterpret_cast<const MappingEntry*>(segment.data() + h.mapping_offset);
  std::vector<torus_emu::TaskLocation> locations(static_cast<std::size_t>(h.ntasks));
  for (int r = 0; r < h.ntasks; ++r)
    locations[static_cast<std::size_t>(r)] = {table[r].node, static_cast<int>(table[r].t)};
  return torus_emu::Mapping::from_locations(shape, tasks_per_node(mode), std::move(locations));
}

}  // namespace

Job Job::attach(std::span<std::byte> segment) {
  if (segment.size() < sizeof(SegmentHeader))
    throw ConfigError("shared-memory segment too small to be a bglemu job");
  const SegmentHeader& h = header_of(segment);
  if (h.magic != kMagic) throw ConfigError("shared-memory segment is not a bglemu job");
  if (h.version != kVersion || h.header_bytes != sizeof(SegmentHeader))
    throw ConfigError("shared-memory segment was made by another bglemu version");
  if (h.total_bytes > segment.size()) throw ConfigError("shared-memory segment is truncated");
  const torus_emu::Shape shape({h.extent[0], h.extent[1], h.extent[2]},
                               {h.torus[0] != 0, h.torus[1] != 0, h.torus[2] != 0});
  // Everything below indexes memory with these numbers: check them before trusting any.
  if (h.mode > static_cast<std::uint8_t>(NodeMode::virtual_node))
    throw ConfigError("shared-memory segment has an unknown node mode");
  const auto mode = static_cast<NodeMode>(h.mode);
  if (h.ntasks < 1 || h.ntasks > shape.node_count() * tasks_per_node(mode))
    throw ConfigError("shared-memory segment has an impossible task count");
  if (h.fifo_packets < 2 || h.fifo_packets > (1u << 16) ||
      (h.fifo_packets & (h.fifo_packets - 1)) != 0)
    throw ConfigError("shared-memory segment has an impossible FIFO size");
  auto mapping = mapping_of(segment, h, shape, mode);
  auto placement = placement_of(segment, h, shape);
  if (h.control_crc != crc_of(description_parts(segment, h, static_cast<std::size_t>(h.ntasks),
                                                static_cast<std::size_t>(shape.node_count()))))
    throw ConfigError("shared-memory segment's job description is corrupt (checksum mismatch)");
  JobConfig c{shape,
              mode,
              std::move(mapping),
              h.fifo_packets,
              h.seed,
              std::string(h.mapping_source, strnlen(h.mapping_source, sizeof h.mapping_source)),
              {},
              std::move(placement),
              h.job_id};
  if (h.region_count > kMaxRegions)
    throw ConfigError("shared-memory segment has a corrupt region table");
  for (std::uint32_t i = 0; i < h.region_count; ++i) {
    const auto& e = h.regions[i];
    const bool per_node = e.stride != 0;
    c.regions.push_back({std::string(e.name, strnlen(e.name, kRegionNameBytes)),
                         per_node ? e.block : e.bytes, per_node});
  }
  if (h.vt_offset != 0) {
    if (h.vt_offset < h.stores_offset || h.vt_offset + sizeof(VirtualTimeBlock) > h.total_bytes)
      throw ConfigError("shared-memory segment has a corrupt virtual-time block");
    const auto* block =
        std::launder(reinterpret_cast<const VirtualTimeBlock*>(segment.data() + h.vt_offset));
    c.virtual_time = block->params;
    c.vt_params_source = std::string(block->source, strnlen(block->source, sizeof block->source));
  }
  Job job(segment, std::move(c));
  if (h.occupied_nodes != job.occupied_.size())
    throw ConfigError("shared-memory segment's count of nodes with tasks (" +
                      std::to_string(h.occupied_nodes) + ") does not match its mapping (" +
                      std::to_string(job.occupied_.size()) + ")");
  const Layout l(job.config_, job.occupied_.size());
  if (job.tasks_offset_ != h.tasks_offset || l.total != h.total_bytes)
    throw ConfigError("shared-memory segment layout does not match its job description");
  for (std::uint32_t i = 0; i < h.region_count; ++i)
    if (h.regions[i].offset != l.regions[i].offset || h.regions[i].bytes != l.regions[i].bytes)
      throw ConfigError("shared-memory segment's region table does not match its job description");
  if (h.fences > static_cast<std::uint32_t>(FenceMode::symmetric))
    throw ConfigError("shared-memory segment has an unknown fence mode");
  if (!use_fences(job.fences()) && job.fences() == FenceMode::asymmetric)
    spdlog::debug("membarrier(2) unavailable: producers fence every packet (slower streaming)");
  return job;
}

std::vector<ControlPart> Job::description() const {
  return description_parts(segment_, header_of(segment_),
                           static_cast<std::size_t>(config_.ntasks()),
                           static_cast<std::size_t>(config_.shape.node_count()));
}

std::optional<std::string> Job::check_description() const {
  if (header_of(segment_).magic != kMagic) return "segment header (magic number)";
  if (header_of(segment_).control_crc != crc_of(description()))
    return "segment header or mapping (checksum)";
  return std::nullopt;
}

FenceMode Job::fences() const {
  return static_cast<FenceMode>(header_of(segment_).fences);
}

int Job::local_tasks() const {
  return config_.local_tasks();
}

int Job::busy_threads() const {
  return config_.busy_threads();
}

std::uint32_t Job::barrier_participants() const {
  return header_of(segment_).local_tasks + (config_.placement.host_count() > 1 ? 1u : 0u);
}

TaskSlot& Job::task(torus_emu::Rank rank) const {
  return std::launder(reinterpret_cast<TaskSlot*>(segment_.data() + tasks_offset_))[rank];
}

JobBarrier& Job::barrier() const {
  return mutable_header_of(segment_).barrier;
}

Doorbell& Job::agent_bell() const {
  return mutable_header_of(segment_).agent_bell;
}

StoreRing& Job::store_ring(torus_emu::Rank rank) const {
  return std::launder(reinterpret_cast<StoreRing*>(segment_.data() + stores_offset_))[rank];
}

bool Job::try_remote_store(torus_emu::Rank from, const StoreRequest& r,
                           std::span<const std::byte> bytes) const {
  if (config_.placement.transport != Transport::ofi)
    throw std::invalid_argument("remote stores need the libfabric transport");
  if (r.host >= config_.placement.host_count())
    throw std::invalid_argument("remote store to host " + std::to_string(r.host) + " of " +
                                std::to_string(config_.placement.host_count()));
  if (const char* why = check_store(r, bytes.size(), region(static_cast<int>(r.region)).size()))
    throw std::invalid_argument(std::string("malformed remote store: ") + why);
  if (!store_ring(from).try_push(r, bytes)) return false;
  ring_agent(agent_bell());
  return true;
}

void Job::remote_store(torus_emu::Rank from, const StoreRequest& r,
                       std::span<const std::byte> bytes, const WaitPolicy& policy) const {
  StoreRing& ring = store_ring(from);
  Backoff backoff(policy);
  while (!try_remote_store(from, r, bytes))
    backoff.idle(ring.space, [&] { return !ring.full(); });
}

int Job::region_count() const {
  return static_cast<int>(std::min<std::uint32_t>(header_of(segment_).region_count, kMaxRegions));
}

int Job::region_index(std::string_view name) const {
  const auto& h = header_of(segment_);
  for (int i = 0; i < region_count(); ++i) {
    const auto& e = h.regions[i];
    if (name == std::string_view(e.name, strnlen(e.name, kRegionNameBytes))) return i;
  }
  return -1;
}

std::span<std::byte> Job::region(int index) const {
  if (index < 0 || index >= region_count()) return {};
  const auto& e = header_of(segment_).regions[index];
  return segment_.subspan(e.offset, e.bytes);
}

std::span<std::byte> Job::region(std::string_view name) const {
  return region(region_index(name));
}

std::size_t Job::region_stride(std::string_view name) const {
  const int i = region_index(name);
  return i < 0 ? 0 : header_of(segment_).regions[i].stride;
}

}  // namespace bgl::job_runtime
