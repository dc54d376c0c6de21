#include "bgl/virtual_time/link_calendar.hpp"

#include <algorithm>

#include "spin_lock.hpp"

namespace bgl::virtual_time {

// The earliest start >= earliest whose [start, start + duration) misses every window.
Tick LinkCalendar::place(Tick earliest, Tick duration) const {
  Tick start = earliest;
  for (std::uint32_t i = 0; i < count_; ++i) {
    const Window& w = windows_[i];
    if (w.end <= start) continue;
    if (w.start >= start + duration) break;
    start = w.end;
  }
  return start;
}

void LinkCalendar::insert(Window w) {
  auto* begin = windows_.data();
  auto* end = begin + count_;
  auto* at =
      std::lower_bound(begin, end, w.start, [](const Window& x, Tick t) { return x.start < t; });
  // Merge with a neighbour that touches: a stream of back-to-back packets stays one window.
  const bool left = at != begin && (at - 1)->end == w.start;
  const bool right = at != end && at->start == w.end;
  if (left && right) {
    (at - 1)->end = at->end;
    std::move(at + 1, end, at);
    --count_;
    return;
  }
  if (left) {
    (at - 1)->end = w.end;
    return;
  }
  if (right) {
    at->start = w.start;
    return;
  }
  if (count_ == kWindows) {   // forget the oldest window
    if (at == begin) return;  // older than everything kept: nothing later depends on it
    std::move(begin + 1, at, begin);
    --at;
    --count_;
    end = begin + count_;
  }
  std::move_backward(at, end, end + 1);
  *at = w;
  ++count_;
}

Tick LinkCalendar::reserve(Tick earliest, Tick duration) {
  Tick start;
  {
    const SpinLock lock(lock_);
    start = place(earliest, duration);
    insert({start, start + duration});
  }
  busy_.fetch_add(duration, std::memory_order_relaxed);
  packets_.fetch_add(1, std::memory_order_relaxed);
  Tick h = horizon_.load(std::memory_order_relaxed);
  while (start + duration > h &&
         !horizon_.compare_exchange_weak(h, start + duration, std::memory_order_relaxed)) {
  }
  return start;
}

}  // namespace bgl::virtual_time
