#include "bgl/packet_layer/machine.hpp"

#include <spdlog/spdlog.h>
#include <boost/crc.hpp>

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <new>
#include <stdexcept>
#include <string>

#include "bgl/packet_layer/asymmetric_fence.hpp"
#include "bgl/torus_emu/distance.hpp"
#include "bgl/torus_emu/error.hpp"

namespace bgl::packet_layer {
namespace {

constexpr std::uint64_t kMagic = 0x3130554d454c4742ULL;  // "BGLEMU01"
constexpr std::uint32_t kVersion = 10;

constexpr std::size_t align_up(std::size_t n, std::size_t a) {
  return (n + a - 1) / a * a;
}

constexpr int kMaxRegions = 8;
constexpr std::size_t kRegionNameBytes = 16;

struct RegionEntry {
  char name[kRegionNameBytes];
  std::uint64_t offset;
  std::uint64_t bytes;
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
  std::uint64_t mapping_offset, nodes_offset, group_stride, fifo_stride, links_offset, tasks_offset;
  char mapping_source[512];
  std::uint32_t region_count;
  RegionEntry regions[kMaxRegions];
  // Placement: hosts, this host, transport, node -> host table (uint16 per node).
  std::uint32_t hosts, this_host, transport, local_tasks;
  std::uint32_t occupied_nodes;  // nodes that host tasks: the FIFO storage's node slots
  std::uint32_t fences;          // FenceMode, the same for every process of the job on this host
  std::uint64_t node_host_offset, outbound_offset, stores_offset;
  std::uint64_t job_id;
  std::uint64_t vt_offset;  // 0: virtual time off
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

// Which nodes have FIFO storage: those that host tasks, numbered in node-id order.
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

// Which directed links packets can cross, so need totals and a virtual-time calendar. Every route
// runs between two nodes with tasks, minimal in every dimension (deterministic and adaptive routing
// alike), or is a deposit-bit line from a node with tasks along one dimension (any length): so a
// link along dimension d is crossed only at nodes whose other two coordinates each lie on a
// minimal arc between two task coordinates of that dimension. All other links get none.
struct LinkPlan {
  std::vector<std::uint32_t> of_link;  // filled only when asked for
  std::size_t count = 0;

  LinkPlan(const JobConfig& c, bool table) {
    const auto& shape = c.shape;
    std::array<std::vector<bool>, 3> task_at, on_arc;
    for (int d = 0; d < 3; ++d) {
      const auto k = static_cast<std::size_t>(shape.extent(static_cast<torus_emu::Dim>(d)));
      task_at[d].assign(k, false);
      on_arc[d].assign(k, false);
    }
    for (const auto& loc : c.mapping.locations()) {
      const auto at = shape.coord(loc.node);
      for (int d = 0; d < 3; ++d)
        task_at[d][static_cast<std::size_t>(at[static_cast<torus_emu::Dim>(d)])] = true;
    }
    for (int d = 0; d < 3; ++d) {
      const auto dim = static_cast<torus_emu::Dim>(d);
      const int k = shape.extent(dim);
      for (int from = 0; from < k; ++from) {
        if (!task_at[d][static_cast<std::size_t>(from)]) continue;
        for (int to = 0; to < k; ++to) {
          if (!task_at[d][static_cast<std::size_t>(to)]) continue;
          const auto o = torus_emu::offset(shape, dim, from, to);
          for (int i = 0, x = from; i <= o.hops; ++i, x = ((x + o.sign) % k + k) % k)
            on_arc[d][static_cast<std::size_t>(x)] = true;
        }
      }
    }
    const auto links = static_cast<std::size_t>(shape.node_count()) * torus_emu::kDirections;
    if (table) of_link.assign(links, kNoLink);
    for (torus_emu::NodeId n = 0; n < static_cast<torus_emu::NodeId>(shape.node_count()); ++n) {
      const auto at = shape.coord(n);
      std::array<bool, 3> on{};
      for (int d = 0; d < 3; ++d)
        on[d] = on_arc[d][static_cast<std::size_t>(at[static_cast<torus_emu::Dim>(d)])];
      for (int dir = 0; dir < torus_emu::kDirections; ++dir) {
        const int d = dir / 2;  // directions come in +/- pairs per dimension
        if (!on[(d + 1) % 3] || !on[(d + 2) % 3]) continue;
        if (table)
          of_link[static_cast<std::size_t>(n) * torus_emu::kDirections + dir] =
              static_cast<std::uint32_t>(count);
        ++count;
      }
    }
  }
};

// Within the virtual-node area: the rings first, then the cells.
std::size_t virtual_cells_offset(std::size_t occupied) {
  return align_up(occupied * 2 * sizeof(VirtualFifo), 4096);
}

}  // namespace

struct Machine::Layout {
  std::size_t mapping, node_hosts, nodes, group, fifo, links, tasks, virtual_fifos, outbound,
      stores, vt, calendars, total;
  std::vector<std::size_t> regions;

