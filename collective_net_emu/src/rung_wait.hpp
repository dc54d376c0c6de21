#pragma once
#include <algorithm>
#include <chrono>

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

}  // namespace bgl::collnet
