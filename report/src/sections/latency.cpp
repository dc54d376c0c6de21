// Virtual time: each protocol's message latency, as percentiles and a histogram.
#include "html.hpp"
#include "section.hpp"

namespace bgl::report {
namespace {

std::string ns(double v) {
  return duration(v * 1e-9);
}

std::string histogram(std::size_t index, const View& buckets) {
  std::vector<Bar> bars;
  std::uint64_t total = 0;
  for (const auto& b : buckets.elements())
    total += b["count"].count();
  for (const auto& b : buckets.elements()) {
    const double upper = b["upper_ns"].number();
    const auto n = b["count"].count();
    bars.push_back(
        {"up to " + ns(upper), static_cast<double>(n),
         grouped(n) +
             (total ? " (" + percent(static_cast<double>(n) / static_cast<double>(total)) + ")"
                    : std::string())});
  }
  return bar_chart("latency-histogram-" + std::to_string(index), bars);
}

bool render(const Context& c, std::string& out) {
  if (!c.virtual_time) return false;
  const auto protocols = c.virtual_time->find("protocols");
  if (!protocols) return false;
  const auto list = protocols->elements();
  if (list.empty()) return false;
  out +=
      "<p>End-to-end message latency per protocol in predicted BG/L time, as the virtual-time "
      "model measured it (docs/VIRTUAL_TIME.md); histogram buckets by their upper bound.</p>\n";
  {
    Table table(out, {"protocol", "messages", "bytes", "min", "mean", "p50", "p90", "p99", "max"});
    for (const auto& p : list) {
      const auto l = p["latency_ns"];
      table.row({escape(p["protocol"].text()), grouped(p["messages"].count()),
                 grouped(p["bytes"].count()), ns(l["min"].number()), ns(l["mean"].number()),
                 ns(l["p50"].number()), ns(l["p90"].number()), ns(l["p99"].number()),
                 ns(l["max"].number())});
    }
  }
  for (std::size_t i = 0; i < list.size(); ++i) {
    const auto buckets = list[i].find("histogram");
    if (!buckets || buckets->elements().empty()) continue;
    out += "<h3>" + escape(list[i]["protocol"].text()) + "</h3>\n" + histogram(i, *buckets);
  }
  return true;
}

}  // namespace

Section latency_section() {
  return {"latency", "Latency by protocol", render};
}

}  // namespace bgl::report
