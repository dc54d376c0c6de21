// Per protocol of the message layer: messages, packets and bytes, summed over the tasks.
#include <map>

#include "html.hpp"
#include "section.hpp"

namespace bgl::report {
namespace {

struct Totals {
  std::uint64_t messages = 0, packets = 0, bytes = 0, received = 0;
};

bool render(const Context& c, std::string& out) {
  std::vector<std::pair<std::string, Totals>> protocols;  // in the file's order
  bool any = false;
  for (const auto& t : c.root["tasks"].elements()) {
    const auto ml = t.find("message_layer");
    if (!ml) continue;
    any = true;
    for (const auto& [name, p] : (*ml)["protocols"].members()) {
      auto it = std::find_if(protocols.begin(), protocols.end(),
                             [&](const auto& e) { return e.first == name; });
      if (it == protocols.end()) it = protocols.insert(protocols.end(), {name, Totals{}});
      it->second.messages += p["messages_sent"].count();
      it->second.packets += p["packets_sent"].count();
      it->second.bytes += p["bytes_sent"].count();
      it->second.received += p["messages_received"].count();
    }
  }
  if (!any) return false;
  std::uint64_t all = 0;
  for (const auto& [name, t] : protocols)
    all += t.bytes;
  {
    Table table(out, {"protocol", "messages sent", "messages received", "packets", "bytes",
                      "share of bytes"});
    for (const auto& [name, t] : protocols)
      table.row({escape(name), grouped(t.messages), grouped(t.received), grouped(t.packets),
                 grouped(t.bytes),
                 percent(all ? static_cast<double>(t.bytes) / static_cast<double>(all) : 0)});
  }
  std::vector<Bar> bars;
  for (const auto& [name, t] : protocols)
    if (t.messages > 0)
      bars.push_back({name, static_cast<double>(t.bytes),
                      escape(bytes(static_cast<double>(t.bytes))) + " in " + grouped(t.messages) +
                          " messages"});
  out += bar_chart("protocol-bytes", bars);
  return true;
}

}  // namespace

Section protocols_section() {
  return {"protocols", "Protocols", render};
}

}  // namespace bgl::report
