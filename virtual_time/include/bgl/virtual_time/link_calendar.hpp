#pragma once
// When a directed torus link is busy, in virtual time: a short sorted list of reserved windows
// that lives in the job's shared segment, one per link, shared by every task that routes over it.
//
// Tasks handle packets in host order, not in virtual order: a packet whose virtual time is earlier
// can be injected later in host time. A single "free at" time per link would make it wait behind
// a packet that, in virtual time, comes after it; a calendar lets it take an earlier gap instead,
// so contention is only what the virtual times imply. Adjacent windows merge (a stream is one
// window); when the list is full the oldest window is forgotten, which can only make the model
// more optimistic about times long past.
#include <array>
#include <atomic>
#include <cstdint>

#include "bgl/virtual_time/clock.hpp"

namespace bgl::virtual_time {

// In a link -> calendar table: a link that no packet can cross (it has no calendar).
inline constexpr std::uint32_t kNoCalendar = ~std::uint32_t{0};

struct Window {
  Tick start = 0;
  Tick end = 0;  // exclusive
};

class LinkCalendar {
 public:
  static constexpr int kWindows = 24;

  // Reserves the earliest interval of `duration` cycles starting at or after `earliest` that
  // overlaps no reservation; returns its start. Safe between processes (a short spin lock).
  Tick reserve(Tick earliest, Tick duration);

  // Statistics: cycles reserved in all, packets, and the end of the latest reservation.
  Tick busy() const { return busy_.load(std::memory_order_relaxed); }
  std::uint64_t packets() const { return packets_.load(std::memory_order_relaxed); }
  Tick horizon() const { return horizon_.load(std::memory_order_relaxed); }

 private:
  Tick place(Tick earliest, Tick duration) const;
  void insert(Window w);

  std::atomic<std::uint32_t> lock_{0};
  std::uint32_t count_ = 0;
  std::atomic<Tick> busy_{0};
  std::atomic<std::uint64_t> packets_{0};
  std::atomic<Tick> horizon_{0};
  std::array<Window, kWindows> windows_{};  // sorted by start, disjoint
};

}  // namespace bgl::virtual_time
