#include "bgl/packet_layer/machine.hpp"

#include <algorithm>
#include <array>
#include <cstddef>
#include <new>
#include <stdexcept>
#include <string>

#include "bgl/torus_emu/distance.hpp"
#include "bgl/torus_emu/error.hpp"

namespace bgl::packet_layer {
namespace {

constexpr std::size_t align_up(std::size_t n, std::size_t a) {
  return (n + a - 1) / a * a;
}

// Which directed links packets can cross, so need totals and a virtual-time calendar. Every route
// runs between two nodes with tasks, minimal in every dimension (deterministic and adaptive routing
// alike), or is a deposit-bit line from a node with tasks along one dimension (any length): so a
// link along dimension d is crossed only at nodes whose other two coordinates each lie on a
// minimal arc between two task coordinates of that dimension. All other links get none.
struct LinkPlan {
  std::vector<std::uint32_t> of_link;  // filled only when asked for
  std::size_t count = 0;

  LinkPlan(const job_runtime::JobConfig& c, bool table) {
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

// A FIFO group's doorbell has a page of its own; the group's FIFOs follow it.
constexpr std::size_t kBellBytes = align_up(sizeof(job_runtime::Doorbell), 4096);

// Within the virtual-node area: the rings first, then the cells.
std::size_t virtual_cells_offset(std::size_t occupied) {
  return align_up(occupied * 2 * sizeof(VirtualFifo), 4096);
}

std::size_t occupied_nodes(const job_runtime::JobConfig& c) {
  const auto slots = job_runtime::Job::node_slots(c);
  return static_cast<std::size_t>(
      std::count_if(slots.begin(), slots.end(),
                    [](job_runtime::NodeSlot s) { return s != job_runtime::kNoNodeSlot; }));
}

}  // namespace

// The packet layer's two regions: per node, two groups of a doorbell (a page of its own) and 8
// reception FIFOs; for the job, the links' totals, the virtual-node area, the outbound rings and
// the links' calendars.
struct Machine::Layout {
  std::size_t fifo, group, node;                                   // "torus.nodes", per node
  std::size_t virtual_fifos, outbound, calendars, horizon, torus;  // "torus"

