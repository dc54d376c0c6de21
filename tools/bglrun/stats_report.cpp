#include "stats_report.hpp"

#include <nlohmann/json.hpp>

#include <cstring>

namespace bgl::run {
namespace {

using nlohmann::json;

json coord(torus::Coord c) {
  return json::array({c.x, c.y, c.z});
}

json counters(const pkt::TaskCounters& c) {
  return {{"packets_injected", c.packets_injected},
          {"bytes_injected", c.bytes_injected},
          {"packets_received", c.packets_received},
          {"payload_bytes_received", c.payload_bytes_received},
          {"deposit_copies", c.deposit_copies},
          {"injection_full", c.injection_full},
          {"delivery_stalls", c.delivery_stalls},
          {"malformed", c.malformed},
          {"sleeps", c.sleeps},
          {"virtual_packets", c.virtual_packets}};
}

std::string_view fifo_name(int f) {
  if (f < pkt::kLinkFifos) return torus::to_string(static_cast<torus::Direction>(f));
  return f == pkt::kLocalFifo ? "local" : "high";
}

}  // namespace

std::string statistics_json(const pkt::Machine& m) {
  const auto& c = m.config();
  const auto& shape = m.shape();
  json tasks = json::array();
  for (int r = 0; r < c.ntasks(); ++r) {
    const auto rank = static_cast<torus::Rank>(r);
    const auto& slot = m.task(rank);
    json t = {
        {"rank", r}, {"node", coord(c.mapping.coord(rank))}, {"t", c.mapping.location(rank).t}};
    t["published"] = slot.published.load() != 0;
    if (slot.published.load()) t["counters"] = counters(slot.counters);
    // Layers above the packet layer leave their own statistics as JSON text in the task's slot.
    const std::string report(slot.report.data(), strnlen(slot.report.data(), slot.report.size()));
    if (!report.empty()) {
      auto upper = json::parse(report, nullptr, /*allow_exceptions=*/false);
      if (!upper.is_discarded()) t["message_layer"] = std::move(upper);
    }
    tasks.push_back(std::move(t));
  }
  json links = json::array();
  const auto totals = m.links();
  for (std::size_t i = 0; i < totals.size(); ++i) {
    if (totals[i].packets.load() == 0) continue;
    links.push_back(
        {{"node", coord(shape.coord(static_cast<torus::NodeId>(i / torus::kDirections)))},
         {"dir", torus::to_string(static_cast<torus::Direction>(i % torus::kDirections))},
         {"packets", totals[i].packets.load()},
         {"bytes", totals[i].bytes.load()}});
  }
  json fifos = json::array();
  for (torus::NodeId n = 0; n < static_cast<torus::NodeId>(shape.node_count()); ++n) {
    for (int g = 0; g < pkt::kFifoGroups; ++g) {
      for (int f = 0; f < pkt::kReceptionFifos; ++f) {
        const auto& ctl = m.fifo(n, g, f).control();
        if (ctl.head.load() == 0 && ctl.full_events.load() == 0) continue;
        fifos.push_back({{"node", coord(shape.coord(n))},
                         {"group", g},
                         {"fifo", fifo_name(f)},
                         {"received", ctl.head.load()},
                         {"high_water", ctl.high_water.load()},
                         {"full_events", ctl.full_events.load()}});
      }
    }
  }
  const json job = {{"shape", shape.to_string()},
                    {"mode", pkt::to_string(c.mode)},
                    {"tasks", c.ntasks()},
                    {"mapping", c.mapping_source},
                    {"fifo_packets", c.fifo_packets}};
  return json{{"job", job}, {"tasks", tasks}, {"links", links}, {"fifos", fifos}}.dump(1) + "\n";
}

std::string statistics_summary(const pkt::Machine& m) {
  std::uint64_t injected = 0, received = 0, stalls = 0, traversals = 0, busiest = 0;
  std::size_t busiest_index = 0;
  for (int r = 0; r < m.config().ntasks(); ++r) {
    const auto& c = m.task(static_cast<torus::Rank>(r)).counters;
    injected += c.packets_injected;
    received += c.packets_received;
    stalls += c.delivery_stalls;
  }
  const auto links = m.links();
  for (std::size_t i = 0; i < links.size(); ++i) {
    traversals += links[i].packets.load();
    if (links[i].bytes.load() > busiest) busiest = links[i].bytes.load(), busiest_index = i;
  }
  std::string s = std::to_string(injected) + " packets injected, " + std::to_string(received) +
                  " received, " + std::to_string(traversals) + " link traversals, " +
                  std::to_string(stalls) + " delivery stalls";
  if (busiest > 0) {
    const auto node = static_cast<torus::NodeId>(busiest_index / torus::kDirections);
    const auto dir = static_cast<torus::Direction>(busiest_index % torus::kDirections);
    s += "; busiest link " + torus::to_string(m.shape().coord(node)) +
         std::string(torus::to_string(dir)) + " carried " + std::to_string(busiest) + " bytes";
  }
  return s;
}

}  // namespace bgl::run
