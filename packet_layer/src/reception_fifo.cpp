#include "bgl/packet_layer/reception_fifo.hpp"

#include <cstring>
#include <new>

namespace bgl::packet_layer {
namespace {

constexpr std::size_t align_up(std::size_t n, std::size_t a) {
  return (n + a - 1) / a * a;
}
constexpr std::size_t kControlBytes = align_up(sizeof(FifoControl), 64);

}  // namespace

std::size_t ReceptionFifo::region_bytes(std::uint32_t capacity) {
  return kControlBytes + std::size_t{capacity} * sizeof(FifoSlot);
}

void ReceptionFifo::format(std::byte* region, std::uint32_t /*capacity*/) {
  new (region) FifoControl{};
  // The slots' sequence numbers are 0 already: never published (a slot's sequence number is the
  // position + 1 it was last published for). Not writing them leaves the slots' pages untouched
  // until packets use them: formatting the FIFOs of 1,024 tasks touched every page of them, in
  // the launcher, before any task could start.
}

ReceptionFifo::ReceptionFifo(std::byte* region, std::uint32_t capacity)
    : control_(std::launder(reinterpret_cast<FifoControl*>(region))),
      slots_(std::launder(reinterpret_cast<FifoSlot*>(region + kControlBytes))),
      mask_(capacity - 1) {}

const char* ReceptionFifo::check_consistency() const {
  const std::uint64_t cap = std::uint64_t{mask_} + 1;
  const std::uint64_t tail_before = control_->tail.load(std::memory_order_acquire);
  const std::uint64_t head = control_->head.load(std::memory_order_acquire);
  // Producers claim a position only below the head they read plus the capacity, and the head
  // only grows: read later, it bounds the earlier tail.
  if (tail_before > head + cap) return "tail more than the capacity ahead of the head";
  for (std::uint64_t j = 0; j < cap; ++j) {
    const std::uint64_t seq = slots_[j].seq.load(std::memory_order_acquire);
    // Every position in [head - capacity, head) was published before it was consumed, so a slot
    // that had one holds that position's number or a later one.
    const bool had_consumed_position = head >= cap || j < head;
    if (seq == 0) {
      if (had_consumed_position) return "slot sequence number behind the head";
      continue;
    }
    // Published: for a position of this slot, claimed (below the tail) and not more than a
    // capacity behind the head.
    const std::uint64_t published = seq - 1;
    if ((published & mask_) != j) return "slot sequence number";
    if (published >= control_->tail.load(std::memory_order_acquire))
      return "slot sequence number beyond the tail";
    if (had_consumed_position && published + cap < head)
      return "slot sequence number behind the head";
  }
  if (head > control_->tail.load(std::memory_order_acquire)) return "head beyond the tail";
  return nullptr;
}

}  // namespace bgl::packet_layer
