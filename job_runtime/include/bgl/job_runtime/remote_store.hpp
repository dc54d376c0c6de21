#pragma once
// A one-sided put into another host's copy of a segment region, for components above the packet
// layer that keep an identically formatted replica of their region on every host (the collective
// network does). The packet layer knows nothing about the region's layout: a store is "copy these
// bytes to this offset of region R on host H, then raise the 64-bit word at that offset to this
// value (release), then ring the doorbell at that offset".
//
// A task hands stores to its host's libfabric agent through a single-producer single-consumer ring
// in the segment (one per task, like the outbound packet ring). The agent sends them in ring order
// to the destination host, in order with the other stores it sends there, under their own credits
// (so that stores can never be stuck behind packets that wait for full reception FIFOs); the
// destination's agent validates every field against its region table (region index, bounds,
// alignment, size) and applies it or rejects and logs it, never writing outside the region.
//
// The word is raised, not overwritten: it becomes max(word, value). A component whose flags only
// grow (sequence numbers, versioned counts) may therefore forward updates from several tasks of
// one host without ordering them: the newest value wins wherever the updates arrive out of order.
#include <array>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <span>

#include "bgl/job_runtime/doorbell.hpp"

namespace bgl::job_runtime {

inline constexpr std::size_t kMaxStoreBytes = 512;
inline constexpr std::uint64_t kNoOffset = ~std::uint64_t{0};

struct StoreRequest {
  std::uint16_t host = 0;          // destination host (placement index)
  std::uint8_t region = 0;         // index in the segment's region table (Machine::region_index)
  std::uint64_t offset = 0;        // where the bytes go in the region (ignored without bytes)
  std::uint64_t word = kNoOffset;  // a 64-bit word (8-byte aligned) to raise to `value`, or none
  std::uint64_t value = 0;
  std::uint64_t bell = kNoOffset;  // a Doorbell (64-byte aligned) to ring afterwards, or none
};

struct alignas(64) StoreRecord {
  StoreRequest request;
  std::uint16_t bytes = 0;
  alignas(64) std::array<std::byte, kMaxStoreBytes> data;
};

struct StoreRing {
  static constexpr std::uint32_t kSlots = 64;

  alignas(64) std::atomic<std::uint32_t> tail{0};  // producer (the task)
  alignas(64) std::atomic<std::uint32_t> head{0};  // consumer (the agent)
  Doorbell space;  // rung by the agent after it took records (a producer may sleep on it)
  alignas(64) std::array<StoreRecord, kSlots> slots;

  bool full() const {
    return tail.load(std::memory_order_relaxed) - head.load(std::memory_order_acquire) == kSlots;
  }
  // Producer: false when the ring is full. `bytes` must not exceed kMaxStoreBytes.
  bool try_push(const StoreRequest& r, std::span<const std::byte> bytes) {
    const std::uint32_t t = tail.load(std::memory_order_relaxed);
    if (t - head.load(std::memory_order_acquire) == kSlots) return false;
    StoreRecord& s = slots[t % kSlots];
    s.request = r;
    s.bytes = static_cast<std::uint16_t>(bytes.size());
    if (!bytes.empty()) std::memcpy(s.data.data(), bytes.data(), bytes.size());
    tail.store(t + 1, std::memory_order_release);
    return true;
  }
  // Consumer.
  const StoreRecord* front() const {
    const std::uint32_t h = head.load(std::memory_order_relaxed);
    return h == tail.load(std::memory_order_acquire) ? nullptr : &slots[h % kSlots];
  }
  void pop() { head.store(head.load(std::memory_order_relaxed) + 1, std::memory_order_release); }
};

// What is wrong with a store into a region of `region_bytes` bytes, or nullptr. Used by the
// receiving agent on every inbound store, and by the sender to refuse a malformed one early.
const char* check_store(const StoreRequest& r, std::size_t bytes, std::size_t region_bytes);

// Applies a checked store to `region`: the bytes, then word = max(word, value) with release order,
// then the doorbell.
void apply_store(std::span<std::byte> region, const StoreRequest& r,
                 std::span<const std::byte> bytes);

}  // namespace bgl::job_runtime
