#include "bgl/job_runtime/asymmetric_fence.hpp"

#include <linux/membarrier.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <string>

#include "bgl/job_runtime/backoff.hpp"
#include "bgl/job_runtime/env.hpp"
#include "bgl/torus_emu/error.hpp"

namespace bgl::job_runtime {

std::atomic<bool> g_asymmetric_fences{false};

namespace {

// Which kinds of job this process takes part in (any number of each).
std::atomic<bool> g_in_asymmetric_job{false};
std::atomic<bool> g_in_symmetric_job{false};

long membarrier(int command) {
  return syscall(SYS_membarrier, command, 0, 0);
}

bool register_membarrier() {
  const long supported = membarrier(MEMBARRIER_CMD_QUERY);
  if (supported < 0 || !(supported & MEMBARRIER_CMD_GLOBAL_EXPEDITED) ||
      !(supported & MEMBARRIER_CMD_GLOBAL))
    return false;
  return membarrier(MEMBARRIER_CMD_REGISTER_GLOBAL_EXPEDITED) == 0;
}

}  // namespace

std::string_view to_string(FenceMode mode) {
  return mode == FenceMode::symmetric ? "symmetric" : "asymmetric";
}

std::optional<FenceMode> parse_fence_mode(std::string_view text) {
  if (text == "asymmetric") return FenceMode::asymmetric;
  if (text == "symmetric") return FenceMode::symmetric;
  return std::nullopt;
}

FenceMode fence_mode_for_host(int local_tasks) {
  if (const auto v = job_runtime::env::get("BGL_FENCES"); v && *v != "auto") {
    if (const auto mode = parse_fence_mode(*v)) return *mode;
    throw ConfigError("BGL_FENCES=" + *v + ": expected auto, asymmetric or symmetric");
  }
  return local_tasks > usable_cores() ? FenceMode::symmetric : FenceMode::asymmetric;
}

bool use_fences(FenceMode mode) {
  if (mode == FenceMode::symmetric) {
    g_in_symmetric_job.store(true);
    g_asymmetric_fences.store(false);
    return false;
  }
  g_in_asymmetric_job.store(true);
  if (!g_in_symmetric_job.load() && !g_asymmetric_fences.load())
    g_asymmetric_fences.store(register_membarrier());
  return g_asymmetric_fences.load();
}

bool asymmetric_fences_enabled() {
  return g_asymmetric_fences.load();
}

void heavy_fence() {
  std::atomic_thread_fence(std::memory_order_seq_cst);
  // Every producer of a symmetric job fences its own publications.
  if (g_in_symmetric_job.load(std::memory_order_relaxed) &&
      !g_in_asymmetric_job.load(std::memory_order_relaxed))
    return;
  // Expedited reaches the registered tasks quickly; if it is refused, the slow global variant
  // (a grace period) covers every process. Without membarrier at all no task skips its own fence.
  if (membarrier(MEMBARRIER_CMD_GLOBAL_EXPEDITED) != 0) membarrier(MEMBARRIER_CMD_GLOBAL);
}

}  // namespace bgl::job_runtime
