#pragma once
// What a task must keep doing while it waits on the collective network or the global interrupt.
//
// MPI requires that a send a task has started progresses while the task waits in another MPI
// call, a collective on the tree included: its peer may be waiting for that data before it can
// join the collective (an RMA target answering accumulates while it waits in a fence's barrier).
// So a task that waits here may be given a round of other work (the MPI device's progress, or the
// message layer's advance). The wait runs it on every spin and yield round, and when it sleeps it
// sleeps on its own doorbell and on `bell` at once, the doorbell that rings when that work may
// have something to do (the task's packet arrivals), so a packet is answered within a wake-up.
// Work that no doorbell announces (packets waiting to be injected) is still run at least every
// kMeanwhileFirst .. kMeanwhileLast, an interval that doubles while nothing happens; while
// `unannounced` says there is none, the wait sleeps until a doorbell rings, re-checking only as
// the wait policy's safety net (max_sleep): with many tasks per core a time-out is a wake-up that
// takes a core from a task with work (1,024 tasks re-checking every 20 ms were four of every five
// context switches of a 100 ms allreduce). The wait does the idling, so the round must not sleep
// itself (it would not wake for the wire).
#include <chrono>
#include <cstdint>

#include "bgl/job_runtime/doorbell.hpp"

namespace bgl::collective_net_emu {

inline constexpr std::chrono::microseconds kMeanwhileFirst{100};
inline constexpr std::chrono::microseconds kMeanwhileLast{20'000};

struct Meanwhile {
  bool (*round)(void* context) = nullptr;  // true when it did anything
  void* context = nullptr;
  job_runtime::Doorbell* bell =
      nullptr;  // rings when the round may find work; none: only the interval
  // The interval for work no doorbell announces.
  std::chrono::microseconds first = kMeanwhileFirst, last = kMeanwhileLast;
  // Whether the round may have work that no doorbell announces; none: it may, always.
  bool (*unannounced)(const void* context) = nullptr;
  const void* unannounced_context = nullptr;
  // Virtual time, conservatively synchronised: publishes the task as waiting for `event`
  // (virtual_time::event_key) before it idles, since the round may have published it running.
  void (*park)(void* context, std::uint64_t event) = nullptr;
  void* park_context = nullptr;
  explicit operator bool() const { return round != nullptr; }
};

}  // namespace bgl::collective_net_emu
