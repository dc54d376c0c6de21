#pragma once
// Deadlock detection for the tasks of this host: a job in which every running task keeps sleeping
// in a wait of the runtime (the wait records in the task slots, bgl/job_runtime/wait_state.hpp)
// and none sees any work for a whole window is stuck for good, since only a task can make work for
// another. The watch then names what each task waits for, so that the launcher can stop the job
// at once instead of at --timeout.
#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "bgl/job_runtime/segment.hpp"
#include "bgl/packet_layer/machine.hpp"

namespace bgl::bglrun {

class DeadlockWatch {
 public:
  using Clock = std::chrono::steady_clock;
  // `window`: how long every task must keep sleeping without work before the job counts as
  // deadlocked.
  DeadlockWatch(const packet_layer::Machine& machine, const job_runtime::Segment& segment,
                std::chrono::milliseconds window);
  // Called often while the job runs, with each rank's pid (0 when not running on this host).
  // Returns the headline once a deadlock is certain (states() says what each task waits for).
  std::optional<std::string> check(Clock::time_point now, const std::vector<pid_t>& pids);
  // What each running task waits for, grouped ("ranks 1-7: the job barrier ...").
  std::string states(const std::vector<pid_t>& pids) const;

 private:
  struct Seen {
    std::uint64_t sleeps = 0;
    std::uint64_t wakes = 0;
    std::uint64_t cpu_ticks = 0;
  };
  std::string describe_wait(torus_emu::Rank rank) const;
  std::string describe_bell(std::uint64_t offset, torus_emu::Rank rank) const;
  bool all_asleep(const std::vector<pid_t>& pids) const;

  const packet_layer::Machine& machine_;
  const job_runtime::Segment& segment_;
  std::chrono::milliseconds window_;
  Clock::time_point next_sample_{};
  std::optional<Clock::time_point> since_;  // when every task was last seen asleep from
  std::vector<Seen> base_;                  // the counters then
};

}  // namespace bgl::bglrun
