#pragma once
// How a task waits when there is nothing to do: poll (spin) a while, then yield the core, then
// sleep on a doorbell. With many more tasks than cores (64 ranks on 2 cores) spinning starves the
// task that would make progress, so the spin budget shrinks with oversubscription.
#include <chrono>
#include <cstdint>

#include "bgl/pkt/doorbell.hpp"

namespace bgl::pkt {

struct WaitPolicy {
  int spin_rounds = 2000;
  int yield_rounds = 50;
  std::chrono::microseconds max_sleep{10'000};  // a sleeper re-checks at least this often

  // Defaults for `tasks` tasks on this machine's online cores, overridden by BGL_SPIN, BGL_YIELD
  // and BGL_SLEEP_US (ConfigError for malformed values).
  static WaitPolicy for_job(int tasks);
};

class Backoff {
 public:
  explicit Backoff(const WaitPolicy& policy) : policy_(&policy) {}

  void reset() { rounds_ = 0; }
  // One idle round: spin, yield, or sleep on `bell` unless `ready()` (checked after announcing).
  template <class Ready>
  void idle(Doorbell& bell, Ready&& ready,
            std::chrono::microseconds cap = std::chrono::microseconds::max()) {
    if (rounds_ < policy_->spin_rounds) {
      ++rounds_;
      cpu_relax();
    } else if (rounds_ < policy_->spin_rounds + policy_->yield_rounds) {
      ++rounds_;
      yield();
    } else {
      bell.sleep_unless(ready, std::min(cap, policy_->max_sleep));
    }
  }
  bool sleeping() const { return rounds_ >= policy_->spin_rounds + policy_->yield_rounds; }
  const WaitPolicy& policy() const { return *policy_; }

  static void cpu_relax() { __builtin_ia32_pause(); }
  static void yield();

 private:
  const WaitPolicy* policy_;
  int rounds_ = 0;
};

}  // namespace bgl::pkt
