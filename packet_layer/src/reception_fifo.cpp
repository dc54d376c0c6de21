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

void ReceptionFifo::format(std::byte* region, std::uint32_t capacity) {
  new (region) FifoControl{};
  auto* slots = reinterpret_cast<FifoSlot*>(region + kControlBytes);
  for (std::uint32_t i = 0; i < capacity; ++i)
    new (&slots[i].seq) std::atomic<std::uint64_t>(i);
}

ReceptionFifo::ReceptionFifo(std::byte* region, std::uint32_t capacity)
    : control_(std::launder(reinterpret_cast<FifoControl*>(region))),
      slots_(std::launder(reinterpret_cast<FifoSlot*>(region + kControlBytes))),
      mask_(capacity - 1) {}

const char* ReceptionFifo::check_consistency() const {
  const std::uint64_t cap = std::uint64_t{mask_} + 1;
  const std::uint64_t tail_before = control_->tail.load(std::memory_order_acquire);
  const std::uint64_t head = control_->head.load(std::memory_order_acquire);
  // The consumer frees a slot before it publishes the head, so a producer may be one slot
  // further than head + capacity for a moment.
  if (tail_before > head + cap + 1) return "tail more than the capacity ahead of the head";
  for (std::uint64_t j = 0; j < cap; ++j) {
    const std::uint64_t seq = slots_[j].seq.load(std::memory_order_acquire);
    // A slot's number is its position (free) or its position + 1 (published), and that position
    // lies between the head and a capacity past the tail.
    if ((seq & mask_) != j && ((seq - 1) & mask_) != j) return "slot sequence number";
    if (seq + cap < head) return "slot sequence number behind the head";
    if (seq > control_->tail.load(std::memory_order_acquire) + 2 * cap)
      return "slot sequence number beyond the tail";
  }
  if (head > control_->tail.load(std::memory_order_acquire)) return "head beyond the tail";
  return nullptr;
}

}  // namespace bgl::packet_layer
