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
// on `bell` and the round's doorbell at once (meanwhile.hpp); `event` (virtual_time::event_key, 0:
// none) is what the task waits for, published before it idles. Returns how many sleeps it took (the
// components' counters).
template <class Ready>
std::uint64_t wait_until(job_runtime::Doorbell& bell, Ready&& ready,
                         const job_runtime::WaitPolicy& policy, const Meanwhile& meanwhile,
                         std::uint64_t event = 0) {
  job_runtime::Backoff backoff(policy);
  std::uint64_t sleeps = 0;
  if (!meanwhile) {
    while (!ready()) {
      sleeps += backoff.sleeping();
      backoff.idle(bell, ready);
    }
    return sleeps;
  }
  const auto park = [&] {
    if (meanwhile.park && event != 0) meanwhile.park(meanwhile.park_context, event);
  };
  auto interval = meanwhile.first;
  bool worked = false;
  // Checked after announcing the sleep on both doorbells, so neither event can be missed. A round
  // that found nothing is followed by the task's waiting state (the round published it running).
  const auto ready_or_work = [&] {
    if (ready()) return true;
    worked = meanwhile.round(meanwhile.context);
    if (!worked) park();
    return worked;
  };
  while (!ready()) {
    if (!backoff.sleeping()) {
      if (meanwhile.round(meanwhile.context)) {
        backoff.reset();
      } else {
        park();
        backoff.idle(bell, ready);
      }
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
