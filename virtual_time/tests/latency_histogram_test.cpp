#include "bgl/virtual_time/latency_histogram.hpp"

#include <gtest/gtest.h>

#include <random>
#include <vector>

namespace bgl::virtual_time {
namespace {

TEST(LatencyHistogram, BucketsCoverEveryValueOnceInOrder) {
  for (Tick v = 0; v < 70000; ++v) {
    const int b = LatencyHistogram::bucket_of(v);
    EXPECT_LE(v, LatencyHistogram::upper_bound(b)) << v;
    if (b > 0) {
      EXPECT_GT(v, LatencyHistogram::upper_bound(b - 1)) << v;
    }
  }
  const Tick big = ~Tick{0};
  EXPECT_EQ(LatencyHistogram::bucket_of(big), LatencyHistogram::kBuckets - 1);
  EXPECT_EQ(LatencyHistogram::upper_bound(LatencyHistogram::kBuckets - 1), big);
}

TEST(LatencyHistogram, PercentilesWithinASixteenthOfTheTruth) {
  std::mt19937_64 rng(7);
  std::lognormal_distribution<double> dist(8.0, 1.5);
  std::vector<Tick> values;
  LatencyHistogram h;
  for (int i = 0; i < 20000; ++i) {
    const auto v = static_cast<Tick>(dist(rng)) + 1;
    values.push_back(v);
    h.record(v);
  }
  std::sort(values.begin(), values.end());
  for (double q : {0.5, 0.9, 0.99}) {
    const auto truth = static_cast<double>(values[static_cast<std::size_t>(q * values.size()) - 1]);
    const auto got = static_cast<double>(h.percentile(q));
    EXPECT_GE(got, truth) << q;
    EXPECT_LE(got, truth * 1.0625) << q;
  }
  EXPECT_EQ(h.percentile(1.0), values.back());
  EXPECT_EQ(h.min(), values.front());
  EXPECT_EQ(h.count(), values.size());
}

TEST(LatencyHistogram, MergeEqualsRecordingEverything) {
  LatencyHistogram a, b, all;
  for (Tick v : {5u, 900u, 1300u})
    a.record(v), all.record(v);
  for (Tick v : {2u, 70000u})
    b.record(v), all.record(v);
  a.merge(b);
  EXPECT_EQ(a.count(), all.count());
  EXPECT_EQ(a.sum(), all.sum());
  EXPECT_EQ(a.min(), 2u);
  EXPECT_EQ(a.max(), 70000u);
  for (int i = 0; i < LatencyHistogram::kBuckets; ++i)
    EXPECT_EQ(a.bucket(i), all.bucket(i));
  EXPECT_EQ(a.percentile(0.5), all.percentile(0.5));
}

TEST(LatencyHistogram, EmptyReadsZero) {
  const LatencyHistogram h;
  EXPECT_EQ(h.percentile(0.5), 0u);
  EXPECT_EQ(h.min(), 0u);
  EXPECT_EQ(h.mean(), 0.0);
}

}  // namespace
}  // namespace bgl::virtual_time
