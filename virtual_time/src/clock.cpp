#include "bgl/virtual_time/clock.hpp"

#include <time.h>

namespace bgl::virtual_time {
namespace {

// CPU time, not elapsed time: with many tasks per core, most of a task's elapsed time is other
// tasks' turns.
std::int64_t thread_cpu_ns() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

}  // namespace

void ComputeMeter::enter(Clock& clock) {
  if (rate_ <= 0 || depth_++ != 0) return;
  const std::int64_t now = thread_cpu_ns();
  if (mark_ns_ >= 0 && now > mark_ns_) {
    carry_ += static_cast<double>(now - mark_ns_) * rate_;
    const auto whole = static_cast<Tick>(carry_);
    carry_ -= static_cast<double>(whole);
    clock.compute(whole);
  }
}

void ComputeMeter::leave() {
  if (rate_ <= 0 || depth_ == 0 || --depth_ != 0) return;
  mark_ns_ = thread_cpu_ns();
}

}  // namespace bgl::virtual_time
