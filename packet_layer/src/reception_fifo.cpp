#include "bgl/pkt/reception_fifo.hpp"

#include <cstring>
#include <new>

namespace bgl::pkt {
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

}  // namespace bgl::pkt
