#include "bgl/pkt/reception_fifo.hpp"

#include <cstring>
#include <new>

namespace bgl::pkt {
namespace {

constexpr std::size_t align_up(std::size_t n, std::size_t a) {
  return (n + a - 1) / a * a;
}
constexpr std::size_t kControlBytes = align_up(sizeof(FifoControl), 64);
std::size_t seq_bytes(std::uint32_t capacity) {
  return align_up(capacity * sizeof(std::atomic<std::uint64_t>), 64);
}
// The consumer refreshes its high-water mark every this many packets: reading the producers' tail
// costs a cache miss, too much to pay per packet.
constexpr std::uint64_t kHighWaterSampling = 32;

}  // namespace

std::size_t ReceptionFifo::region_bytes(std::uint32_t capacity) {
  return kControlBytes + seq_bytes(capacity) + std::size_t{capacity} * sizeof(Packet);
}

void ReceptionFifo::format(std::byte* region, std::uint32_t capacity) {
  new (region) FifoControl{};
  auto* seq = reinterpret_cast<std::atomic<std::uint64_t>*>(region + kControlBytes);
  for (std::uint32_t i = 0; i < capacity; ++i)
    new (&seq[i]) std::atomic<std::uint64_t>(i);
}

ReceptionFifo::ReceptionFifo(std::byte* region, std::uint32_t capacity)
    : control_(std::launder(reinterpret_cast<FifoControl*>(region))),
      seq_(std::launder(reinterpret_cast<std::atomic<std::uint64_t>*>(region + kControlBytes))),
      slots_(reinterpret_cast<Packet*>(region + kControlBytes + seq_bytes(capacity))),
      mask_(capacity - 1) {}

bool ReceptionFifo::try_push(const PacketHeader& header, std::span<const std::byte> payload,
                             std::span<const std::byte> more) {
  std::uint64_t pos = control_->tail.load(std::memory_order_relaxed);
  std::atomic<std::uint64_t>* seq;
  for (;;) {
    seq = &seq_[pos & mask_];
    const auto diff = static_cast<std::int64_t>(seq->load(std::memory_order_acquire) - pos);
    if (diff == 0) {
      if (control_->tail.compare_exchange_weak(pos, pos + 1, std::memory_order_relaxed)) break;
    } else if (diff < 0) {
      control_->full_events.fetch_add(1, std::memory_order_relaxed);
      return false;
    } else {
      pos = control_->tail.load(std::memory_order_relaxed);
    }
  }
  Packet& slot = slots_[pos & mask_];
  std::memcpy(&slot.header, &header, sizeof header);
  if (!payload.empty()) std::memcpy(slot.payload.data(), payload.data(), payload.size());
  if (!more.empty()) std::memcpy(slot.payload.data() + payload.size(), more.data(), more.size());
  seq->store(pos + 1, std::memory_order_release);
  return true;
}

void ReceptionFifo::pop() {
  const std::uint64_t pos = head_;
  // Sample the depth before freeing the slot: afterwards a producer may already reuse it, and the
  // depth would read one more than the FIFO can hold.
  if ((pos + 1) % kHighWaterSampling == 0) {
    const std::uint64_t depth = control_->tail.load(std::memory_order_relaxed) - pos;
    if (depth > control_->high_water.load(std::memory_order_relaxed))
      control_->high_water.store(depth, std::memory_order_relaxed);
  }
  seq_[pos & mask_].store(pos + mask_ + 1, std::memory_order_release);
  head_ = pos + 1;
  control_->head.store(head_, std::memory_order_relaxed);
}

}  // namespace bgl::pkt
