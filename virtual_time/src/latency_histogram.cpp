#include "bgl/virtual_time/latency_histogram.hpp"

#include <cmath>

namespace bgl::virtual_time {

Tick LatencyHistogram::percentile(double q) const {
  if (count_ == 0) return 0;
  const auto rank = static_cast<std::uint64_t>(
      std::max(1.0, std::ceil(std::clamp(q, 0.0, 1.0) * static_cast<double>(count_))));
  std::uint64_t seen = 0;
  for (int b = 0; b < kBuckets; ++b) {
    seen += bucket(b);
    if (seen >= rank) return std::clamp(upper_bound(b), min(), max_);
  }
  return max_;
}

}  // namespace bgl::virtual_time
