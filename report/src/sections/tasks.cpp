// Per task: traffic, FIFO high-water marks, unexpected messages, and with virtual time where the
// task's clock went (computing, software overhead of sending and receiving, waiting).
#include <algorithm>

#include "html.hpp"
#include "section.hpp"

namespace bgl::report {
namespace {

struct Row {
  std::int64_t rank = 0;
  std::array<int, 3> node{};
  std::int64_t t = 0;
  bool published = false;
  std::uint64_t packets = 0, bytes = 0, received = 0, stalls = 0, injection_full = 0;
  std::uint64_t unexpected = 0, unexpected_max = 0, high_water = 0;
  double computing = 0, software = 0, waiting = 0, clock = 0;  // seconds
};

// The highest reception-FIFO fill of each (node, FIFO group).
std::vector<std::uint64_t> fifo_high_water(const Context& c) {
  std::vector<std::uint64_t> high(static_cast<std::size_t>(c.geometry.nodes()) * 2, 0);
  const auto fifos = c.root.find("fifos");
  if (!fifos) return high;
  for (const auto& f : fifos->elements()) {
    const auto node = f["node"];
    const auto xyz = node.coord();
    for (std::size_t d = 0; d < 3; ++d)
      if (xyz[d] >= c.geometry.extent[d]) node.fail("the FIFO's node is outside the partition");
    const auto group = f["group"].integer();
    if (group < 0 || group > 1) f["group"].fail("expected FIFO group 0 or 1");
    auto& h = high[static_cast<std::size_t>(c.geometry.node_id(xyz)) * 2 +
                   static_cast<std::size_t>(group)];
    h = std::max(h, f["high_water"].count());
  }
  return high;
}

std::vector<Row> rows(const Context& c) {
  const auto high = fifo_high_water(c);
  std::vector<Row> out;
  for (const auto& t : c.root["tasks"].elements()) {
    Row r;
    r.rank = t["rank"].integer();
    r.node = t["node"].coord();
    r.t = t["t"].integer();
    if (r.t < 0 || r.t > 1) t["t"].fail("expected t = 0 or 1");
    const auto node = static_cast<std::size_t>(c.geometry.node_id(r.node));
    // With one task on the node both FIFO groups are its own (the second is its coprocessor's).
    r.high_water = c.node_ranks[node].size() > 1 ? high[node * 2 + static_cast<std::size_t>(r.t)]
                                                 : std::max(high[node * 2], high[node * 2 + 1]);
    r.published = t.find("published") ? t["published"].boolean() : t.has("counters");
    if (auto k = t.find("counters")) {
      r.packets = (*k)["packets_injected"].count();
      r.bytes = (*k)["bytes_injected"].count();
      r.received = (*k)["packets_received"].count();
      r.stalls = k->count_or("delivery_stalls", 0);
      r.injection_full = k->count_or("injection_full", 0);
    }
    if (auto ml = t.find("message_layer")) {
      r.unexpected = ml->count_or("unexpected_messages", 0);
      r.unexpected_max = ml->count_or("unexpected_depth_max", 0);
    }
    if (auto v = t.find("virtual_clock")) {
      r.computing = static_cast<double>((*v)["computing_cycles"].count()) / c.cpu_hz;
      r.software = static_cast<double>((*v)["software_cycles"].count()) / c.cpu_hz;
      r.waiting = static_cast<double>((*v)["waiting_cycles"].count()) / c.cpu_hz;
      r.clock = static_cast<double>((*v)["cycles"].count()) / c.cpu_hz;
    }
    out.push_back(r);
  }
  return out;
}

// One stacked column per task: computing, software, waiting (virtual time).
std::string time_chart(const std::vector<Row>& rows) {
  double top = 0;
  for (const auto& r : rows)
    top = std::max(top, r.computing + r.software + r.waiting);
  const double w =
      std::clamp(900.0 / static_cast<double>(std::max<std::size_t>(rows.size(), 1)), 0.9, 24.0);
  const double width = w * static_cast<double>(rows.size()) + 80, height = 180;
  std::string out =
      "<p class=\"legend\"><span class=\"key computing\"></span> computing "
      "<span class=\"key software\"></span> sending and receiving (software) "
      "<span class=\"key waiting\"></span> waiting; one column per task, rank 0 "
      "on the left, up to " +
      duration(top) +
      "</p>\n<div class=\"scroll\"><svg class=\"chart\" id=\"task-time\" viewBox=\"0 0 " +
      fixed(width, 0) + " " + fixed(height + 20, 0) + "\" width=\"" + fixed(width, 0) +
      "\" height=\"" + fixed(height + 20, 0) + "\" role=\"img\">";
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const auto& r = rows[i];
    double y = height;
    const double x = 72 + w * static_cast<double>(i);
    out += "<g><title>rank " + std::to_string(r.rank) + ": computing " + duration(r.computing) +
           ", software " + duration(r.software) + ", waiting " + duration(r.waiting) + "</title>";
    for (const auto& [value, cls] :
         {std::pair{r.computing, "computing"}, std::pair{r.software, "software"},
          std::pair{r.waiting, "waiting"}}) {
      const double h = top > 0 ? value / top * (height - 10) : 0;
      y -= h;
      if (h > 0)
        out += "<rect class=\"" + std::string(cls) + "\" x=\"" + fixed(x, 2) + "\" y=\"" +
               fixed(y, 2) + "\" width=\"" + fixed(std::max(w - (w > 3 ? 1 : 0), 0.5), 2) +
               "\" height=\"" + fixed(h, 2) + "\"/>";
    }
    out += "</g>";
  }
  out += "<line class=\"axis\" x1=\"70\" y1=\"" + fixed(height, 0) + "\" x2=\"" + fixed(width, 0) +
         "\" y2=\"" + fixed(height, 0) + "\"/><text x=\"66\" y=\"14\" text-anchor=\"end\">" +
         duration(top) + "</text><text x=\"66\" y=\"" + fixed(height, 0) +
         "\" text-anchor=\"end\">0</text></svg></div>\n";
  return out;
}

bool render(const Context& c, std::string& out) {
  const auto all = rows(c);
  const bool vt = c.virtual_time.has_value();
  if (vt) out += time_chart(all);
  out += "<div class=\"scroll tall\">";
  {
    Table table(
        out,
        vt ? std::initializer_list<std::string_view>{"rank", "node", "t", "packets sent",
                                                     "bytes sent", "packets received",
                                                     "delivery stalls", "FIFO high water",
                                                     "unexpected", "unexpected max", "computing",
                                                     "software", "waiting", "clock"}
           : std::initializer_list<std::string_view>{
                 "rank", "node", "t", "packets sent", "bytes sent", "packets received",
                 "delivery stalls", "FIFO high water", "unexpected", "unexpected max"});
    for (const auto& r : all) {
      const std::string node = "(" + std::to_string(r.node[0]) + "," + std::to_string(r.node[1]) +
                               "," + std::to_string(r.node[2]) + ")";
      if (!r.published) {
        table.row({std::to_string(r.rank), node, std::to_string(r.t),
                   "<span class=\"warn\">no statistics: the task ended before reporting</span>"});
        continue;
      }
      if (vt)
        table.row({std::to_string(r.rank), node, std::to_string(r.t), grouped(r.packets),
                   grouped(r.bytes), grouped(r.received), grouped(r.stalls), grouped(r.high_water),
                   grouped(r.unexpected), grouped(r.unexpected_max), duration(r.computing),
                   duration(r.software), duration(r.waiting), duration(r.clock)});
      else
        table.row({std::to_string(r.rank), node, std::to_string(r.t), grouped(r.packets),
                   grouped(r.bytes), grouped(r.received), grouped(r.stalls), grouped(r.high_water),
                   grouped(r.unexpected), grouped(r.unexpected_max)});
    }
  }
  out += "</div>\n";
  return true;
}

}  // namespace

Section tasks_section() {
  return {"tasks", "Tasks", render};
}

}  // namespace bgl::report
