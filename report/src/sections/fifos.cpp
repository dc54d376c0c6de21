// The reception FIFOs that filled most: where packets waited for their receiver.
#include <algorithm>

#include "html.hpp"
#include "section.hpp"

namespace bgl::report {
namespace {

constexpr std::size_t kListed = 20;

bool render(const Context& c, std::string& out) {
  const auto fifos = c.root.find("fifos");
  if (!fifos) return false;
  auto list = fifos->elements();
  if (list.empty()) return false;
  std::vector<std::pair<std::uint64_t, std::uint64_t>> key;  // full events, high water
  for (const auto& f : list)
    key.emplace_back(f["full_events"].count(), f["high_water"].count());
  std::vector<std::size_t> order(list.size());
  for (std::size_t i = 0; i < order.size(); ++i)
    order[i] = i;
  const auto shown = std::min(kListed, order.size());
  std::partial_sort(
      order.begin(), order.begin() + static_cast<std::ptrdiff_t>(shown), order.end(),
      [&](std::size_t a, std::size_t b) { return key[a] > key[b] || (key[a] == key[b] && a < b); });
  out += "<p>" + grouped(list.size()) + " reception FIFOs received packets; the " +
         std::to_string(shown) + " that were full most often:</p>\n";
  Table table(out, {"node", "group", "FIFO", "packets received", "high water", "full events"});
  for (std::size_t k = 0; k < shown; ++k) {
    const auto& f = list[order[k]];
    const auto xyz = f["node"].coord();
    table.row({"(" + std::to_string(xyz[0]) + "," + std::to_string(xyz[1]) + "," +
                   std::to_string(xyz[2]) + ")",
               std::to_string(f["group"].integer()), escape(f["fifo"].text()),
               grouped(f["received"].count()), grouped(key[order[k]].second),
               grouped(key[order[k]].first)});
  }
  return true;
}

}  // namespace

Section fifos_section() {
  return {"fifos", "Reception FIFOs", render};
}

}  // namespace bgl::report
