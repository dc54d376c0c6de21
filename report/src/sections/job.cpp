// The job: what ran, where, and how long it took (on the host and, predicted, on BG/L).
#include "html.hpp"
#include "section.hpp"

namespace bgl::report {
namespace {

void item(std::string& out, std::string_view name, const std::string& value_html) {
  out += "<dt>" + escape(name) + "</dt><dd>" + value_html + "</dd>\n";
}

bool render(const Context& c, std::string& out) {
  const auto job = c.root["job"];
  out += "<dl class=\"facts\">\n";
  item(out, "shape", escape(job["shape"].text()));
  item(out, "mode", escape(job["mode"].text()));
  item(out, "tasks", grouped(job["tasks"].count()));
  item(out, "nodes", grouped(static_cast<std::uint64_t>(c.geometry.nodes())));
  item(out, "mapping", escape(job["mapping"].text()));
  if (auto f = job.find("fifo_packets"))
    item(out, "reception FIFO", grouped(f->count()) + " packets");
  if (auto s = job.find("seed")) item(out, "routing seed", grouped(s->count()));
  if (auto h = job.find("host_seconds")) item(out, "host time", duration(h->number()));
  if (c.virtual_time) {
    const auto& vt = *c.virtual_time;
    const auto rank = vt["slowest_rank"].integer();
    item(out, "predicted BG/L time",
         "<strong id=\"predicted\">" + duration(vt["predicted_seconds"].number()) + "</strong> (" +
             grouped(vt["predicted_cycles"].count()) + " cycles" +
             (rank >= 0 ? ", slowest task: rank " + std::to_string(rank) : std::string()) + ")");
    item(out, "model parameters", escape(vt["parameters_source"].text()));
  } else {
    item(out, "predicted BG/L time", "not predicted (run with <code>--virtual-time</code>)");
  }
  std::uint64_t packets = 0, bytes_sent = 0, missing = 0;
  for (const auto& t : c.root["tasks"].elements()) {
    if (auto counters = t.find("counters")) {
      packets += (*counters)["packets_injected"].count();
      bytes_sent += (*counters)["bytes_injected"].count();
    } else {
      ++missing;
    }
  }
  item(out, "packets injected",
       grouped(packets) + " (" + bytes(static_cast<double>(bytes_sent)) + ")");
  if (missing > 0)
    item(out, "tasks without statistics",
         "<span class=\"warn\">" + grouped(missing) + " (they ended before reporting)</span>");
  out += "</dl>\n";
  return true;
}

}  // namespace

Section job_section() {
  return {"job", "Job", render};
}

}  // namespace bgl::report
