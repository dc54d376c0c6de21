#pragma once
// Store-then-check handshakes between a producer (publish a packet, then look for sleepers) and a
// consumer (announce sleeping, then look for packets) need a full fence on both sides. A fence per
// packet stalls the producer until the packet's cache-missing stores drain, which halves streaming
// throughput. With membarrier(2) the sleeper, which is about to block anyway, forces the fence on
// every running task of the job instead, and producers publish with plain stores.
#include <atomic>

namespace bgl::packet_layer {

// Registers this process for expedited global membarriers. Idempotent; false (and producers keep
// their own fences) when the kernel or a seccomp filter does not allow it.
bool enable_asymmetric_fences();
bool asymmetric_fences_enabled();

// Producer side: orders the preceding publication before the following sleeper check.
inline void light_fence() {
  extern std::atomic<bool> g_asymmetric_fences;
  if (g_asymmetric_fences.load(std::memory_order_relaxed)) {
    __atomic_signal_fence(__ATOMIC_SEQ_CST);  // the compiler must not reorder; the CPU may
  } else {
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
  }
}

// Sleeper side: after this returns, every store that any task of the job made before the call is
// visible here, and every load any task makes after the call sees our stores made before it.
void heavy_fence();

}  // namespace bgl::packet_layer
