#pragma once
// A whole-job barrier in the segment, for start-up and tests (the emulated global-interrupt
// network is collective_net_emu's). Generation counting makes it reusable; waiters back off to a
// futex sleep.
#include <array>
#include <atomic>
#include <cstdint>
#include <functional>

#include "bgl/job_runtime/backoff.hpp"
#include "bgl/job_runtime/doorbell.hpp"

namespace bgl::job_runtime {

// Virtual time: run by the last task to arrive, with the latest clock, before anybody leaves (a
// conservatively synchronised job publishes when everybody will act again).
using BeforeRelease = std::function<void(std::uint64_t latest_clock)>;

struct alignas(64) JobBarrier {
  std::atomic<std::uint32_t> arrived{0};
  Doorbell bell;  // bell.rings doubles as the generation counter
  // Virtual time: the latest clock that arrived, per generation's parity. Clocks only grow, so a
  // slot reused two generations later only ever receives larger values, and nobody arrives there
  // before every task has read it (that takes passing the generation in between).
  std::array<std::atomic<std::uint64_t>, 2> latest_clock{};

  // Returns the generation it waited for. `clock`: the task's virtual clock (0 without).
  // `agent`: the doorbell of a participant that is not a task (the host's libfabric agent, which
  // sleeps on its own bell), rung after arriving.
  // `before_release`: what the last arrival does, with the latest clock, before anybody leaves.
  std::uint32_t arrive_and_wait(std::uint32_t participants, const WaitPolicy& policy,
                                std::uint64_t clock = 0, Doorbell* agent = nullptr,
                                const BeforeRelease& before_release = {});

  // Split phase, for a task that keeps working while it waits: arrive() returns the generation
  // to wait for (and releases everybody when the caller is the last); passed() tells whether the
  // barrier has opened since. `last` is set for the task that opened it.
  std::uint32_t arrive(std::uint32_t participants, bool& last, std::uint64_t clock = 0,
                       const BeforeRelease& before_release = {});
  bool passed(std::uint32_t generation) const {
    return bell.rings.load(std::memory_order_acquire) != generation;
  }
  // Once `generation` has passed: the latest clock that arrived at it.
  std::uint64_t latest_clock_of(std::uint32_t generation) const {
    return latest_clock[generation & 1].load(std::memory_order_acquire);
  }
};

}  // namespace bgl::job_runtime
