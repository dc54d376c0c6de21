#include "bgl/packet_layer/held_packets.hpp"

#include <algorithm>

namespace bgl::packet_layer {

HeldPackets::HeldPackets(int sources)
    : latest_(static_cast<std::size_t>(kFifos) * (static_cast<std::size_t>(sources) + 1), 0),
      sources_(static_cast<std::uint32_t>(sources)) {}

void HeldPackets::add(int fifo, const Packet& p, virtual_time::Stamp stamp) {
  // A malformed header may name any source: such packets share one spare entry.
  const std::uint32_t source = std::min(p.header.source_rank(), sources_);
  auto& latest = latest_[static_cast<std::size_t>(fifo) * (sources_ + 1) + source];
  latest = std::max(latest, stamp.arrival);
  std::uint32_t slot;
  if (free_.empty()) {
    slot = static_cast<std::uint32_t>(slab_.size());
    slab_.push_back({p, stamp});
  } else {
    slot = free_.back();
    free_.pop_back();
    slab_[slot] = {p, stamp};
  }
  auto& heap = heaps_[static_cast<std::size_t>(fifo)];
  heap.push_back({latest, source, order_++, slot});
  std::push_heap(heap.begin(), heap.end(), after);
  ++held_;
}

void HeldPackets::pop(int fifo) {
  auto& heap = heaps_[static_cast<std::size_t>(fifo)];
  std::pop_heap(heap.begin(), heap.end(), after);
  free_.push_back(heap.back().slot);
  heap.pop_back();
  --held_;
}

}  // namespace bgl::packet_layer
