#pragma once
// A whole-job barrier in the segment, for start-up and tests (the emulated global-interrupt
// network is collective_net_emu's). Generation counting makes it reusable; waiters back off to a
// futex sleep.
#include <atomic>
#include <cstdint>

#include "bgl/pkt/backoff.hpp"
#include "bgl/pkt/doorbell.hpp"

namespace bgl::pkt {

struct alignas(64) JobBarrier {
  std::atomic<std::uint32_t> arrived{0};
  Doorbell bell;  // bell.rings doubles as the generation counter

  void arrive_and_wait(std::uint32_t participants, const WaitPolicy& policy);

  // Split phase, for a task that keeps working while it waits: arrive() returns the generation
  // to wait for (and releases everybody when the caller is the last); passed() tells whether the
  // barrier has opened since. `last` is set for the task that opened it.
  std::uint32_t arrive(std::uint32_t participants, bool& last);
  bool passed(std::uint32_t generation) const {
    return bell.rings.load(std::memory_order_acquire) != generation;
  }
};

}  // namespace bgl::pkt
