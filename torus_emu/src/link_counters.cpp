#include "bgl/torus_emu/link_counters.hpp"

#include <algorithm>
#include <stdexcept>

namespace bgl::torus_emu {

LinkCounters::LinkCounters(const Shape& shape)
    : shape_(shape), counts_(static_cast<std::size_t>(shape.node_count()) * kDirections) {}

void LinkCounters::account(const Route& route, std::uint32_t bytes) {
  route.for_each_link(shape_, [&](Link link) {
    Count& c = counts_[index(link)];
    ++c.packets;
    c.bytes += bytes;
  });
}

void LinkCounters::add(Link link, Count c) {
  Count& mine = counts_[index(link)];
  mine.packets += c.packets;
  mine.bytes += c.bytes;
}

void LinkCounters::merge(const LinkCounters& other) {
  // Adding counters of another partition would silently attribute traffic to the wrong links.
  if (!(other.shape_ == shape_)) {
    throw std::invalid_argument("cannot merge link counters of shape " + other.shape_.to_string() +
                                " into counters of shape " + shape_.to_string());
  }
  for (std::size_t i = 0; i < counts_.size(); ++i) {
    counts_[i].packets += other.counts_[i].packets;
    counts_[i].bytes += other.counts_[i].bytes;
  }
}

void LinkCounters::reset() {
  std::fill(counts_.begin(), counts_.end(), Count{});
}

std::uint64_t LinkCounters::total_packet_hops() const {
  std::uint64_t sum = 0;
  for (const Count& c : counts_)
    sum += c.packets;
  return sum;
}

std::uint64_t LinkCounters::total_bytes() const {
  std::uint64_t sum = 0;
  for (const Count& c : counts_)
    sum += c.bytes;
  return sum;
}

LinkCounters::Count LinkCounters::busiest(Link* which) const {
  // Ties keep the lowest index, so the answer is stable; with no traffic that is link 0 / +x.
  std::size_t best = 0;
  for (std::size_t i = 1; i < counts_.size(); ++i) {
    if (counts_[i].bytes > counts_[best].bytes) best = i;
  }
  if (which != nullptr) {
    *which =
        Link{static_cast<NodeId>(best / kDirections), static_cast<Direction>(best % kDirections)};
  }
  return counts_[best];
}

std::string LinkCounters::to_json(const Shape& shape) const {
  std::string out = "{\"links\":[";
  bool first = true;
  for (std::size_t i = 0; i < counts_.size(); ++i) {
    const Count& c = counts_[i];
    if (c.packets == 0) continue;
    const Coord at = shape.coord(static_cast<NodeId>(i / kDirections));
    if (!first) out += ',';
    first = false;
    out += "{\"node\":[" + std::to_string(at.x) + ',' + std::to_string(at.y) + ',' +
           std::to_string(at.z) + "],\"dir\":\"";
    out += to_string(static_cast<Direction>(i % kDirections));
    out += "\",\"packets\":" + std::to_string(c.packets) + ",\"bytes\":" + std::to_string(c.bytes) +
           '}';
  }
  out += "]}";
  return out;
}

}  // namespace bgl::torus_emu
