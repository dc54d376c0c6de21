// The busiest links: by utilisation with virtual time, else by bytes.
#include <algorithm>
#include <numeric>

#include "html.hpp"
#include "section.hpp"

namespace bgl::report {
namespace {

constexpr std::size_t kListed = 20;

bool render(const Context& c, std::string& out) {
  const bool vt = c.virtual_time.has_value();
  std::vector<std::size_t> used;
  for (std::size_t i = 0; i < c.links.size(); ++i)
    if (c.links[i].packets > 0 || c.links[i].busy_cycles > 0) used.push_back(i);
  if (used.empty()) {
    out += "<p>No packet crossed a link.</p>\n";
    return true;
  }
  const auto key = [&](std::size_t i) {
    return vt ? c.links[i].utilisation : static_cast<double>(c.links[i].bytes);
  };
  const auto shown = std::min(kListed, used.size());
  std::partial_sort(
      used.begin(), used.begin() + static_cast<std::ptrdiff_t>(shown), used.end(),
      [&](std::size_t a, std::size_t b) { return key(a) > key(b) || (key(a) == key(b) && a < b); });
  std::uint64_t total = 0;
  for (const auto& l : c.links)
    total += l.bytes;
  out += "<p>" + grouped(used.size()) + " of " + grouped(c.links.size()) +
         " directed links carried traffic, " + bytes(static_cast<double>(total)) + " in all; the " +
         std::to_string(shown) + " busiest" +
         (vt ? " by utilisation (busy time / predicted time)" : " by bytes") + ":</p>\n";
  {
    Table table(out, vt ? std::initializer_list<std::string_view>{"link", "packets", "bytes",
                                                                  "busy cycles", "utilisation"}
                        : std::initializer_list<std::string_view>{"link", "packets", "bytes"});
    for (std::size_t k = 0; k < shown; ++k) {
      const auto i = used[k];
      const auto& l = c.links[i];
      if (vt)
        table.row({Context::link_name(c.geometry, i), grouped(l.packets), grouped(l.bytes),
                   grouped(l.busy_cycles), percent(l.utilisation)});
      else
        table.row({Context::link_name(c.geometry, i), grouped(l.packets), grouped(l.bytes)});
    }
  }
  return true;
}

}  // namespace

Section links_section() {
  return {"links", "Busiest links", render};
}

}  // namespace bgl::report