  explicit Layout(const JobConfig& c)
      : Layout(c, NodeSlots(c).nodes.size(), LinkPlan(c, false).count) {}

  // Per-node storage exists for the `occupied` nodes only, per-link storage (totals, virtual-time
  // calendars) for the `crossable` links; every node of the shape has only its host in the
  // placement table.
  Layout(const JobConfig& c, std::size_t occupied, std::size_t crossable) {
    mapping = align_up(sizeof(SegmentHeader), 4096);
    node_hosts = mapping + sizeof(MappingEntry) * static_cast<std::size_t>(c.ntasks());
    nodes = align_up(
        node_hosts + sizeof(std::uint16_t) * static_cast<std::size_t>(c.shape.node_count()), 4096);
    fifo = align_up(ReceptionFifo::region_bytes(c.fifo_packets), 4096);
    group = align_up(sizeof(Doorbell), 4096) + kReceptionFifos * fifo;
    links = nodes + occupied * kFifoGroups * group;
    tasks = align_up(links + sizeof(LinkTotals) * crossable, 64);
    virtual_fifos = align_up(tasks + sizeof(TaskSlot) * static_cast<std::size_t>(c.ntasks()), 4096);
    const std::size_t virtual_bytes =
        c.mode == NodeMode::virtual_node
            ? virtual_cells_offset(occupied) + occupied * 2 * sizeof(VirtualCells)
            : 0;
    outbound = align_up(virtual_fifos + virtual_bytes, 4096);
    const std::size_t outbound_bytes =
        c.placement.transport == Transport::ofi
            ? sizeof(OutboundRing) * static_cast<std::size_t>(c.ntasks())
            : 0;
    stores = align_up(outbound + outbound_bytes, 4096);
    const std::size_t store_bytes = c.placement.transport == Transport::ofi
                                        ? sizeof(StoreRing) * static_cast<std::size_t>(c.ntasks())
                                        : 0;
    vt = align_up(stores + store_bytes, 4096);
    calendars = align_up(vt + sizeof(VirtualTimeBlock), 64);
    total = c.virtual_time
                ? align_up(calendars + sizeof(virtual_time::LinkCalendar) * crossable, 4096)
                : vt;
    if (c.regions.size() > kMaxRegions) throw ConfigError("too many segment regions");
    for (const auto& r : c.regions) {
      if (r.name.empty() || r.name.size() >= kRegionNameBytes)
        throw ConfigError("segment region name '" + r.name + "' must have 1..15 characters");
      regions.push_back(total);
      total = align_up(total + r.bytes, 4096);
    }
  }
};

std::vector<NodeSlot> Machine::node_slots(const JobConfig& config) {
  return NodeSlots(config).of_node;
}

std::size_t Machine::segment_bytes(const JobConfig& config) {
  return Layout(config).total;
}

std::vector<Segment::Extent> Machine::used_extents(const JobConfig& config) {
  JobConfig c = config;
  if (c.placement.node_host.empty()) c.placement = Placement::single(c.shape);
  const NodeSlots slots(c);
  const Layout l(c, slots.nodes.size(), LinkPlan(c, false).count);
  std::vector<Segment::Extent> out{{0, l.nodes}};
  const std::size_t node_bytes = kFifoGroups * l.group;
  for (std::size_t slot = 0; slot < slots.nodes.size(); ++slot) {
    if (!c.placement.local(slots.nodes[slot])) continue;
    const std::size_t at = l.nodes + slot * node_bytes;
    if (out.back().offset + out.back().bytes == at)
      out.back().bytes += node_bytes;
    else
      out.push_back({at, node_bytes});
  }
  if (out.back().offset + out.back().bytes == l.links)
    out.back().bytes += l.total - l.links;
  else
    out.push_back({l.links, l.total - l.links});
  return out;
}

Machine::Machine(std::span<std::byte> segment, JobConfig config)
    : segment_(segment), config_(std::move(config)) {
  if (config_.placement.node_host.empty()) config_.placement = Placement::single(config_.shape);
  NodeSlots slots(config_);
  node_slots_ = std::move(slots.of_node);
  occupied_ = std::move(slots.nodes);
  LinkPlan plan(config_, true);
  link_index_ = std::move(plan.of_link);
  link_count_ = plan.count;
  const Layout l(config_, occupied_.size(), link_count_);
  outbound_offset_ = l.outbound;
  stores_offset_ = l.stores;
  nodes_offset_ = l.nodes;
  group_stride_ = l.group;
  fifo_stride_ = l.fifo;
  links_offset_ = l.links;
  tasks_offset_ = l.tasks;
  virtual_offset_ = l.virtual_fifos;
  vt_offset_ = config_.virtual_time ? l.vt : 0;
}

Machine Machine::format(std::span<std::byte> segment, const JobConfig& config) {
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
  h->nodes_offset = l.nodes;
  h->group_stride = l.group;
  h->fifo_stride = l.fifo;
  h->links_offset = l.links;
  h->tasks_offset = l.tasks;
  std::strncpy(h->mapping_source, c.mapping_source.c_str(), sizeof h->mapping_source - 1);
  h->region_count = static_cast<std::uint32_t>(c.regions.size());
  for (std::size_t i = 0; i < c.regions.size(); ++i) {
    std::strncpy(h->regions[i].name, c.regions[i].name.c_str(), kRegionNameBytes - 1);
    h->regions[i].offset = l.regions[i];
    h->regions[i].bytes = c.regions[i].bytes;
  }
  h->hosts = static_cast<std::uint32_t>(c.placement.host_count());
  h->this_host = static_cast<std::uint32_t>(c.placement.this_host);
  h->transport = static_cast<std::uint32_t>(c.placement.transport);
  h->node_host_offset = l.node_hosts;
  h->job_id = c.job_id;
  h->outbound_offset = l.outbound;
  h->stores_offset = l.stores;
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
  Machine m(segment, c);
  h->occupied_nodes = static_cast<std::uint32_t>(m.occupied_.size());
  for (NodeSlot slot = 0; slot < m.occupied_.size(); ++slot) {
    if (!c.placement.local(m.occupied_[slot])) continue;  // another host's segment holds its FIFOs
    for (int g = 0; g < kFifoGroups; ++g) {
      std::byte* region = m.group_region(slot, g);
      new (region) Doorbell{};
      for (int i = 0; i < kReceptionFifos; ++i)
        ReceptionFifo::format(region + align_up(sizeof(Doorbell), 4096) + i * l.fifo,
                              c.fifo_packets);
    }
  }
  for (auto& link : m.links())
    new (&link) LinkTotals{};
  for (auto& calendar : m.calendars())
    new (&calendar) virtual_time::LinkCalendar{};
  for (int r = 0; r < c.ntasks(); ++r)
    new (&m.task(static_cast<torus_emu::Rank>(r))) TaskSlot{};
  if (c.mode == NodeMode::virtual_node) {
    auto* rings = reinterpret_cast<VirtualFifo*>(segment.data() + l.virtual_fifos);
    for (std::size_t i = 0; i < 2 * m.occupied_.size(); ++i)
      new (&rings[i]) VirtualFifo();
  }
  if (c.placement.transport == Transport::ofi) {
    for (int r = 0; r < c.ntasks(); ++r)
      new (&m.outbound(static_cast<torus_emu::Rank>(r))) OutboundRing{};
    for (int r = 0; r < c.ntasks(); ++r)
      new (&m.store_ring(static_cast<torus_emu::Rank>(r))) StoreRing{};
  }
  h->local_tasks = static_cast<std::uint32_t>(m.local_tasks());
  h->fences =
      static_cast<std::uint32_t>(c.fences ? *c.fences : fence_mode_for_host(m.local_tasks()));
  use_fences(static_cast<FenceMode>(h->fences));
  h->control_crc = crc_of(m.description());
  // Publish last: a reader that sees the magic sees a fully formatted segment.
  std::atomic_thread_fence(std::memory_order_release);
  h->magic = kMagic;
  return m;
}

Machine Machine::attach(std::span<std::byte> segment) {
  if (segment.size() < sizeof(SegmentHeader))
    throw ConfigError("shared-memory segment too small to be a bglemu job");
  const auto* h = std::launder(reinterpret_cast<const SegmentHeader*>(segment.data()));
  if (h->magic != kMagic) throw ConfigError("shared-memory segment is not a bglemu job");
  if (h->version != kVersion || h->header_bytes != sizeof(SegmentHeader))
    throw ConfigError("shared-memory segment was made by another bglemu version");
  if (h->total_bytes > segment.size()) throw ConfigError("shared-memory segment is truncated");
  const torus_emu::Shape shape({h->extent[0], h->extent[1], h->extent[2]},
                               {h->torus[0] != 0, h->torus[1] != 0, h->torus[2] != 0});
  // Everything below indexes memory with these numbers: check them before trusting any.
  if (h->mode > static_cast<std::uint8_t>(NodeMode::virtual_node))
    throw ConfigError("shared-memory segment has an unknown node mode");
  const auto mode = static_cast<NodeMode>(h->mode);
  if (h->ntasks < 1 || h->ntasks > shape.node_count() * tasks_per_node(mode))
    throw ConfigError("shared-memory segment has an impossible task count");
  if (h->fifo_packets < 2 || h->fifo_packets > (1u << 16) ||
      (h->fifo_packets & (h->fifo_packets - 1)) != 0)
    throw ConfigError("shared-memory segment has an impossible FIFO size");
  if (h->mapping_offset < sizeof(SegmentHeader) ||
      h->mapping_offset + sizeof(MappingEntry) * static_cast<std::uint64_t>(h->ntasks) >
          h->nodes_offset ||
      h->nodes_offset > h->total_bytes)
    throw ConfigError("shared-memory segment has a corrupt layout");
  const auto* table = reinterpret_cast<const MappingEntry*>(segment.data() + h->mapping_offset);
  std::vector<torus_emu::TaskLocation> locations(static_cast<std::size_t>(h->ntasks));
  for (int r = 0; r < h->ntasks; ++r)
    locations[static_cast<std::size_t>(r)] = {table[r].node, static_cast<int>(table[r].t)};
  auto mapping =
      torus_emu::Mapping::from_locations(shape, tasks_per_node(mode), std::move(locations));
  if (h->hosts < 1 || h->hosts > static_cast<std::uint32_t>(Placement::kMaxHosts) ||
      h->this_host >= h->hosts || h->transport > static_cast<std::uint32_t>(Transport::ofi) ||
      h->node_host_offset < h->mapping_offset ||
      h->node_host_offset + sizeof(std::uint16_t) * static_cast<std::uint64_t>(shape.node_count()) >
          h->nodes_offset)
    throw ConfigError("shared-memory segment has a corrupt host placement");
  Placement placement;
  placement.this_host = static_cast<int>(h->this_host);
  placement.transport = static_cast<Transport>(h->transport);
  placement.source = "segment";
  for (std::uint32_t i = 0; i < h->hosts; ++i)
    placement.hosts.push_back({"host" + std::to_string(i), "", 0});
  placement.node_host.resize(static_cast<std::size_t>(shape.node_count()));
  std::memcpy(placement.node_host.data(), segment.data() + h->node_host_offset,
              placement.node_host.size() * sizeof(std::uint16_t));
  for (auto host : placement.node_host) {
    if (host >= h->hosts) throw ConfigError("shared-memory segment has a corrupt host placement");
    ++placement.hosts[host].nodes;
  }
  if (h->control_crc != crc_of(description_parts(segment, *h, static_cast<std::size_t>(h->ntasks),
                                                 static_cast<std::size_t>(shape.node_count()))))
    throw ConfigError("shared-memory segment's job description is corrupt (checksum mismatch)");
  JobConfig c{shape,
              mode,
              std::move(mapping),
              h->fifo_packets,
              h->seed,
              std::string(h->mapping_source, strnlen(h->mapping_source, sizeof h->mapping_source)),
              {},
              std::move(placement),
              h->job_id};
  if (h->region_count > kMaxRegions)
    throw ConfigError("shared-memory segment has a corrupt region table");
  for (std::uint32_t i = 0; i < h->region_count; ++i) {
    const auto& e = h->regions[i];
    c.regions.push_back({std::string(e.name, strnlen(e.name, kRegionNameBytes)), e.bytes});
  }
  if (h->vt_offset != 0) {
    if (h->vt_offset < h->stores_offset || h->vt_offset + sizeof(VirtualTimeBlock) > h->total_bytes)
      throw ConfigError("shared-memory segment has a corrupt virtual-time block");
    const auto* block =
        std::launder(reinterpret_cast<const VirtualTimeBlock*>(segment.data() + h->vt_offset));
    c.virtual_time = block->params;
    c.vt_params_source = std::string(block->source, strnlen(block->source, sizeof block->source));
  }
  Machine m(segment, std::move(c));
  if (h->occupied_nodes != m.occupied_.size())
    throw ConfigError("shared-memory segment's count of nodes with tasks (" +
                      std::to_string(h->occupied_nodes) + ") does not match its mapping (" +
                      std::to_string(m.occupied_.size()) + ")");
  if (m.tasks_offset_ != h->tasks_offset || Layout(m.config_).total != h->total_bytes)
    throw ConfigError("shared-memory segment layout does not match its job description");
  if (h->fences > static_cast<std::uint32_t>(FenceMode::symmetric))
    throw ConfigError("shared-memory segment has an unknown fence mode");
  if (!use_fences(m.fences()) && m.fences() == FenceMode::asymmetric)
    spdlog::debug("membarrier(2) unavailable: producers fence every packet (slower streaming)");
  return m;
}

std::vector<ControlPart> Machine::description() const {
  const auto* h = std::launder(reinterpret_cast<const SegmentHeader*>(segment_.data()));
  return description_parts(segment_, *h, static_cast<std::size_t>(config_.ntasks()),
                           static_cast<std::size_t>(config_.shape.node_count()));
}

std::optional<std::string> Machine::check_description() const {
  const auto* h = std::launder(reinterpret_cast<const SegmentHeader*>(segment_.data()));
  if (h->magic != kMagic) return "segment header (magic number)";
  if (h->control_crc != crc_of(description())) return "segment header or mapping (checksum)";
  return std::nullopt;
}

std::byte* Machine::group_region(NodeSlot slot, int group) const {
  return segment_.data() + nodes_offset_ +
         (static_cast<std::size_t>(slot) * kFifoGroups + static_cast<std::size_t>(group)) *
             group_stride_;
}

NodeSlot Machine::checked_slot(torus_emu::NodeId node) const {
  const NodeSlot slot = node_slot(node);
  if (slot == kNoNodeSlot)
    throw std::invalid_argument("node " + std::to_string(node) +
                                " hosts no task, so it has no reception FIFOs");
  return slot;
}

ReceptionFifo Machine::fifo_in_slot(NodeSlot slot, int group, int index) const {
  return ReceptionFifo(group_region(slot, group) + align_up(sizeof(Doorbell), 4096) +
                           static_cast<std::size_t>(index) * fifo_stride_,
                       config_.fifo_packets);
}

Doorbell& Machine::doorbell_in_slot(NodeSlot slot, int group) const {
  return *std::launder(reinterpret_cast<Doorbell*>(group_region(slot, group)));
}

ReceptionFifo Machine::fifo(torus_emu::NodeId node, int group, int index) const {
  return fifo_in_slot(checked_slot(node), group, index);
}

Doorbell& Machine::doorbell(torus_emu::NodeId node, int group) const {
  return doorbell_in_slot(checked_slot(node), group);
}

FenceMode Machine::fences() const {
  return static_cast<FenceMode>(
      std::launder(reinterpret_cast<const SegmentHeader*>(segment_.data()))->fences);
}

int Machine::local_tasks() const {
  return config_.local_tasks();
}

std::uint32_t Machine::barrier_participants() const {
  const auto* h = std::launder(reinterpret_cast<const SegmentHeader*>(segment_.data()));
  return h->local_tasks + (config_.placement.host_count() > 1 ? 1u : 0u);
}

OutboundRing& Machine::outbound(torus_emu::Rank rank) const {
  return std::launder(reinterpret_cast<OutboundRing*>(segment_.data() + outbound_offset_))[rank];
}

StoreRing& Machine::store_ring(torus_emu::Rank rank) const {
  return std::launder(reinterpret_cast<StoreRing*>(segment_.data() + stores_offset_))[rank];
}

bool Machine::try_remote_store(torus_emu::Rank from, const StoreRequest& r,
                               std::span<const std::byte> bytes) const {
  if (config_.placement.transport != Transport::ofi)
    throw std::invalid_argument("remote stores need the libfabric transport");
  if (r.host >= config_.placement.host_count())
    throw std::invalid_argument("remote store to host " + std::to_string(r.host) + " of " +
                                std::to_string(config_.placement.host_count()));
  if (const char* why = check_store(r, bytes.size(), region(static_cast<int>(r.region)).size()))
    throw std::invalid_argument(std::string("malformed remote store: ") + why);
  if (!store_ring(from).try_push(r, bytes)) return false;
  agent_bell().ring();
  return true;
}

void Machine::remote_store(torus_emu::Rank from, const StoreRequest& r,
                           std::span<const std::byte> bytes, const WaitPolicy& policy) const {
  StoreRing& ring = store_ring(from);
  Backoff backoff(policy);
  while (!try_remote_store(from, r, bytes))
    backoff.idle(ring.space, [&] { return !ring.full(); });
}

Doorbell& Machine::agent_bell() const {
  return std::launder(reinterpret_cast<SegmentHeader*>(segment_.data()))->agent_bell;
}

JobBarrier& Machine::barrier() const {
  return std::launder(reinterpret_cast<SegmentHeader*>(segment_.data()))->barrier;
}

std::span<LinkTotals> Machine::links() const {
  return {std::launder(reinterpret_cast<LinkTotals*>(segment_.data() + links_offset_)),
          link_count_};
}

std::span<std::byte> Machine::region(std::string_view name) const {
  const auto* h = std::launder(reinterpret_cast<const SegmentHeader*>(segment_.data()));
  for (std::uint32_t i = 0; i < h->region_count && i < kMaxRegions; ++i) {
    const auto& e = h->regions[i];
    if (name == std::string_view(e.name, strnlen(e.name, kRegionNameBytes)))
      return segment_.subspan(e.offset, e.bytes);
  }
  return {};
}

int Machine::region_count() const {
  const auto* h = std::launder(reinterpret_cast<const SegmentHeader*>(segment_.data()));
  return static_cast<int>(std::min<std::uint32_t>(h->region_count, kMaxRegions));
}

int Machine::region_index(std::string_view name) const {
  const auto* h = std::launder(reinterpret_cast<const SegmentHeader*>(segment_.data()));
  for (int i = 0; i < region_count(); ++i) {
    const auto& e = h->regions[i];
    if (name == std::string_view(e.name, strnlen(e.name, kRegionNameBytes))) return i;
  }
  return -1;
}

std::span<std::byte> Machine::region(int index) const {
  if (index < 0 || index >= region_count()) return {};
  const auto& e =
      std::launder(reinterpret_cast<const SegmentHeader*>(segment_.data()))->regions[index];
  return segment_.subspan(e.offset, e.bytes);
}

VirtualFifo& Machine::virtual_fifo(torus_emu::NodeId node, int from) const {
  auto* rings = std::launder(reinterpret_cast<VirtualFifo*>(segment_.data() + virtual_offset_));
  return rings[static_cast<std::size_t>(checked_slot(node)) * 2 + static_cast<std::size_t>(from)];
}

VirtualCells& Machine::virtual_cells(torus_emu::NodeId node, int from) const {
  auto* cells = std::launder(reinterpret_cast<VirtualCells*>(
      segment_.data() + virtual_offset_ + virtual_cells_offset(occupied_.size())));
  return cells[static_cast<std::size_t>(checked_slot(node)) * 2 + static_cast<std::size_t>(from)];
}

std::span<virtual_time::LinkCalendar> Machine::calendars() const {
  if (vt_offset_ == 0) return {};
  const std::size_t first = align_up(vt_offset_ + sizeof(VirtualTimeBlock), 64);
  return {std::launder(reinterpret_cast<virtual_time::LinkCalendar*>(segment_.data() + first)),
          link_count_};
}

TaskSlot& Machine::task(torus_emu::Rank rank) const {
  return std::launder(reinterpret_cast<TaskSlot*>(segment_.data() + tasks_offset_))[rank];
}

}  // namespace bgl::packet_layer
