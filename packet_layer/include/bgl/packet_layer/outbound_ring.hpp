#pragma once
// The hand-over from a task to its host's libfabric agent: one single-producer single-consumer ring
// per task in the job's segment, holding packets for nodes on other hosts together with the
// reception FIFO they go to. Position independent (indices only), so the task and the agent (in
// bglrun) may map the segment at different addresses. A full ring is backpressure: the packet
// waits in the task's injection FIFO like a packet for a full reception FIFO.
#include <array>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <span>

#include "bgl/packet_layer/header.hpp"
#include "bgl/virtual_time/clock.hpp"

namespace bgl::packet_layer {

struct alignas(kChunkBytes) OutboundPacket {
  std::uint32_t node = 0;  // the node whose reception FIFO receives this copy
  std::uint8_t group = 0;
  std::uint8_t fifo = 0;  // reception FIFO index (last-hop direction, local, high priority)
  std::array<std::uint8_t, 10> reserved{};
  PacketHeader header;
  std::array<std::byte, kMaxPayloadBytes> payload;
  // Virtual time only (written and read only then): the packet's stamp as its sender left it; for
  // a deterministically routed packet the arrival is when its head reaches the first link that
  // leaves the sending host (docs/VIRTUAL_TIME.md, "Several hosts").
  virtual_time::Stamp stamp;
};
// The stamp lives in what was the slot's padding: the ring's layout and size do not change.
static_assert(sizeof(OutboundPacket) == 288);

struct OutboundRing {
  static constexpr std::uint32_t kSlots = 64;

  alignas(64) std::atomic<std::uint32_t> tail{0};  // producer (the task)
  alignas(64) std::atomic<std::uint32_t> head{0};  // consumer (the agent)
  alignas(64) std::array<OutboundPacket, kSlots> slots;

  // Producer: copies the packet in; false when the ring is full.
  bool try_push(std::uint32_t node, std::uint8_t group, std::uint8_t fifo, const PacketHeader& h,
                std::span<const std::byte> payload, std::span<const std::byte> more) {
    return push<false>(node, group, fifo, h, payload, more, {});
  }
  // try_push() of a packet with its virtual-time stamp.
  bool try_push_at(virtual_time::Stamp stamp, std::uint32_t node, std::uint8_t group,
                   std::uint8_t fifo, const PacketHeader& h, std::span<const std::byte> payload,
                   std::span<const std::byte> more) {
    return push<true>(node, group, fifo, h, payload, more, stamp);
  }
  // Consumer.
  const OutboundPacket* front() const {
    const std::uint32_t h = head.load(std::memory_order_relaxed);
    return h == tail.load(std::memory_order_acquire) ? nullptr : &slots[h % kSlots];
  }
  void pop() { head.store(head.load(std::memory_order_relaxed) + 1, std::memory_order_release); }

 private:
  template <bool kTimed>
  bool push(std::uint32_t node, std::uint8_t group, std::uint8_t fifo, const PacketHeader& h,
            std::span<const std::byte> payload, std::span<const std::byte> more,
            virtual_time::Stamp stamp) {
    const std::uint32_t t = tail.load(std::memory_order_relaxed);
    if (t - head.load(std::memory_order_acquire) == kSlots) return false;
    OutboundPacket& p = slots[t % kSlots];
    p.node = node;
    p.group = group;
    p.fifo = fifo;
    p.header = h;
    if (!payload.empty()) std::memcpy(p.payload.data(), payload.data(), payload.size());
    if (!more.empty()) std::memcpy(p.payload.data() + payload.size(), more.data(), more.size());
    if constexpr (kTimed) p.stamp = stamp;
    tail.store(t + 1, std::memory_order_release);
    return true;
  }
};

}  // namespace bgl::packet_layer
