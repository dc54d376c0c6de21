#pragma once
// A per-FIFO-group doorbell: consumers that found nothing to do sleep on it, producers ring it
// after publishing a packet, but only when somebody sleeps, so the streaming path costs one read of
// a normally unmodified cache line (the fence is the sleeper's; see asymmetric_fence.hpp).
#include <atomic>
#include <chrono>
#include <cstdint>

#include "bgl/job_runtime/asymmetric_fence.hpp"
#include "bgl/job_runtime/futex.hpp"

namespace bgl::job_runtime {

struct alignas(64) Doorbell {
  std::atomic<std::uint32_t> rings{0};
  std::atomic<std::uint32_t> sleepers{0};

  // Producer side, after publishing: either this load sees the sleeper, or the sleeper's re-check
  // sees the publication.
  void ring() {
    light_fence();
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
    heavy_fence();
    const std::uint32_t seen = rings.load(std::memory_order_acquire);
    if (!ready()) futex_wait(rings, seen, timeout);
    sleepers.fetch_sub(1, std::memory_order_relaxed);
  }
};

// Sleeps on two doorbells at once, for a wait whose own event rings one and whose side work (a
// task's packets, meanwhile) rings the other: unless `ready()` after announcing on both, until
// either rings, at most `timeout`.
template <class Ready>
void sleep_on_either(Doorbell& a, Doorbell& b, Ready&& ready, std::chrono::nanoseconds timeout) {
  if (&a == &b) return a.sleep_unless(ready, timeout);
  a.sleepers.fetch_add(1, std::memory_order_seq_cst);
  b.sleepers.fetch_add(1, std::memory_order_seq_cst);
  heavy_fence();
  const std::uint32_t seen_a = a.rings.load(std::memory_order_acquire);
  const std::uint32_t seen_b = b.rings.load(std::memory_order_acquire);
  if (!ready()) futex_wait_either(a.rings, seen_a, b.rings, seen_b, timeout);
  b.sleepers.fetch_sub(1, std::memory_order_relaxed);
  a.sleepers.fetch_sub(1, std::memory_order_relaxed);
}

}  // namespace bgl::job_runtime
