#pragma once
// A lock word in the job's segment, held for a few instructions: spins, then gives the core away
// (with many tasks a core the holder may be descheduled).
#include <sched.h>

#include <atomic>
#include <cstdint>

namespace bgl::virtual_time {

class SpinLock {
 public:
  explicit SpinLock(std::atomic<std::uint32_t>& word) : word_(word) {
    for (int spins = 0;; ++spins) {
      std::uint32_t expected = 0;
      if (word_.load(std::memory_order_relaxed) == 0 &&
          word_.compare_exchange_weak(expected, 1, std::memory_order_acquire))
        return;
      if (spins > 32) sched_yield();
    }
  }
  ~SpinLock() { word_.store(0, std::memory_order_release); }
  SpinLock(const SpinLock&) = delete;
  SpinLock& operator=(const SpinLock&) = delete;

 private:
  std::atomic<std::uint32_t>& word_;
};

}  // namespace bgl::virtual_time
