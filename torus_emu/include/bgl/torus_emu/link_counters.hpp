#pragma once
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "bgl/torus_emu/route.hpp"

namespace bgl::torus_emu {

// Packets and bytes per directed link, accumulated along the routes packets take. One instance per
// task (no sharing, no atomics on the hot path); instances are merged for job-wide totals.
class LinkCounters {
 public:
  struct Count {
    std::uint64_t packets = 0;
    std::uint64_t bytes = 0;
  };

  explicit LinkCounters(const Shape& shape);

  void account(const Route& route, std::uint32_t bytes);
  const Count& at(Link link) const { return counts_[index(link)]; }
  void add(Link link, Count c);
  void merge(const LinkCounters& other);
  void reset();

  // Flat view, index = node * 6 + direction, for copying into shared memory.
  std::span<const Count> raw() const { return counts_; }
  std::span<Count> raw() { return counts_; }

  std::uint64_t total_packet_hops() const;
  std::uint64_t total_bytes() const;
  Count busiest(Link* which = nullptr) const;

  // {"links":[{"node":[x,y,z],"dir":"+x","packets":n,"bytes":n}, ...]} for links with traffic.
  std::string to_json(const Shape& shape) const;

 private:
  std::size_t index(Link l) const {
    return static_cast<std::size_t>(l.node) * kDirections + index_of(l.dir);
  }
  Shape shape_;  // account() walks routes hop by hop, which needs the partition's geometry
  std::vector<Count> counts_;
};

}  // namespace bgl::torus_emu
