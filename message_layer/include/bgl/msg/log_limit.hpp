#pragma once
// A rate limit for log lines a peer can provoke (malformed packets): a burst is logged, then one
// line per interval saying how many were left out, so a flood of bad packets cannot flood the log
// or slow the receiver down with formatting.
#include <chrono>
#include <cstdint>

namespace bgl::msg {

class LogLimit {
 public:
  using Clock = std::chrono::steady_clock;
  explicit LogLimit(int burst = 10, Clock::duration interval = std::chrono::seconds(1))
      : burst_(burst), interval_(interval) {}

  // Whether to log this occurrence; `suppressed` is set to the number left out since the last
  // line logged (to be mentioned in this one).
  bool allow(std::uint64_t& suppressed) {
    const auto now = Clock::now();
    if (now - window_start_ >= interval_) {
      window_start_ = now;
      logged_ = 0;
    }
    if (logged_ >= burst_) {
      ++suppressed_;
      return false;
    }
    ++logged_;
    suppressed = suppressed_;
    suppressed_ = 0;
    return true;
  }

 private:
  int burst_;
  Clock::duration interval_;
  Clock::time_point window_start_{};
  int logged_ = 0;
  std::uint64_t suppressed_ = 0;
};

}  // namespace bgl::msg
