#include "bgl/collectives/cost_model.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <sstream>
#include <stdexcept>

#include "bgl/torus_emu/distance.hpp"
#include "bgl/torus_emu/link_counters.hpp"

namespace bgl::collectives {

namespace {

std::uint64_t packets_for(std::uint64_t bytes, const CostConstants& c) {
  return std::max<std::uint64_t>(1, (bytes + c.packet_payload - 1) / c.packet_payload);
}

// Wire bytes of a message of `bytes` payload: full packets plus a last one rounded up to 32 B.
std::uint64_t wire_bytes(std::uint64_t bytes, const CostConstants& c) {
  const std::uint64_t full = bytes / c.packet_payload;
  const std::uint64_t rest = bytes % c.packet_payload;
  std::uint64_t w = full * (c.packet_payload + c.packet_header + c.packet_wire_overhead);
  if (rest || bytes == 0) w += ((rest + c.packet_header + 31) / 32) * 32 + c.packet_wire_overhead;
  return w;
}

int tree_depth(const torus_emu::Shape& s) {
  int d = 0;
  for (torus_emu::Dim dim : {torus_emu::Dim::x, torus_emu::Dim::y, torus_emu::Dim::z})
    d += s.is_torus(dim) ? s.extent(dim) / 2 : s.extent(dim) - 1;
  return std::max(d, 1);
}

}  // namespace

CostReport estimate_cost(const Schedule& schedule, const Params& params, const VerifyResult& trace,
                         const CostConstants& c) {
  if (!params.topology.mapping)
    throw std::invalid_argument("cost model: parameters carry no rank mapping (topology.mapping)");
  if (!trace.ok)
    throw std::invalid_argument("cost model: the schedule did not verify:\n" + trace.summary());
  const torus_emu::Mapping& m = *params.topology.mapping;
  const torus_emu::Shape& shape = m.shape();
  CostReport out;
  out.rounds = trace.rounds;
  torus_emu::LinkCounters total(shape);
  std::vector<std::uint64_t> out_bytes(static_cast<std::size_t>(params.p), 0);
  const double cycle_ns = 1e9 / c.cpu_hz;

  // Per level: link wire bytes, per-rank CPU cycles, longest route.
  struct Level {
    std::map<std::size_t, std::uint64_t> link_wire;  // node * 6 + dir -> wire bytes
    std::map<int, double> cpu;                       // rank -> cycles
    int max_hops = 0;
    double hw_ns = 0;
  };
  std::map<int, Level> levels;
  auto link_key = [](const torus_emu::Link& l) {
    return static_cast<std::size_t>(l.node) * torus_emu::kDirections + torus_emu::index_of(l.dir);
  };

  for (const Transfer& t : trace.transfers) {
    Level& lv = levels[t.level];
    if (t.kind == StepKind::gi_barrier) {
      lv.hw_ns = std::max(lv.hw_ns, c.gi_barrier_ns);
      continue;
    }
    if (is_tree(t.kind)) {
      out.tree_bytes += t.bytes;
      const std::uint64_t pk =
          std::max<std::uint64_t>(1, (t.bytes + c.tree_packet - 1) / c.tree_packet);
      const double stream = static_cast<double>(pk * (c.tree_packet + c.tree_overhead)) /
                            c.tree_bytes_per_cycle * cycle_ns;
      // Allreduce and allgather go up and down the tree; broadcast and reduce cross it once.
      const int passes = is_tree_all(t.kind) ? 2 : 1;
      lv.hw_ns = std::max(lv.hw_ns, stream + passes * tree_depth(shape) * c.tree_hop_ns);
      continue;
    }
    ++out.messages;
    const torus_emu::NodeId src = params.topology.node(t.source);
    torus_emu::Route route(src);
    if (t.kind == StepKind::line_send) {
      const torus_emu::NodeId dst = params.topology.node(t.receivers.back());
      const auto line = torus_emu::make_line(shape, src, dst, t.dir);
      if (!line.line)
        throw std::invalid_argument("cost model: line from rank " + std::to_string(t.source) +
                                    ": " + line.error);
      route = torus_emu::line_route(shape, *line.line);
      // Every receiver must be on the line, in order.
      std::vector<torus_emu::NodeId> on{};
      torus_emu::NodeId at = src;
      for (torus_emu::Direction d : route.steps()) {
        at = *shape.neighbour(at, d);
        on.push_back(at);
      }
      std::size_t k = 0;
      for (int r : t.receivers) {
        const torus_emu::NodeId n = params.topology.node(r);
        while (k < on.size() && on[k] != n)
          ++k;
        if (k == on.size())
          throw std::invalid_argument("cost model: rank " + std::to_string(r) +
                                      " is not on the line of rank " + std::to_string(t.source) +
                                      " (in order)");
      }
    } else {
      route = torus_emu::deterministic_route(shape, src, params.topology.node(t.receivers[0]));
    }
    const std::uint64_t wire = wire_bytes(t.bytes, c);
    const std::uint64_t pk = packets_for(t.bytes, c);
    route.for_each_link(shape, [&](const torus_emu::Link& l) {
      total.add(l, {pk, t.bytes});
      lv.link_wire[link_key(l)] += wire;
    });
    out.hop_bytes += t.bytes * static_cast<std::uint64_t>(route.hops());
    out_bytes[static_cast<std::size_t>(t.source)] += t.bytes;
    lv.max_hops = std::max(lv.max_hops, route.hops());
    lv.cpu[t.source] += c.message_cycles + static_cast<double>(pk) * c.packet_write_cycles;
    for (int r : t.receivers)
      lv.cpu[r] += static_cast<double>(pk) * c.packet_read_cycles;
  }
  const auto b = total.busiest(&out.busiest);
  out.max_link_bytes = b.bytes;
  out.max_rank_bytes_out = out_bytes.empty() ? 0 : *std::ranges::max_element(out_bytes);

  double cycles = 0;
  double hw_ns = 0;
  for (const auto& [level, lv] : levels) {
    std::uint64_t busiest = 0;
    for (const auto& [k, w] : lv.link_wire)
      busiest = std::max(busiest, w);
    double cpu = 0;
    for (const auto& [r, cy] : lv.cpu)
      cpu = std::max(cpu, cy);
    const double link = static_cast<double>(busiest) / c.link_bytes_per_cycle;
    if (busiest || cpu) cycles += std::max(link, cpu) + lv.max_hops * c.hop_cycles;
    hw_ns += lv.hw_ns;
  }
  out.time_us = (cycles * cycle_ns + hw_ns) / 1000.0;
  (void)schedule;
  return out;
}

double alltoall_bisection_bound_us(const torus_emu::Shape& shape, int ranks, std::uint64_t block,
                                   const CostConstants& c) {
  // Cut the largest dimension in half; links crossing the cut per direction: the product of the
  // other extents, doubled on a torus (the wrap-around links cross the cut too).
  torus_emu::Dim big = torus_emu::Dim::x;
  for (torus_emu::Dim d : {torus_emu::Dim::y, torus_emu::Dim::z})
    if (shape.extent(d) > shape.extent(big)) big = d;
  double links = static_cast<double>(shape.node_count()) / shape.extent(big);
  if (shape.is_torus(big) && shape.extent(big) > 2) links *= 2;
  const double half = ranks / 2.0;
  const double bytes = half * half * static_cast<double>(block);
  const double eta = static_cast<double>(c.packet_payload) /
                     (c.packet_payload + c.packet_header + c.packet_wire_overhead);
  const double rate = c.link_bytes_per_cycle * eta * c.cpu_hz;  // payload bytes per second
  return bytes / (links * rate) * 1e6;
}

std::string CostReport::to_json() const {
  std::ostringstream o;
  o << "{\"rounds\":" << rounds << ",\"messages\":" << messages
    << ",\"max_link_bytes\":" << max_link_bytes << ",\"hop_bytes\":" << hop_bytes
    << ",\"max_rank_bytes_out\":" << max_rank_bytes_out << ",\"tree_bytes\":" << tree_bytes
    << ",\"time_us\":" << time_us << "}";
  return o.str();
}

}  // namespace bgl::collectives