  Layout(const job_runtime::JobConfig& c, std::size_t occupied, std::size_t crossable) {
    fifo = align_up(ReceptionFifo::region_bytes(c.fifo_packets), 4096);
    group = kBellBytes + kReceptionFifos * fifo;
    node = kFifoGroups * group;
    virtual_fifos = align_up(sizeof(LinkTotals) * crossable, 4096);
    const std::size_t virtual_bytes =
        c.mode == job_runtime::NodeMode::virtual_node
            ? virtual_cells_offset(occupied) + occupied * 2 * sizeof(VirtualCells)
            : 0;
    outbound = align_up(virtual_fifos + virtual_bytes, 4096);
    const std::size_t outbound_bytes =
        c.placement.transport == job_runtime::Transport::ofi
            ? sizeof(OutboundRing) * static_cast<std::size_t>(c.ntasks())
            : 0;
    calendars = align_up(outbound + outbound_bytes, 64);
    horizon = align_up(
        calendars + (c.virtual_time ? sizeof(virtual_time::LinkCalendar) * crossable : 0), 64);
    torus = horizon + (Machine::synchronised(c) ? virtual_time::Horizon::bytes(c.ntasks()) : 0);
  }
};

job_runtime::JobConfig Machine::with_regions(const job_runtime::JobConfig& config) {
  job_runtime::JobConfig c = config;
  const auto has = [&c](std::string_view name) {
    return std::any_of(c.regions.begin(), c.regions.end(),
                       [name](const auto& r) { return r.name == name; });
  };
  if (has(kNodesRegion) && has(kTorusRegion)) return c;
  const Layout l(c, occupied_nodes(c), LinkPlan(c, false).count);
  // Last, so that the regions the job asked for keep the indices it knows them by.
  c.regions.push_back({std::string(kNodesRegion), l.node, true});
  c.regions.push_back({std::string(kTorusRegion), l.torus, false});
  return c;
}

std::size_t Machine::segment_bytes(const job_runtime::JobConfig& config) {
  return job_runtime::Job::segment_bytes(with_regions(config));
}

std::vector<job_runtime::Segment::Extent> Machine::used_extents(
    const job_runtime::JobConfig& config) {
  return job_runtime::Job::used_extents(with_regions(config));
}

Machine::Machine(job_runtime::Job job) : job_(std::move(job)) {
  LinkPlan plan(job_.config(), true);
  link_index_ = std::move(plan.of_link);
  link_count_ = plan.count;
  const Layout l(job_.config(), job_.occupied_nodes().size(), link_count_);
  const auto nodes = job_.region(kNodesRegion);
  const auto torus = job_.region(kTorusRegion);
  if (nodes.size() != l.node * job_.occupied_nodes().size() ||
      job_.region_stride(kNodesRegion) != align_up(l.node, 4096) || torus.size() != l.torus)
    throw ConfigError("shared-memory segment's torus regions do not match its job description");
  nodes_ = nodes.data();
  torus_ = torus.data();
  node_stride_ = job_.region_stride(kNodesRegion);
  group_stride_ = l.group;
  fifo_stride_ = l.fifo;
  virtual_offset_ = l.virtual_fifos;
  outbound_offset_ = l.outbound;
  calendars_offset_ = l.calendars;
  if (synchronised(job_.config()))
    horizon_ = virtual_time::Horizon::attach(torus.subspan(l.horizon, l.torus - l.horizon));
}

// Conservative synchronisation covers the tasks of one host, each with one clock: several hosts
// and the coprocessor's second clock keep host order (docs/VIRTUAL_TIME.md).
bool Machine::synchronised(const job_runtime::JobConfig& c) {
  return c.virtual_time && c.virtual_time->sync == virtual_time::Sync::conservative &&
         c.placement.host_count() <= 1 && c.mode != job_runtime::NodeMode::coprocessor;
}

Machine Machine::format(std::span<std::byte> segment, const job_runtime::JobConfig& config) {
  Machine m(job_runtime::Job::format(segment, with_regions(config)));
  const auto& c = m.config();
  const auto occupied = m.job_.occupied_nodes();
  for (job_runtime::NodeSlot slot = 0; slot < occupied.size(); ++slot) {
    if (!c.placement.local(occupied[slot])) continue;  // another host's segment holds its FIFOs
    for (int g = 0; g < kFifoGroups; ++g) {
      new (&m.doorbell_in_slot(slot, g)) job_runtime::Doorbell{};
      for (int i = 0; i < kReceptionFifos; ++i)
        ReceptionFifo::format(m.fifo_region(slot, g, i), c.fifo_packets);
    }
  }
  for (auto& link : m.links())
    new (&link) LinkTotals{};
  for (auto& calendar : m.calendars())
    new (&calendar) virtual_time::LinkCalendar{};
  if (synchronised(c)) {
    const Layout l(c, occupied.size(), m.link_count_);
    m.horizon_ = virtual_time::Horizon::format(std::span(m.torus_ + l.horizon, l.torus - l.horizon),
                                               c.ntasks());
  }
  if (c.mode == job_runtime::NodeMode::virtual_node) {
    auto* rings = reinterpret_cast<VirtualFifo*>(m.torus_ + m.virtual_offset_);
    for (std::size_t i = 0; i < 2 * occupied.size(); ++i)
      new (&rings[i]) VirtualFifo();
  }
  if (c.placement.transport == job_runtime::Transport::ofi)
    for (int r = 0; r < c.ntasks(); ++r)
      new (&m.outbound(static_cast<torus_emu::Rank>(r))) OutboundRing{};
  return m;
}

Machine Machine::attach(std::span<std::byte> segment) {
  return Machine(job_runtime::Job::attach(segment));
}

std::byte* Machine::group_region(job_runtime::NodeSlot slot, int group) const {
  return nodes_ + static_cast<std::size_t>(slot) * node_stride_ +
         static_cast<std::size_t>(group) * group_stride_;
}

std::byte* Machine::fifo_region(job_runtime::NodeSlot slot, int group, int index) const {
  return group_region(slot, group) + kBellBytes + static_cast<std::size_t>(index) * fifo_stride_;
}

job_runtime::NodeSlot Machine::checked_slot(torus_emu::NodeId node) const {
  const job_runtime::NodeSlot slot = node_slot(node);
  if (slot == job_runtime::kNoNodeSlot)
    throw std::invalid_argument("node " + std::to_string(node) +
                                " hosts no task, so it has no reception FIFOs");
  return slot;
}

ReceptionFifo Machine::fifo_in_slot(job_runtime::NodeSlot slot, int group, int index) const {
  return ReceptionFifo(fifo_region(slot, group, index), config().fifo_packets);
}

job_runtime::Doorbell& Machine::doorbell_in_slot(job_runtime::NodeSlot slot, int group) const {
  return *std::launder(reinterpret_cast<job_runtime::Doorbell*>(group_region(slot, group)));
}

ReceptionFifo Machine::fifo(torus_emu::NodeId node, int group, int index) const {
  return fifo_in_slot(checked_slot(node), group, index);
}

job_runtime::Doorbell& Machine::doorbell(torus_emu::NodeId node, int group) const {
  return doorbell_in_slot(checked_slot(node), group);
}

OutboundRing& Machine::outbound(torus_emu::Rank rank) const {
  return std::launder(reinterpret_cast<OutboundRing*>(torus_ + outbound_offset_))[rank];
}

std::span<LinkTotals> Machine::links() const {
  return {std::launder(reinterpret_cast<LinkTotals*>(torus_)), link_count_};
}

VirtualFifo& Machine::virtual_fifo(torus_emu::NodeId node, int from) const {
  auto* rings = std::launder(reinterpret_cast<VirtualFifo*>(torus_ + virtual_offset_));
  return rings[static_cast<std::size_t>(checked_slot(node)) * 2 + static_cast<std::size_t>(from)];
}

VirtualCells& Machine::virtual_cells(torus_emu::NodeId node, int from) const {
  auto* cells = std::launder(reinterpret_cast<VirtualCells*>(
      torus_ + virtual_offset_ + virtual_cells_offset(job_.occupied_nodes().size())));
  return cells[static_cast<std::size_t>(checked_slot(node)) * 2 + static_cast<std::size_t>(from)];
}

std::span<virtual_time::LinkCalendar> Machine::calendars() const {
  if (!config().virtual_time) return {};
  return {std::launder(reinterpret_cast<virtual_time::LinkCalendar*>(torus_ + calendars_offset_)),
          link_count_};
}

}  // namespace bgl::packet_layer
