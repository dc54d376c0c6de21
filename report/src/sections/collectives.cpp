// Per call site of a collective in the program: the collective, its communicator and message
// size, the algorithm the library chose and the rule that chose it, how often and how long.
#include <algorithm>

#include "html.hpp"
#include "section.hpp"

namespace bgl::report {
namespace {

constexpr std::size_t kListed = 200;  // rows in the table (the statistics keep up to 1,000)
constexpr std::size_t kCharted = 12;  // call sites in the chart

std::string per_call(double seconds, std::uint64_t calls) {
  return calls ? duration(seconds / static_cast<double>(calls)) : "-";
}

bool render(const Context& c, std::string& out) {
  const auto sites_view = c.root.find("collective_sites");
  if (!sites_view) return false;
  const auto sites = (*sites_view)["sites"].elements();
  const auto overflow = (*sites_view).find("overflow");
  const std::uint64_t overflow_calls = overflow ? overflow->count_or("calls", 0) : 0;
  if (sites.empty() && overflow_calls == 0) return false;
  const bool virtual_time =
      (*sites_view).find("virtual_time") && (*sites_view)["virtual_time"].boolean();

  std::uint64_t calls = 0;
  for (const auto& s : sites)
    calls += s["calls"].count();
  out += "<p>" + grouped(sites.size()) +
         " rows (a call site, collective, communicator size, message size and algorithm each), " +
         grouped(calls) +
         " calls in all. Times are summed over the calls of all tasks; \"slowest task\" is the "
         "most one task spent at the row." +
         (virtual_time ? " BG/L time is the tasks' virtual clocks." : "") + "</p>\n";
  if (overflow_calls > 0)
    out += "<p class=\"warn\">" + grouped(overflow->count_or("tasks", 0)) +
           " task(s) filled their table of " + grouped((*sites_view).count_or("capacity", 0)) +
           " rows: " + grouped(overflow_calls) + " calls (" +
           duration(overflow->number_or("host_seconds", 0)) +
           " of host time) are counted without their call site.</p>\n";
  if (const auto left = (*sites_view).count_or("rows_left_out", 0); left > 0)
    out += "<p class=\"warn\">" + grouped(left) +
           " more rows with less host time were left out of the statistics.</p>\n";

  std::vector<Bar> bars;
  for (std::size_t i = 0; i < std::min(kCharted, sites.size()); ++i) {
    const auto& s = sites[i];
    bars.push_back({s["site"].text() + " " + s["op"].text() + " " + s["algorithm"].text(),
                    s["host_seconds"].number(),
                    escape(duration(s["host_seconds"].number())) + " host time"});
  }
  out += bar_chart("collective-sites", bars);

  const auto shown = std::min(kListed, sites.size());
  if (shown < sites.size())
    out += "<p>The " + grouped(shown) + " rows with the most host time:</p>\n";
  out += "<div class=\"scroll tall\">";
  {
    Table table(
        out,
        virtual_time
            ? std::initializer_list<std::string_view>{"call site", "collective", "ranks", "bytes",
                                                      "root", "algorithm", "chosen because",
                                                      "tasks", "calls", "host time per call",
                                                      "host time, slowest task",
                                                      "BG/L time per call",
                                                      "BG/L time, slowest task"}
            : std::initializer_list<std::string_view>{"call site", "collective", "ranks", "bytes",
                                                      "root", "algorithm", "chosen because",
                                                      "tasks", "calls", "host time per call",
                                                      "host time, slowest task"});
    for (std::size_t i = 0; i < shown; ++i) {
      const auto& s = sites[i];
      const std::uint64_t n = s["calls"].count();
      std::string where = "<span title=\"" + escape(s["function"].text());
      if (const auto file = s.find("file"); file && !file->text().empty())
        where += "&#10;" + escape(file->text()) + ":" + std::to_string(s["line"].integer());
      where += "&#10;" + escape(s["module"].text()) + " " + escape(s["offset"].text()) + "\">" +
               escape(s["site"].text()) + "</span>";
      const std::string root = s.find("root") ? std::to_string(s["root"].integer()) : "-";
      if (virtual_time)
        table.row({where, escape(s["op"].text()), grouped(s["comm_size"].count()),
                   grouped(s["bytes"].count()), root, escape(s["algorithm"].text()),
                   escape(s["rule"].text()), grouped(s["tasks"].count()), grouped(n),
                   per_call(s["host_seconds"].number(), n),
                   duration(s["host_seconds_slowest_task"].number()),
                   per_call(s.number_or("virtual_seconds", 0), n),
                   duration(s.number_or("virtual_seconds_slowest_task", 0))});
      else
        table.row({where, escape(s["op"].text()), grouped(s["comm_size"].count()),
                   grouped(s["bytes"].count()), root, escape(s["algorithm"].text()),
                   escape(s["rule"].text()), grouped(s["tasks"].count()), grouped(n),
                   per_call(s["host_seconds"].number(), n),
                   duration(s["host_seconds_slowest_task"].number())});
    }
  }
  out += "</div>\n";
  return true;
}

}  // namespace

Section collectives_section() {
  return {"collectives", "Collectives by call site", render};
}

}  // namespace bgl::report
