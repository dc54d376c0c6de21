#pragma once
// A distribution of latencies in cycles: log-linear buckets, sixteen per power of two, so any
// percentile read from it is within 1/16 of the true value (and exact below 16 cycles), while
// recording is a few instructions and merging histograms of many tasks is exact.
#include <algorithm>
#include <array>
#include <bit>
#include <cstdint>
#include <limits>

#include "bgl/virtual_time/clock.hpp"

namespace bgl::virtual_time {

class LatencyHistogram {
 public:
  static constexpr int kSubBits = 4;
  static constexpr int kSubBuckets = 1 << kSubBits;                   // per power of two
  static constexpr int kBuckets = (64 - kSubBits + 1) * kSubBuckets;  // up to 2^64 - 1

  // Bucket of a value: the first kSubBuckets hold themselves; above, the power of two and the
  // sixteenth within it.
  static constexpr int bucket_of(Tick v) {
    if (v < kSubBuckets) return static_cast<int>(v);
    const int e = std::bit_width(v) - 1;  // v in [2^e, 2^(e+1)), e >= kSubBits
    const auto sub = static_cast<int>((v >> (e - kSubBits)) & (kSubBuckets - 1));
    return kSubBuckets * (e - kSubBits + 1) + sub;
  }
  // The largest value bucket `b` holds.
  static constexpr Tick upper_bound(int b) {
    if (b < kSubBuckets) return static_cast<Tick>(b);
    const int e = b / kSubBuckets + kSubBits - 1;
    const auto sub = static_cast<Tick>(b % kSubBuckets);
    const Tick width = Tick{1} << (e - kSubBits);
    return (Tick{1} << e) + (sub + 1) * width - 1;
  }

  void record(Tick v) {
    ++buckets_[static_cast<std::size_t>(bucket_of(v))];
    ++count_;
    sum_ += v;
    min_ = std::min(min_, v);
    max_ = std::max(max_, v);
  }
  // Adds `n` values of bucket `b` whose smallest, largest and total are known elsewhere (a
  // histogram read back from its parts: see merge_extremes()).
  void add_bucket(int b, std::uint64_t n) {
    buckets_[static_cast<std::size_t>(b)] += n;
    count_ += n;
  }
  void merge_extremes(Tick min, Tick max, Tick sum) {
    min_ = std::min(min_, min);
    max_ = std::max(max_, max);
    sum_ += sum;
  }
  void merge(const LatencyHistogram& other) {
    for (int b = 0; b < kBuckets; ++b)
      add_bucket(b, other.bucket(b));
    if (other.count_ > 0) merge_extremes(other.min_, other.max_, other.sum_);
  }

  std::uint64_t count() const { return count_; }
  std::uint64_t bucket(int b) const { return buckets_[static_cast<std::size_t>(b)]; }
  Tick min() const { return count_ ? min_ : 0; }
  Tick max() const { return max_; }
  Tick sum() const { return sum_; }
  double mean() const {
    return count_ ? static_cast<double>(sum_) / static_cast<double>(count_) : 0;
  }
  // The q-quantile (0 < q <= 1): the upper bound of the bucket that holds it, kept within the
  // recorded extremes.
  Tick percentile(double q) const;

 private:
  std::array<std::uint64_t, kBuckets> buckets_{};
  std::uint64_t count_ = 0;
  Tick sum_ = 0;
  Tick min_ = std::numeric_limits<Tick>::max();
  Tick max_ = 0;
};

}  // namespace bgl::virtual_time
