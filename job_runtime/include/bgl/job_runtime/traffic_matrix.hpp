#pragma once
// The job's communication matrix in the segment: a region ("traffic") of T rows of T pair counters
// that bglrun requests when it writes statistics. Each task counts what it sends in memory of its
// own (one counter per destination, made at start-up, so counting never allocates or locks) and
// copies its row here once, when it ends; bglrun reads the rows after the job.
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

namespace bgl::job_runtime {

// What one task sent to one destination: messages and their user data bytes.
struct PairTraffic {
  std::uint64_t messages = 0;
  std::uint64_t bytes = 0;
};

inline constexpr std::string_view kTrafficRegion = "traffic";
// Above this many tasks the matrix is not recorded: the dense region would take more than
// 64 MiB of /dev/shm (T * T * 16 bytes).
inline constexpr int kTrafficMaxTasks = 2048;

inline std::size_t traffic_region_bytes(int tasks) {
  const auto t = static_cast<std::size_t>(tasks);
  return t * t * sizeof(PairTraffic);
}

// Row `source` of the region (empty when the region is missing or of the wrong size).
inline std::span<PairTraffic> traffic_row(std::span<std::byte> region, int tasks, int source) {
  if (tasks <= 0 || source < 0 || source >= tasks || region.size() != traffic_region_bytes(tasks))
    return {};
  auto* all = reinterpret_cast<PairTraffic*>(region.data());
  return {all + static_cast<std::size_t>(source) * static_cast<std::size_t>(tasks),
          static_cast<std::size_t>(tasks)};
}

}  // namespace bgl::job_runtime
