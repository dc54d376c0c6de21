#pragma once
// Out-of-band flags for the message-layer benchmarks' raw packet-layer floors.
#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>

#include "bench_util.hpp"
#include "bgl/job_runtime/backoff.hpp"
#include "bgl/packet_layer/runtime.hpp"

namespace bgl::bench {

// Out-of-band flags beside the job's segment, one cache line per task. The raw floors share the
// reception FIFOs with the message layer, and a raw packet must never reach a task that is polling
// in the message layer (which would discard it as malformed). A partner announces here that it
// polls raw packets now (2g) and that it is done (2g + 1), so the benchmark does not depend on the
// order in which the layer sends and receives inside advance() or post().
class RawGate {
 public:
  explicit RawGate(packet_layer::Runtime& rt)
      : memory_(rt, std::max<std::size_t>(4096, static_cast<std::size_t>(rt.size()) * 64)) {}
  void set(std::uint32_t r, std::uint64_t v) { flag(r).store(v, std::memory_order_release); }
  // Spins until rank r's flag is v, yielding after a while (the partner may share our core).
  void await(std::uint32_t r, std::uint64_t v) {
    for (int spins = 0; flag(r).load(std::memory_order_acquire) != v; ++spins) {
      if (spins < 4096)
        job_runtime::Backoff::cpu_relax();
      else
        job_runtime::Backoff::yield();
    }
  }

 private:
  std::atomic_ref<std::uint64_t> flag(std::uint32_t r) {
    return std::atomic_ref<std::uint64_t>(
        *reinterpret_cast<std::uint64_t*>(memory_.data() + r * 64));
  }
  ScratchMemory memory_;
};

}  // namespace bgl::bench
