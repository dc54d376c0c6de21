#pragma once
#include <algorithm>
#include <chrono>

#include <cstdint>

#include "bgl/collnet/meanwhile.hpp"
#include "bgl/pkt/backoff.hpp"

namespace bgl::collnet {

// Every wait of this component sleeps on a doorbell that the awaited event always rings (results,
// released slots, inbox packets, barrier completion, wire edges), so the periodic re-check of
// pkt::WaitPolicy is only a safety net here. Hundreds of sleepers re-checking every 10 ms would
// take the cores away from the tasks that make progress (512 tasks on 2 cores), so it is slower.
inline pkt::WaitPolicy rung_waits(pkt::WaitPolicy policy) {
  policy.max_sleep =
      std::max<std::chrono::microseconds>(policy.max_sleep, std::chrono::milliseconds(200));
  return policy;
}

// Waits until ready(), sleeping on `bell` after the policy's spin and yield rounds; with
// `meanwhile`, runs its round instead of each sleep and sleeps at most the growing interval in
// between (meanwhile.hpp). Returns how many sleeping rounds it took (the components' counters).
template <class Ready>
std::uint64_t wait_until(pkt::Doorbell& bell, Ready&& ready, const pkt::WaitPolicy& policy,
                         const Meanwhile& meanwhile) {
  pkt::Backoff backoff(policy);
  std::uint64_t sleeps = 0;
  auto interval = kMeanwhileFirst;
  while (!ready()) {
    if (!backoff.sleeping()) {
      backoff.idle(bell, ready);
      continue;
    }
    ++sleeps;
    if (!meanwhile) {
      backoff.idle(bell, ready);
    } else if (meanwhile.round(meanwhile.context)) {
      interval = kMeanwhileFirst;
    } else {
      backoff.idle(bell, ready, interval);
      interval = std::min(interval * 2, kMeanwhileLast);
    }
  }
  return sleeps;
}

}  // namespace bgl::collnet
