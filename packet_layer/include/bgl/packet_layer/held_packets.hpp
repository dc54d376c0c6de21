#pragma once
// Conservative synchronisation (virtual_time/horizon.hpp): the packets a task has taken out of its
// reception FIFOs while they wait until it is safe to handle them, per FIFO in order of arrival.
//
// A task that waits for the other tasks' clocks before taking a packet must still empty its FIFOs:
// otherwise a sender whose earlier packet finds a FIFO full holds the task back in turn, a
// deadlock the machine does not have. And a FIFO's host order is the order in which tasks happened
// to run, not the order in which the packets arrive on BG/L: held here, the packets of a FIFO come
// out by arrival (ties by source rank, then in the order each source sent them), whatever order
// the host delivered them in.
#include <array>
#include <cstdint>
#include <deque>
#include <vector>

#include "bgl/packet_layer/header.hpp"
#include "bgl/packet_layer/machine.hpp"
#include "bgl/virtual_time/clock.hpp"

namespace bgl::packet_layer {

class HeldPackets {
 public:
  // The torus FIFOs and the virtual FIFO, by FifoRef index.
  static constexpr int kFifos = kVirtualFifo + 1;

  struct Entry {
    Packet packet;  // first: a pointer to it is a pointer to the entry
    virtual_time::Stamp stamp;
  };

  explicit HeldPackets(int sources);

  void add(int fifo, const Packet& p, virtual_time::Stamp stamp);
  // The earliest packet of `fifo`, or nullptr. Valid until pop(fifo).
  const Packet* front(int fifo) const {
    const auto& heap = heaps_[static_cast<std::size_t>(fifo)];
    return heap.empty() ? nullptr : &slab_[heap.front().slot].packet;
  }
  void pop(int fifo);
  bool empty() const { return held_ == 0; }
  std::size_t size() const { return held_; }
  static virtual_time::Stamp stamp_of(const Packet& p) {
    return reinterpret_cast<const Entry&>(p).stamp;
  }

 private:
  struct Key {
    virtual_time::Tick arrival;
    std::uint32_t source;
    std::uint64_t order;
    std::uint32_t slot;
  };
  // std::push_heap keeps the greatest first: "greater" puts the earliest first.
  static bool after(const Key& a, const Key& b) {
    if (a.arrival != b.arrival) return a.arrival > b.arrival;
    if (a.source != b.source) return a.source > b.source;
    return a.order > b.order;
  }

  std::array<std::vector<Key>, kFifos> heaps_;
  std::deque<Entry> slab_;  // stable addresses while held; freed slots are reused
  std::vector<std::uint32_t> free_;
  // Per FIFO and source: the latest arrival held or taken, so that one source's packets in one
  // FIFO never overtake each other.
  std::vector<virtual_time::Tick> latest_;
  std::uint32_t sources_;
  std::uint64_t order_ = 0;
  std::size_t held_ = 0;
};

}  // namespace bgl::packet_layer
