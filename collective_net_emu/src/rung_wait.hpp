#pragma once
#include <algorithm>
#include <chrono>

#include <cstdint>

#include "bgl/collective_net_emu/meanwhile.hpp"
#include "bgl/job_runtime/backoff.hpp"

namespace bgl::collective_net_emu {

// Every wait of this component sleeps on a doorbell that the awaited event always rings (results,
// released slots, inbox packets, barrier completion, wire edges), so the periodic re-check of
// job_runtime::WaitPolicy is only a safety net here. Hundreds of sleepers re-checking every 10 ms
// would take the cores away from the tasks that make progress (512 tasks on 2 cores), so it is
// slower.
inline job_runtime::WaitPolicy rung_waits(job_runtime::WaitPolicy policy) {
  policy.max_sleep =
      std::max<std::chrono::microseconds>(policy.max_sleep, std::chrono::milliseconds(200));
  return policy;
}

// Waits until ready(): spins and yields (job_runtime::Backoff), then sleeps on `bell`. With
// `meanwhile`, runs its round on every spin and yield round and right before each sleep, and sleeps
// on `bell` and the round's doorbell at once (meanwhile.hpp). Returns how many sleeps it took (the
// components' counters).
template <class Ready>
std::uint64_t wait_until(job_runtime::Doorbell& bell, Ready&& ready,
                         const job_runtime::WaitPolicy& policy, const Meanwhile& meanwhile) {
  job_runtime::Backoff backoff(policy);
  std::uint64_t sleeps = 0;
  if (!meanwhile) {
    while (!ready()) {
      sleeps += backoff.sleeping();
      backoff.idle(bell, ready);
    }
    return sleeps;
  }
  auto interval = meanwhile.first;
  bool worked = false;
  // Checked after announcing the sleep on both doorbells, so neither event can be missed.
  const auto ready_or_work = [&] {
    return ready() || (worked = meanwhile.round(meanwhile.context));
  };
  while (!ready()) {
    if (!backoff.sleeping()) {
      if (meanwhile.round(meanwhile.context))
        backoff.reset();
      else
        backoff.idle(bell, ready);
      continue;
    }
    ++sleeps;
    worked = false;
    backoff.note_sleep(&bell);
    const bool quiet =
        meanwhile.unannounced && !meanwhile.unannounced(meanwhile.unannounced_context);
    job_runtime::sleep_on_either(bell, meanwhile.bell ? *meanwhile.bell : bell, ready_or_work,
                                 quiet ? policy.max_sleep : std::min(interval, policy.max_sleep));
    if (worked) {
      backoff.reset();
      interval = meanwhile.first;
    } else {
      interval = std::min(interval * 2, meanwhile.last);
    }
  }
  return sleeps;
}

}  // namespace bgl::collective_net_emu
