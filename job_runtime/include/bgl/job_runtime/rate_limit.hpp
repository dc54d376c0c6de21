#pragma once
// Rate-limited logging of errors that a peer can cause at will: the one limiter of every layer
// (packet layer, message layer and its coprocessor, collectives).
#include <spdlog/spdlog.h>

#include <chrono>
#include <cstdint>
#include <string_view>
#include <utility>

namespace bgl::job_runtime::log {

// Keeps an error that a peer can repeat at will (a malformed packet) from flooding the log: the
// first kInFull occurrences are logged in full, later ones only as a count, at most once per
// kSummaryPeriod. Not thread-safe (one per endpoint or engine).
class RateLimit {
 public:
  using Clock = std::chrono::steady_clock;
  static constexpr std::uint64_t kInFull = 10;
  static constexpr Clock::duration kSummaryPeriod = std::chrono::seconds(1);

  struct Verdict {
    bool in_full = false;         // log this occurrence in full
    std::uint64_t summarize = 0;  // else, when non-zero: log one line counting this many
  };

  Verdict note(Clock::time_point now = Clock::now()) {
    ++seen_;
    if (seen_ <= kInFull) {
      last_line_ = now;  // the first count comes a period after the last full line
      return {true, 0};
    }
    ++unreported_;
    if (now - last_line_ < kSummaryPeriod) return {};
    last_line_ = now;
    return {false, std::exchange(unreported_, 0)};
  }
  // note() and the log lines for a malformed packet: `in_full()` logs this one when it is among
  // the first, then a notice that the rest are only counted, then at most one line a period with
  // the count left out since. `who` and `rank` start those lines ("rank 3 (coprocessor): ...");
  // `total` is the caller's count of them all. Formats nothing for a packet it leaves out.
  template <class LogInFull>
  void report(std::uint64_t rank, std::string_view who, std::uint64_t total, LogInFull&& in_full) {
    const Verdict v = note();
    if (v.in_full) {
      in_full();
      if (seen_ == kInFull)
        spdlog::error(
            "rank {}{}: further malformed packets are only counted (a line at most once a second)",
            rank, who);
    } else if (v.summarize) {
      spdlog::error("rank {}{}: discarded {} more malformed packets ({} in all)", rank, who,
                    v.summarize, total);
    }
  }

  std::uint64_t seen() const { return seen_; }
  std::uint64_t unreported() const { return unreported_; }

 private:
  std::uint64_t seen_ = 0;
  std::uint64_t unreported_ = 0;
  Clock::time_point last_line_{};
};

}  // namespace bgl::job_runtime::log
