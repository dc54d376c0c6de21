#pragma once
// How a task waits when there is nothing to do: poll (spin) a while, then yield the core, then
// sleep on a doorbell. With many more tasks than cores (64 ranks on 2 cores) spinning starves the
// task that would make progress, so the spin budget shrinks with oversubscription.
#include <chrono>
#include <cstdint>

#include "bgl/job_runtime/doorbell.hpp"
#include "bgl/job_runtime/wait_state.hpp"

namespace bgl::job_runtime {

// The cores this process may run on: its affinity mask (a job started under taskset, or confined by
// bglrun for virtual time, has fewer than the machine). What "tasks per core" divides by.
long usable_cores();

// The longest default re-check period of an oversubscribed job's sleepers: the deadlock detection
// (bglrun --deadlock, 3 s by default) needs each sleeper to re-check several times in its window.
inline constexpr std::chrono::milliseconds kLongestRecheck{200};

// Up to this many tasks per core an oversubscribed job's waiters yield before they sleep; above,
// they sleep at once.
inline constexpr int kYieldingTasksPerCore = 8;

struct WaitPolicy {
  // A poll round (pause, then a look at the task's reception FIFOs) takes about 20 ns: some 10 us
  // of polling catch a reply that is on its way. Longer only hurts on a shared machine, where the
  // task it waits for may need this core: there a two-task ping-pong took as long as the spin.
  int spin_rounds = 500;
  int yield_rounds = 200;
  // A sleeper re-checks at least this often: 10 ms, times the tasks per core when oversubscribed,
  // up to kLongestRecheck.
  std::chrono::microseconds max_sleep{10'000};
  // A poll that found nothing gives the core away once before its caller goes on (the task polled
  // for may be waiting for this core).
  bool yield_on_empty_poll = false;

  // Defaults for `tasks` tasks on this host's online cores (and whether the job keeps virtual
  // time), overridden by BGL_SPIN, BGL_YIELD and BGL_SLEEP_US (ConfigError for malformed values).
  static WaitPolicy for_job(int tasks, bool virtual_time = false);
};

// A wait's sleeps are published in the thread's wait record (wait_state.hpp): from the first sleep
// the task counts as asleep until reset() (work found) or the end of the wait.
class Backoff {
 public:
  explicit Backoff(const WaitPolicy& policy) : policy_(&policy) {}
  ~Backoff() {
    if (marked_) wait_record::awake();
  }
  Backoff(const Backoff&) = delete;
  Backoff& operator=(const Backoff&) = delete;

  // Work was found: the next idle round spins again.
  void reset() {
    rounds_ = 0;
    if (marked_) [[unlikely]] {
      marked_ = false;
      wait_record::awake();
    }
  }
  // A new wait that continues the last one's (no work seen in between): spins again, but the task
  // stays asleep in its wait record.
  void restart() { rounds_ = 0; }
  // One idle round: spin, yield, or sleep on `bell` unless `ready()` (checked after announcing),
  // until a ring or the `count`th counted ring (Doorbell).
  template <class Ready>
  void idle(Doorbell& bell, Ready&& ready,
            std::chrono::microseconds cap = std::chrono::microseconds::max(),
            std::uint32_t count = 1) {
    if (rounds_ < policy_->spin_rounds) {
      ++rounds_;
      cpu_relax();
    } else if (rounds_ < policy_->spin_rounds + policy_->yield_rounds) {
      ++rounds_;
      yield();
    } else {
      // Compared before converting: the default cap (microseconds::max()) overflows nanoseconds.
      const std::chrono::nanoseconds timeout =
          cap < policy_->max_sleep ? std::chrono::nanoseconds(cap) : policy_->max_sleep;
      sleep(bell, ready, timeout, count);
    }
  }
  // One sleep on `bell` unless `ready()`, at most `timeout`, published in the wait record.
  template <class Ready>
  void sleep(Doorbell& bell, Ready&& ready, std::chrono::nanoseconds timeout,
             std::uint32_t count = 1) {
    note_sleep(&bell);
    bell.sleep_unless(ready, timeout, count);
  }
  // A sleep that the caller does itself (on `bell` and maybe others).
  void note_sleep(const void* bell) { marked_ = wait_record::asleep(bell) || marked_; }
  bool sleeping() const { return rounds_ >= policy_->spin_rounds + policy_->yield_rounds; }
  const WaitPolicy& policy() const { return *policy_; }

  static void cpu_relax() { __builtin_ia32_pause(); }
  static void yield();

 private:
  const WaitPolicy* policy_;
  int rounds_ = 0;
  bool marked_ = false;  // published as asleep since the last reset
};

}  // namespace bgl::job_runtime
