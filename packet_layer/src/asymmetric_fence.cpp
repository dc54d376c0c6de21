#include "bgl/packet_layer/asymmetric_fence.hpp"

#include <linux/membarrier.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>

namespace bgl::packet_layer {

std::atomic<bool> g_asymmetric_fences{false};

namespace {

long membarrier(int command) {
  return syscall(SYS_membarrier, command, 0, 0);
}

}  // namespace

bool enable_asymmetric_fences() {
  if (g_asymmetric_fences.load()) return true;
  const long supported = membarrier(MEMBARRIER_CMD_QUERY);
  if (supported < 0 || !(supported & MEMBARRIER_CMD_GLOBAL_EXPEDITED) ||
      !(supported & MEMBARRIER_CMD_GLOBAL))
    return false;
  g_asymmetric_fences.store(membarrier(MEMBARRIER_CMD_REGISTER_GLOBAL_EXPEDITED) == 0);
  return g_asymmetric_fences.load();
}

bool asymmetric_fences_enabled() {
  return g_asymmetric_fences.load();
}

void heavy_fence() {
  std::atomic_thread_fence(std::memory_order_seq_cst);
  // Expedited reaches the registered tasks quickly; if it is refused, the slow global variant
  // (a grace period) covers every process. Without membarrier at all no task skips its own fence.
  if (membarrier(MEMBARRIER_CMD_GLOBAL_EXPEDITED) != 0) membarrier(MEMBARRIER_CMD_GLOBAL);
}

}  // namespace bgl::packet_layer
