#include "bgl/collective_net_emu/region.hpp"

#include <algorithm>
#include <cstring>
#include <new>

#include "bgl/collective_net_emu/layout.hpp"
#include "bgl/collective_net_emu/tree.hpp"
#include "bgl/job_runtime/log.hpp"
#include "bgl/torus_emu/error.hpp"

namespace bgl::collective_net_emu {
namespace {

using namespace layout;

// Where everything goes, computed identically by region_bytes and format.
struct Plan {
  RegionHeader header{};
  std::vector<job_runtime::NodeSlot>
      slot;  // node -> its NodeEntry (only nodes with tasks have one)
  std::vector<NodeEntry> entries;
  std::vector<std::uint32_t> host_tasks;
  std::string description;

  Plan(const job_runtime::JobConfig& config, const Options& options);

 private:
  void fill_entries(const job_runtime::JobConfig& config, const Tree& tree);
  void fill_vt_levels(const job_runtime::JobConfig& config, const Tree& whole);
  NodeEntry& entry(torus_emu::NodeId n) { return entries[slot[n]]; }
};

Plan::Plan(const job_runtime::JobConfig& config, const Options& options) {
  options.validate();
  // Several hosts: a tree per host (no tree edge crosses hosts); the placement is the same on every
  // host, so every host computes the same plan.
  const auto& placement = config.placement;
  const std::size_t hosts = placement.node_host.empty() ? 1 : placement.hosts.size();
  const Tree tree = hosts > 1 ? Tree::build(config.mapping, options.tree, placement.node_host)
                              : Tree::build(config.mapping, options.tree);
  description = tree.describe();
  RegionHeader& h = header;
  h.magic = kMagic;
  h.version = kVersion;
  h.ntasks = static_cast<std::uint32_t>(config.ntasks());
  slot = job_runtime::Job::node_slots(config);
  h.tree_nodes = static_cast<std::uint32_t>(tree.nodes().size());
  h.ring = options.ring_for(config.ntasks());
  h.inbox = options.inbox_packets;
  h.root_node = tree.root();
  // Virtual time times results over the whole partition's tree whatever the hosts, so that a job
  // predicts the same time on one host or several.
  const Tree whole = hosts > 1 ? Tree::build(config.mapping, options.tree) : tree;
  h.height = static_cast<std::uint32_t>(whole.height());
  h.hosts = static_cast<std::uint32_t>(hosts);
  host_tasks.assign(hosts, 0);
  for (int r = 0; r < config.ntasks(); ++r)
    if (hosts > 1)
      ++host_tasks[placement
                       .node_host[config.mapping.location(static_cast<torus_emu::Rank>(r)).node]];
    else
      ++host_tasks[0];
  for (const auto n : host_tasks)
    h.task_hosts += n > 0 ? 1 : 0;
  std::strncpy(h.tree_spec, options.tree.to_string().c_str(), sizeof h.tree_spec - 1);
  fill_entries(config, tree);
  fill_vt_levels(config, whole);
  h.node_slots = static_cast<std::uint32_t>(entries.size());
  h.root_rank = static_cast<std::uint32_t>(entry(tree.root()).local_rank[0]);

  h.nodes_offset = align_up(sizeof(RegionHeader), 64);
  h.wires_offset = align_up(h.nodes_offset + entries.size() * sizeof(NodeEntry), 64);
  h.down_offset = align_up(h.wires_offset + kWireChannels * sizeof(WireState), 4096);
  h.down_stride = align_up(align_up(sizeof(DownControl), 64) + h.ring * sizeof(DownSlot), 4096);
  std::uint64_t ring_offset = 0;
  for (const torus_emu::NodeId n : tree.nodes()) {
    NodeEntry& e = entry(n);
    e.slot_stride = static_cast<std::uint32_t>(up_slot_bytes(e.inputs));
    e.ring_offset = ring_offset;
    ring_offset += std::uint64_t{h.ring} * e.slot_stride;
  }
  h.up_offset = h.down_offset + kCombineClasses * h.down_stride;
  h.up_stride = align_up(ring_offset, 4096);
  h.inbox_offset = h.up_offset + kCombineClasses * h.up_stride;
  h.inbox_stride = align_up(inbox_bytes(h.inbox), 64);
  std::uint64_t end = h.inbox_offset + std::uint64_t{h.ntasks} * hosts * h.inbox_stride;
  h.host_tasks_offset = align_up(end, 64);
  h.host_words_offset = align_up(h.host_tasks_offset + hosts * sizeof(std::uint32_t), 64);
  h.host_vt_offset =
      align_up(h.host_words_offset + kWireChannels * hosts * sizeof(std::uint64_t), 64);
  end = h.host_vt_offset + 2 * hosts * sizeof(std::uint64_t);
  h.deferred_offset = align_up(end, 64);
  h.deferred_stride = align_up(sizeof(DeferredControl) + h.ntasks * kDeferredBytes, 64);
  end = h.deferred_offset + kCombineClasses * h.deferred_stride;
  if (hosts > 1) {
    h.partials_offset = align_up(end, 4096);
    h.partials_stride = align_up(hosts * 2 * std::uint64_t{h.ring} * sizeof(PartialSlot), 4096);
    h.free_offset = h.partials_offset + kCombineClasses * h.partials_stride;
    h.free_stride = align_up(std::uint64_t{h.ring} * hosts * sizeof(std::uint64_t), 64);
    end = h.free_offset + kCombineClasses * h.free_stride;
  }
  h.total_bytes = end;
}

void Plan::fill_entries(const job_runtime::JobConfig& config, const Tree& tree) {
  const auto occupied =
      static_cast<std::size_t>(std::count_if(slot.begin(), slot.end(), [](job_runtime::NodeSlot s) {
        return s != job_runtime::kNoNodeSlot;
      }));
  entries.assign(occupied, NodeEntry{});
  for (auto& e : entries) {
    e.parent = -1;
    for (auto& c : e.child)
      c = -1;
    for (auto& r : e.local_rank)
      r = -1;
  }
  const auto& mapping = config.mapping;
  for (const torus_emu::NodeId n : tree.nodes()) {
    NodeEntry& e = entry(n);
    for (int t = 0; t < mapping.tasks_per_node(); ++t)
      if (const auto r = mapping.rank_at(n, t))
        e.local_rank[e.locals++] = static_cast<std::int32_t>(*r);
    const auto kids = tree.children(n);
    e.children = static_cast<std::uint8_t>(kids.size());
    for (std::size_t k = 0; k < kids.size(); ++k)
      e.child[k] = static_cast<std::int32_t>(kids[k]);
    e.inputs = static_cast<std::uint8_t>(e.locals + e.children);
  }
  for (const torus_emu::NodeId n : tree.nodes()) {
    const NodeEntry& e = entry(n);
    for (int k = 0; k < e.children; ++k) {
      NodeEntry& c = entry(static_cast<torus_emu::NodeId>(e.child[k]));
      c.parent = static_cast<std::int32_t>(n);
      c.position = static_cast<std::uint8_t>(e.locals + k);
    }
  }
}

// One host's timing: a contribution enters at its node, or at the first ancestor with more than
// one input (single-input nodes pass it on untouched), and gains one level's latency per tree edge
// from there to the root.
void Plan::fill_vt_levels(const job_runtime::JobConfig& config, const Tree& whole) {
  const auto& mapping = config.mapping;
  const auto inputs = [&](torus_emu::NodeId n) {
    int locals = 0;
    for (int t = 0; t < mapping.tasks_per_node(); ++t)
      locals += mapping.rank_at(n, t) ? 1 : 0;
    return locals + static_cast<int>(whole.children(n).size());
  };
  for (const torus_emu::NodeId n : whole.nodes()) {
    torus_emu::NodeId at = n;
    while (inputs(at) == 1 && whole.parent(at))
      at = *whole.parent(at);
    entry(n).vt_levels = whole.depth(at);
  }
}

template <class T>
T* at(std::span<std::byte> region, std::uint64_t offset) {
  return std::launder(reinterpret_cast<T*>(region.data() + offset));
}

void format_class(std::span<std::byte> region, const Plan& plan, int c) {
  const RegionHeader& h = plan.header;
  const std::uint64_t down = h.down_offset + static_cast<std::uint64_t>(c) * h.down_stride;
  new (region.data() + down) DownControl{};
  const std::uint64_t slots = down + align_up(sizeof(DownControl), 64);
  for (std::uint32_t i = 0; i < h.ring; ++i) {
    auto* s = new (region.data() + slots + i * sizeof(DownSlot)) DownSlot{};
    s->writable.store(i, std::memory_order_relaxed);
  }
  const std::uint64_t up = h.up_offset + static_cast<std::uint64_t>(c) * h.up_stride;
  for (const NodeEntry& e : plan.entries) {
    if (e.inputs == 0) continue;
    for (std::uint32_t i = 0; i < h.ring; ++i)
      new (region.data() + up + e.ring_offset + std::uint64_t{i} * e.slot_stride) UpSlotMeta{};
  }
}

void format_inbox(std::byte* base, std::uint32_t capacity) {
  new (base) InboxControl{};
  auto* seq = reinterpret_cast<std::atomic<std::uint64_t>*>(base + sizeof(InboxControl));
  for (std::uint32_t i = 0; i < capacity; ++i)
    new (&seq[i]) std::atomic<std::uint64_t>(i);
}

}  // namespace

std::size_t region_bytes(const job_runtime::JobConfig& config) {
  return region_bytes(config, Options::from_environment());
}

std::size_t region_bytes(const job_runtime::JobConfig& config, const Options& options) {
  return Plan(config, options).header.total_bytes;
}

void format(const job_runtime::Job& job) {
  format(job, Options::from_environment());
}

void format(const job_runtime::Job& job, const Options& options) {
  const auto region = job.region(kRegionName);
  const Plan plan(job.config(), options);
  const RegionHeader& h = plan.header;
  if (region.size() < h.total_bytes)
    throw ConfigError("the job segment's '" + std::string(kRegionName) + "' region has " +
                      std::to_string(region.size()) + " bytes, the collective network needs " +
                      std::to_string(h.total_bytes) +
                      " (region_bytes and format saw different options)");
  std::memcpy(region.data() + h.nodes_offset, plan.entries.data(),
              plan.entries.size() * sizeof(NodeEntry));
  for (int w = 0; w < kWireChannels; ++w)
    new (region.data() + h.wires_offset + w * sizeof(WireState)) WireState{};
  for (int c = 0; c < kCombineClasses; ++c)
    format_class(region, plan, c);
  for (int c = 0; c < kCombineClasses; ++c)
    new (region.data() + h.deferred_offset + c * h.deferred_stride) DeferredControl{};
  for (std::uint64_t lane = 0; lane < std::uint64_t{h.ntasks} * h.hosts; ++lane)
    format_inbox(region.data() + h.inbox_offset + lane * h.inbox_stride, h.inbox);
  std::memcpy(region.data() + h.host_tasks_offset, plan.host_tasks.data(),
              plan.host_tasks.size() * sizeof(std::uint32_t));
  for (std::uint64_t w = 0; w < kWireChannels * h.hosts; ++w)
    new (region.data() + h.host_words_offset + w * sizeof(std::uint64_t))
        std::atomic<std::uint64_t>(0);
  std::memset(region.data() + h.host_vt_offset, 0, 2 * h.hosts * sizeof(std::uint64_t));
  if (h.hosts > 1) {
    for (int c = 0; c < kCombineClasses; ++c) {
      for (std::uint64_t i = 0; i < std::uint64_t{h.hosts} * 2 * h.ring; ++i)
        new (region.data() + h.partials_offset + c * h.partials_stride + i * sizeof(PartialSlot))
            PartialSlot{};
      // Down slot i may first take sequence number i, in every host's view.
      for (std::uint64_t i = 0; i < h.ring; ++i)
        for (std::uint64_t host = 0; host < h.hosts; ++host)
          new (region.data() + h.free_offset + c * h.free_stride +
               (i * h.hosts + host) * sizeof(std::uint64_t)) std::atomic<std::uint64_t>(i);
    }
  }
  // Publish last: a task that sees the magic sees a formatted region.
  auto* header = new (region.data()) RegionHeader(h);
  header->magic = 0;
  std::atomic_thread_fence(std::memory_order_release);
  header->magic = kMagic;
  spdlog::debug("collective network: {}, ring {} packets, {} KiB", plan.description, h.ring,
                h.total_bytes >> 10);
}

std::span<std::byte> attach_region(const job_runtime::Job& job) {
  const auto region = job.region(kRegionName);
  if (region.size() < sizeof(RegionHeader))
    throw ConfigError("this job has no collective network region ('" + std::string(kRegionName) +
                      "'); start it with bglrun");
  const auto* h = at<const RegionHeader>(region, 0);
  if (h->magic != kMagic || h->version != kVersion)
    throw ConfigError(
        "the job's collective network region is not formatted (collective_net_emu::format)");
  if (h->total_bytes > region.size() ||
      h->ntasks != static_cast<std::uint32_t>(job.config().ntasks()) ||
      h->node_slots != static_cast<std::uint32_t>(job.occupied_nodes().size()) ||
      h->hosts != static_cast<std::uint32_t>(job.placement().host_count()))
    throw ConfigError("the job's collective network region does not match the job");
  if (h->hosts > 1 && (job.placement().transport != job_runtime::Transport::ofi ||
                       job.region_index(kRegionName) < 0))
    throw ConfigError("the collective network spans " + std::to_string(h->hosts) +
                      " hosts but the job has no libfabric transport to carry it");
  return region;
}

std::vector<job_runtime::ControlPart> constant_parts(const job_runtime::Job& job) {
  const auto region = job.region(kRegionName);
  if (region.size() < sizeof(RegionHeader)) return {};
  const auto* h = at<const RegionHeader>(region, 0);
  std::vector<job_runtime::ControlPart> parts{
      {"collective network region header", region.first(sizeof(RegionHeader))}};
  if (h->nodes_offset <= h->wires_offset && h->wires_offset <= region.size())
    parts.push_back({"collective network tree table",
                     region.subspan(h->nodes_offset, h->wires_offset - h->nodes_offset)});
  return parts;
}

}  // namespace bgl::collective_net_emu
