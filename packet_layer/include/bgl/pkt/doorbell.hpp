#pragma once
// A per-FIFO-group doorbell: consumers that found nothing to do sleep on it, producers ring it
// after publishing a packet, but only when somebody sleeps, so the streaming path costs one fence
// and one (normally shared, unmodified) cache-line read.
#include <atomic>
#include <chrono>
#include <cstdint>

#include "bgl/pkt/futex.hpp"

namespace bgl::pkt {

struct alignas(64) Doorbell {
  std::atomic<std::uint32_t> rings{0};
  std::atomic<std::uint32_t> sleepers{0};

  // Producer side, after the packet is published.
  void ring() {
    std::atomic_thread_fence(std::memory_order_seq_cst);
    if (sleepers.load(std::memory_order_relaxed) != 0) {
      rings.fetch_add(1, std::memory_order_release);
      futex_wake_all(rings);
    }
  }

  // Consumer side: sleeps unless `ready()` becomes true after announcing the sleep (so no ring
  // can be missed), at most `timeout`.
  template <class Ready>
  void sleep_unless(Ready&& ready, std::chrono::nanoseconds timeout) {
    sleepers.fetch_add(1, std::memory_order_seq_cst);
    const std::uint32_t seen = rings.load(std::memory_order_acquire);
    if (!ready()) futex_wait(rings, seen, timeout);
    sleepers.fetch_sub(1, std::memory_order_relaxed);
  }
};

}  // namespace bgl::pkt
