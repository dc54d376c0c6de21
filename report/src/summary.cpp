// The terminal summary: the predicted time, the busiest links, the protocol mix (with virtual
// time, each protocol's median and 99th-percentile latency) and the busiest collective call
// sites, in aligned
// columns like the tables of OSU's and IMB's benchmarks.
#include <algorithm>
#include <array>
#include <utility>
#include <vector>

#include "bgl/report/report.hpp"
#include "html.hpp"
#include "section.hpp"

namespace bgl::report {
namespace {

std::string time_lines(const Context& c) {
  const auto job = c.root["job"];
  std::string s = "run: " + printable_text(job["shape"].text()) + " " +
                  printable_text(job["mode"].text()) + ", " + grouped(job["tasks"].count()) +
                  " tasks";
  if (auto h = job.find("host_seconds")) s += "; host time " + duration(h->number());
  if (c.virtual_time) {
    const auto& vt = *c.virtual_time;
    s += "; predicted BG/L time " + duration(vt["predicted_seconds"].number());
    if (const auto r = vt["slowest_rank"].integer(); r >= 0)
      s += " (slowest: rank " + std::to_string(r) + ")";
  }
  return s + "\n";
}

std::string link_lines(const Context& c, std::size_t top) {
  const bool vt = c.virtual_time.has_value();
  std::vector<std::size_t> used;
  for (std::size_t i = 0; i < c.links.size(); ++i)
    if (c.links[i].packets > 0 || c.links[i].busy_cycles > 0) used.push_back(i);
  if (used.empty() || top == 0) return {};
  const auto key = [&](std::size_t i) {
    return vt ? c.links[i].utilisation : static_cast<double>(c.links[i].bytes);
  };
  const auto n = std::min(top, used.size());
  std::partial_sort(
      used.begin(), used.begin() + static_cast<std::ptrdiff_t>(n), used.end(),
      [&](std::size_t a, std::size_t b) { return key(a) > key(b) || (key(a) == key(b) && a < b); });
  std::vector<std::vector<std::string>> rows;
  if (vt)
    rows.push_back({"busiest links", "packets", "bytes", "busy cycles", "utilisation"});
  else
    rows.push_back({"busiest links", "packets", "bytes"});
  for (std::size_t k = 0; k < n; ++k) {
    const auto& l = c.links[used[k]];
    rows.push_back({Context::link_name(c.geometry, used[k]), grouped(l.packets), grouped(l.bytes)});
    if (vt) {
      rows.back().push_back(grouped(l.busy_cycles));
      rows.back().push_back(percent(l.utilisation));
    }
  }
  return columns(rows, "  ");
}

// With virtual time, each protocol's median and 99th-percentile message latency.
std::vector<std::pair<std::string, std::array<double, 2>>> latencies(const Context& c) {
  std::vector<std::pair<std::string, std::array<double, 2>>> out;
  if (!c.virtual_time) return out;
  if (const auto protocols = c.virtual_time->find("protocols"))
    for (const auto& p : protocols->elements())
      out.push_back({p["protocol"].text(),
                     {p["latency_ns"]["p50"].number(), p["latency_ns"]["p99"].number()}});
  return out;
}

std::string protocol_lines(const Context& c) {
  const auto timed = latencies(c);
  std::vector<std::vector<std::string>> rows{
      {"protocol mix", "messages", "packets", "bytes", "share"}};
  if (!timed.empty()) rows[0].insert(rows[0].end(), {"p50 latency", "p99 latency"});
  std::vector<std::pair<std::string, std::array<std::uint64_t, 3>>> totals;
  std::uint64_t all = 0;
  for (const auto& t : c.root["tasks"].elements()) {
    const auto ml = t.find("message_layer");
    if (!ml) continue;
    for (const auto& [name, p] : (*ml)["protocols"].members()) {
      auto it = std::find_if(totals.begin(), totals.end(),
                             [&](const auto& e) { return e.first == name; });
      if (it == totals.end()) it = totals.insert(totals.end(), {name, {0, 0, 0}});
      it->second[0] += p["messages_sent"].count();
      it->second[1] += p["packets_sent"].count();
      it->second[2] += p["bytes_sent"].count();
      all += p["bytes_sent"].count();
    }
  }
  for (const auto& [name, t] : totals) {
    if (t[0] == 0) continue;
    rows.push_back({printable_text(name), grouped(t[0]), grouped(t[1]), grouped(t[2]),
                    percent(all ? static_cast<double>(t[2]) / static_cast<double>(all) : 0)});
    if (timed.empty()) continue;
    const auto it =
        std::find_if(timed.begin(), timed.end(), [&](const auto& e) { return e.first == name; });
    if (it == timed.end()) {
      rows.back().insert(rows.back().end(), {"-", "-"});
    } else {
      rows.back().push_back(duration(it->second[0] * 1e-9));
      rows.back().push_back(duration(it->second[1] * 1e-9));
    }
  }
  return rows.size() > 1 ? columns(rows, "  ") : std::string();
}

// "ns::(anonymous namespace)::f (file.c:12)" -> "f (file.c:12)": a terminal column's width.
std::string short_site(const std::string& site) {
  const auto where = site.find(" (");
  const std::string name = site.substr(0, where);
  const auto colons = name.rfind("::");
  return (colons == std::string::npos ? name : name.substr(colons + 2)) +
         (where == std::string::npos ? "" : site.substr(where));
}

// The collective call sites with the most host time: where the program's collectives went.
std::string collective_lines(const Context& c, std::size_t top) {
  const auto sites = c.root.find("collective_sites");
  if (!sites) return {};
  const auto list = (*sites)["sites"].elements();
  std::vector<std::vector<std::string>> rows{
      {"collective call sites", "op", "ranks", "bytes", "algorithm", "calls", "host/call"}};
  for (std::size_t i = 0; i < std::min(top, list.size()); ++i) {
    const auto& s = list[i];
    const std::uint64_t calls = s["calls"].count();
    rows.push_back(
        {printable_text(short_site(s["site"].text()), 48), printable_text(s["op"].text()),
         grouped(s["comm_size"].count()), grouped(s["bytes"].count()),
         printable_text(s["algorithm"].text(), 24), grouped(calls),
         calls ? duration(s["host_seconds"].number() / static_cast<double>(calls)) : "-"});
  }
  return rows.size() > 1 ? columns(rows, "  ") : std::string();
}

}  // namespace

std::string terminal_summary(const nlohmann::json& stats, std::size_t top_links) {
  const View root(stats, "");
  const auto context = Context::make(root);
  return time_lines(context) + link_lines(context, top_links) + protocol_lines(context) +
         collective_lines(context, 3);
}

}  // namespace bgl::report
