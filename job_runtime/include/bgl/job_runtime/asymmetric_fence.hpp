#pragma once
// Store-then-check handshakes between a producer (publish a packet, then look for sleepers) and a
// consumer (announce sleeping, then look for packets) need a full fence on both sides. A job
// chooses once, when its segment is formatted, which side pays:
//
// - asymmetric: producers publish with plain stores and the sleeper, which is about to block
//   anyway, forces the fence on every running task with membarrier(2). A fence per packet stalls
//   the producer until the packet's cache-missing stores drain, which halves streaming throughput,
//   so this is the choice while every task has a core of its own.
// - symmetric: producers fence every publication and sleepers fence themselves. With more tasks
//   than cores tasks sleep at nearly every wait, and a membarrier per sleep (an interrupt to every
//   core, and a kernel mutex all sleepers queue on) costs more than the producers' fences save.
#include <atomic>
#include <cstdint>
#include <optional>
#include <string_view>

namespace bgl::job_runtime {

enum class FenceMode : std::uint32_t { asymmetric = 0, symmetric = 1 };

std::string_view to_string(FenceMode mode);
std::optional<FenceMode> parse_fence_mode(std::string_view text);

// The job's choice for `local_tasks` tasks on this host's online cores, unless BGL_FENCES says
// otherwise (`auto`, `asymmetric`, `symmetric`; ConfigError for anything else).
FenceMode fence_mode_for_host(int local_tasks);

// This process takes part in a job that uses `mode`. A process may take part in several (tests):
// producers fence unless every job is asymmetric and membarrier(2) is registered; sleepers force
// the fence on everybody unless every job is symmetric. Returns whether this process's producers
// skip their fences.
bool use_fences(FenceMode mode);
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

}  // namespace bgl::job_runtime
