#pragma once
// A per-FIFO-group doorbell: consumers that found nothing to do sleep on it, producers ring it
// after publishing a packet. A ring wakes only when a sleeper has armed the bell since the last
// wake, so the streaming path costs one read of a normally unmodified cache line (the fence is the
// sleeper's; see asymmetric_fence.hpp), and a burst of packets for a task that was woken but has
// not run yet costs one futex wake, not one per packet.
//
// Why no wake is missed: a sleeper reads `rings`, then arms (a read-modify-write), then re-checks.
// A producer that published before the sleeper's fence is seen by the re-check. One that publishes
// after it finds the bell armed, or finds it disarmed by a ringer whose exchange came after the arm
// and so bumps `rings` after the sleeper read it: either way the futex wait returns.
//
// Counted rings: a sleeper that knows it cannot act before `count` more messages of a kind that
// needs no answer from it have arrived (a collective's last receives) arms with that count, and a
// producer of such a message rings counted: it takes one off the count and wakes only when it
// takes the last. Any other ring wakes at once. Either way exactly one ringer per arming (the one
// that brings `armed` to 0) wakes, and a counted packet published before the sleeper's fence is
// seen by the re-check, so the sleeper wakes no later than at its count'th counted packet.
#include <atomic>
#include <chrono>
#include <cstdint>

#include "bgl/job_runtime/asymmetric_fence.hpp"
#include "bgl/job_runtime/futex.hpp"

namespace bgl::job_runtime {

struct alignas(64) Doorbell {
  std::atomic<std::uint32_t> rings{0};
  // 0: nobody announced a sleep since the last wake; n: a sleeper waits for n counted rings or
  // one other ring.
  std::atomic<std::uint32_t> armed{0};

  // Producer side, after publishing: wakes the sleepers if any armed since the last wake.
  void ring() {
    light_fence();
    if (take_armed()) wake();
  }
  // Producer side, after publishing a packet that completes a message needing no answer: counts
  // down an armed sleeper's count, waking it at the last.
  void ring_counted() {
    light_fence();
    std::uint32_t left = armed.load(std::memory_order_relaxed);
    while (left != 0)
      if (armed.compare_exchange_weak(left, left - 1, std::memory_order_acq_rel,
                                      std::memory_order_relaxed)) {
        if (left == 1) wake();
        return;
      }
  }
  // True for exactly one caller per arming: the one that then wakes.
  bool take_armed() {
    return armed.load(std::memory_order_relaxed) != 0 &&
           armed.exchange(0, std::memory_order_acq_rel) != 0;
  }
  // Wakes every sleeper, armed or not (shutdown, a barrier's release).
  void wake() {
    rings.fetch_add(1, std::memory_order_release);
    futex_wake_all(rings);
  }

  // Consumer side, before the re-check (and its fence): returns the value to sleep on. `count`
  // (at least 1): how many counted rings wake the sleeper (any other ring wakes it at once).
  std::uint32_t arm(std::uint32_t count = 1) {
    const std::uint32_t seen = rings.load(std::memory_order_acquire);
    armed.exchange(count, std::memory_order_seq_cst);
    return seen;
  }
  // Sleeps unless `ready()` becomes true after arming (so no ring can be missed), at most
  // `timeout`, until a ring or the `count`th counted ring.
  template <class Ready>
  void sleep_unless(Ready&& ready, std::chrono::nanoseconds timeout, std::uint32_t count = 1) {
    const std::uint32_t seen = arm(count);
    heavy_fence();
    if (!ready()) futex_wait(rings, seen, timeout);
  }
};

// Sleeps on two doorbells at once, for a wait whose own event rings one and whose side work (a
// task's packets, meanwhile) rings the other: unless `ready()` after arming both, until either
// rings, at most `timeout`.
template <class Ready>
void sleep_on_either(Doorbell& a, Doorbell& b, Ready&& ready, std::chrono::nanoseconds timeout) {
  if (&a == &b) return a.sleep_unless(ready, timeout);
  const std::uint32_t seen_a = a.arm();
  const std::uint32_t seen_b = b.arm();
  heavy_fence();
  if (!ready()) futex_wait_either(a.rings, seen_a, b.rings, seen_b, timeout);
}

}  // namespace bgl::job_runtime
