#include "bgl/job_runtime/backoff.hpp"

#include <sched.h>
#include <unistd.h>
#include <algorithm>

#include "bgl/job_runtime/agent_wake.hpp"
#include "bgl/job_runtime/env.hpp"
#include "bgl/job_runtime/job_barrier.hpp"

namespace bgl::job_runtime {

void Backoff::yield() {
  sched_yield();
}

long usable_cores() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0) return std::max(1, CPU_COUNT(&set));
  return std::max(1L, sysconf(_SC_NPROCESSORS_ONLN));
}

WaitPolicy WaitPolicy::for_job(int tasks, bool virtual_time) {
  WaitPolicy p;
  const long cores = usable_cores();
  p.yield_on_empty_poll = tasks > cores;
  if (tasks > cores) {
    const long per_core = (tasks + cores - 1) / cores;
    // Every wake-up is event driven; the re-check is a safety net whose price is a context switch
    // on a shared core, paid by every sleeper: 1,024 tasks re-checking every 10 ms while the rest
    // of the job starts took half of two cores and doubled the start-up time.
    p.max_sleep = std::min<std::chrono::microseconds>(per_core * p.max_sleep, kLongestRecheck);
    if (virtual_time) {
      // A virtual-time job runs on one core, where tasks that spin and yield before they sleep
      // take their turns nearly in the order the model expects them; sleeping at once lets the
      // kernel's wake-up order decide which packet a task handles first, and the predictions drift
      // by up to 20 % from run to run.
      p.spin_rounds = 64;
      p.yield_rounds = per_core > 4 ? 4 : 16;
    } else {
      // What we wait for can only come if we give the core away, and to the task that will make
      // it. Up to kYieldingTasksPerCore a yield usually does (a switch to the next task on the
      // same core costs about a microsecond, a futex wake-up 5-10), so a waiter yields before it
      // sleeps. Above, a yield mostly hands the core to another waiter, while every wake-up is
      // targeted (the awaited event rings the waiter's doorbell): a waiter sleeps at once.
      p.spin_rounds = 0;
      if (per_core > kYieldingTasksPerCore) p.yield_rounds = 0;
    }
  }
  if (auto v = job_runtime::env::get_int("BGL_SPIN", 0, 100'000'000))
    p.spin_rounds = static_cast<int>(*v);
  if (auto v = job_runtime::env::get_int("BGL_YIELD", 0, 100'000'000))
    p.yield_rounds = static_cast<int>(*v);
  if (auto v = job_runtime::env::get_int("BGL_SLEEP_US", 1, 10'000'000))
    p.max_sleep = std::chrono::microseconds(*v);
  return p;
}

std::uint32_t JobBarrier::arrive(std::uint32_t participants, bool& last, std::uint64_t clock,
                                 const BeforeRelease& before_release) {
  const std::uint32_t generation = bell.rings.load(std::memory_order_acquire);
  // Before arriving: the release that follows the last arrival publishes every clock.
  auto& latest = latest_clock[generation & 1];
  for (std::uint64_t seen = latest.load(std::memory_order_relaxed);
       seen < clock && !latest.compare_exchange_weak(seen, clock, std::memory_order_relaxed);) {
  }
  last = arrived.fetch_add(1, std::memory_order_acq_rel) + 1 == participants;
  if (last) {
    if (before_release) before_release(latest.load(std::memory_order_relaxed));
    arrived.store(0, std::memory_order_relaxed);
    bell.wake();
  }
  return generation;
}

std::uint32_t JobBarrier::arrive_and_wait(std::uint32_t participants, const WaitPolicy& policy,
                                          std::uint64_t clock, Doorbell* agent,
                                          const BeforeRelease& before_release) {
  bool last = false;
  const std::uint32_t generation = arrive(participants, last, clock, before_release);
  if (last) return generation;
  if (agent) ring_agent(*agent);
  const wait_record::Reason reason(WaitKind::job_barrier, generation);
  Backoff backoff(policy);
  const auto open = [&] { return passed(generation); };
  while (!open())
    backoff.idle(bell, open);
  return generation;
}

}  // namespace bgl::job_runtime
