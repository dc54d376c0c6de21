#pragma once
// What a task must keep doing while it waits on the collective network or the global interrupt.
//
// MPI requires that a send a task has started progresses while the task waits in another MPI
// call, a collective on the tree included: its peer may be waiting for that data before it can
// join the collective. So a task that waits here may be given a round of other work (the MPI
// device's progress, or the message layer's advance) that the wait runs whenever it would sleep;
// the sleep between rounds starts short and doubles while nothing happens (kMeanwhileFirst ..
// kMeanwhileLast), so a long wait costs few wake-ups. Without one, a wait sleeps until its
// doorbell rings.
#include <chrono>

namespace bgl::collnet {

struct Meanwhile {
  bool (*round)(void* context) = nullptr;  // true when it did anything
  void* context = nullptr;
  explicit operator bool() const { return round != nullptr; }
};

inline constexpr std::chrono::microseconds kMeanwhileFirst{100};
inline constexpr std::chrono::microseconds kMeanwhileLast{20'000};

}  // namespace bgl::collnet
