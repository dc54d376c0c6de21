#include "bgl/collective_net_emu/fp.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "exact_sum.hpp"

namespace bgl::collective_net_emu::fp {
namespace {

using test::ExactSum;
constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kMax = std::numeric_limits<double>::max();
constexpr double kTiny = std::numeric_limits<double>::denorm_min();

// What the network computes for one element contributed by xs.size() tasks, in the given order.
Value two_phase(const std::vector<double>& xs) {
  std::uint32_t emax = 0;
  for (double x : xs)
    emax = std::max(emax, exponent_of(x));
  const int guard = guard_bits(static_cast<int>(xs.size()));
  Fixed sum{0, 0};
  for (double x : xs) {
    const Fixed f = to_fixed(x, emax, guard);
    add_wide(sum, sum, f);
  }
  return from_fixed(sum, emax, guard);
}

double exact(const std::vector<double>& xs) {
  ExactSum s;
  for (double x : xs)
    s.add(x);
  return s.to_double();
}

// |result - exact sum|, itself rounded once (fine for comparing with a bound).
double error_of(const std::vector<double>& xs, double result) {
  ExactSum s;
  for (double x : xs)
    s.add(x);
  s.add(-result);
  return std::abs(s.to_double());
}

double ulp_of_exponent(std::uint32_t biased) {
  return std::ldexp(1.0, static_cast<int>(biased) - 1075);
}
double ulp(double x) {
  const double a = std::abs(x);
  return std::nextafter(a, kInf) - a;
}

double random_double(std::mt19937_64& rng, int min_exp, int max_exp) {
  std::uniform_real_distribution<double> m(1.0, 2.0);
  std::uniform_int_distribution<int> e(min_exp, max_exp);
  const double v = std::ldexp(m(rng), e(rng));
  return (rng() & 1) ? -v : v;
}

TEST(Fp, ExponentKeys) {
  EXPECT_EQ(exponent_of(1.0), 1023u);
  EXPECT_EQ(exponent_of(-3.0), 1024u);
  EXPECT_EQ(exponent_of(0.0), 1u);
  EXPECT_EQ(exponent_of(-0.0), 1u);
  EXPECT_EQ(exponent_of(kTiny), 1u);
  EXPECT_EQ(exponent_of(std::numeric_limits<double>::min()), 1u);
  EXPECT_EQ(exponent_of(kInf), kSpecialExponent);
  EXPECT_EQ(exponent_of(std::nan("")), kSpecialExponent);
  EXPECT_EQ(exponent_of(kMax), 2046u);
}

TEST(Fp, GuardBitsLeaveRoomForEveryTask) {
  EXPECT_EQ(guard_bits(1), 74);
  EXPECT_EQ(guard_bits(2), 73);
  EXPECT_EQ(guard_bits(64), 68);
  EXPECT_EQ(guard_bits(65), 67);
  EXPECT_EQ(guard_bits(512 * 1024), 55);
  // n values of magnitude < 2^53 * 2^G must fit a signed 128-bit integer.
  for (int n : {1, 2, 3, 64, 100, 4096, 524288})
    EXPECT_LE(std::ceil(std::log2(n)) + 53 + guard_bits(n), 127);
}

TEST(Fp, OneContributorRoundTripsExactly) {
  std::mt19937_64 rng(4);
  std::vector<double> values{
      1.0, -1.0, kMax,  -kMax,  kTiny,   -kTiny, std::numeric_limits<double>::min(),
      0.0, 0.1,  1e300, 1e-300, 3.5e-310};
  for (int i = 0; i < 20000; ++i)
    values.push_back(std::bit_cast<double>(rng()));
  for (double x : values) {
    if (!std::isfinite(x)) continue;
    const Value v = two_phase({x});
    ASSERT_EQ(v.status, Status::ok);
    ASSERT_EQ(v.value, x) << x;
  }
}

TEST(Fp, SumsWithinGuardBitsAreCorrectlyRounded) {
  std::mt19937_64 rng(5);
  for (int round = 0; round < 3000; ++round) {
    const int n = 1 + static_cast<int>(rng() % 64);
    const int base = static_cast<int>(rng() % 1800) - 900;
    std::vector<double> xs;
    for (int i = 0; i < n; ++i)
      xs.push_back(random_double(rng, base - 40, base + 20));
    const Value v = two_phase(xs);
    ASSERT_EQ(v.status, Status::ok);
    ASSERT_EQ(v.value, exact(xs)) << "round " << round;
  }
}

TEST(Fp, WideRangeSumsStayWithinTheDocumentedBound) {
  std::mt19937_64 rng(6);
  for (int round = 0; round < 3000; ++round) {
    const int n = 2 + static_cast<int>(rng() % 127);
    std::vector<double> xs;
    for (int i = 0; i < n; ++i)
      xs.push_back(random_double(rng, -1000, 1000));
    if (rng() % 4 == 0) xs.push_back(kTiny);
    const Value v = two_phase(xs);
    ASSERT_EQ(v.status, Status::ok);
    std::uint32_t emax = 0;
    for (double x : xs)
      emax = std::max(emax, exponent_of(x));
    const int count = static_cast<int>(xs.size());
    const double bound =
        0.5 * ulp(v.value) + count * std::ldexp(ulp_of_exponent(emax), -(guard_bits(count) + 1));
    ASSERT_LE(error_of(xs, v.value), bound * (1 + 1e-12)) << "round " << round;
  }
}

TEST(Fp, CancellationIsExactWhereSequentialSumsAreNot) {
  // 1e16 + 1 - 1e16: a left-to-right double sum gives 0; the fixed-point sum is exact.
  EXPECT_EQ(two_phase({1e16, 1.0, -1e16}).value, 1.0);
  // MAX + MAX - MAX overflows sequentially but not here.
  const Value v = two_phase({kMax, kMax, -kMax});
  EXPECT_EQ(v.status, Status::ok);
  EXPECT_EQ(v.value, kMax);
  EXPECT_EQ(two_phase({kTiny, kTiny}).value, 2 * kTiny);
  EXPECT_EQ(two_phase({0.0, 0.0}).value, 0.0);
}

TEST(Fp, ResultIsIndependentOfTheOrder) {
  std::mt19937_64 rng(7);
  for (int round = 0; round < 200; ++round) {
    std::vector<double> xs;
    for (int i = 0; i < 64; ++i)
      xs.push_back(random_double(rng, -200, 200));
    const double first = two_phase(xs).value;
    for (int perm = 0; perm < 5; ++perm) {
      std::shuffle(xs.begin(), xs.end(), rng);
      ASSERT_EQ(std::bit_cast<std::uint64_t>(two_phase(xs).value),
                std::bit_cast<std::uint64_t>(first));
    }
  }
}

TEST(Fp, SpecialValuesGiveTheIeeeAnswerAndAStatus) {
  const double nan = std::nan("");
  struct Case {
    std::vector<double> xs;
    double expect;
    Status status;
  };
  const std::vector<Case> cases = {
      {{1.0, nan, 2.0}, nan, Status::not_finite},
      {{1.0, kInf}, kInf, Status::not_finite},
      {{-kInf, 5.0, -kInf}, -kInf, Status::not_finite},
      {{kInf, -kInf}, nan, Status::not_finite},
      {{kInf, nan}, nan, Status::not_finite},
      {{kMax, kMax}, kInf, Status::overflow},
      {{-kMax, -kMax, 1.0}, -kInf, Status::overflow},
      {{kMax, std::ldexp(1.0, 970)}, kInf, Status::overflow},  // a tie, to even: 2^1024
      {{kMax, std::ldexp(1.0, 969)}, kMax, Status::ok},        // below half an ulp: stays
  };
  for (const auto& c : cases) {
    const Value v = two_phase(c.xs);
    EXPECT_EQ(v.status, c.status);
    if (std::isnan(c.expect)) {
      EXPECT_TRUE(std::isnan(v.value));
    } else {
      EXPECT_EQ(v.value, c.expect);
    }
  }
}

TEST(Fp, OrderKeysPreserveTheNumericOrder) {
  std::mt19937_64 rng(8);
  std::vector<double> xs{-kInf, -kMax, -1.0, -kTiny, -0.0, 0.0, kTiny, 1.0, kMax, kInf};
  for (int i = 0; i < 5000; ++i) {
    const double x = std::bit_cast<double>(rng());
    if (!std::isnan(x)) xs.push_back(x);
  }
  std::sort(xs.begin(), xs.end(), [](double a, double b) {
    return a < b || (a == 0 && b == 0 && std::signbit(a) && !std::signbit(b));
  });
  for (std::size_t i = 0; i < xs.size(); ++i) {
    ASSERT_EQ(std::bit_cast<std::uint64_t>(from_order_key(order_key(xs[i], true))),
              std::bit_cast<std::uint64_t>(xs[i]));
    if (i > 0 && xs[i - 1] != xs[i]) {
      ASSERT_LT(order_key(xs[i - 1], true), order_key(xs[i], true));
    }
  }
  EXPECT_LT(order_key(-0.0, true), order_key(0.0, true));
  EXPECT_GT(order_key(std::nan(""), true), order_key(kInf, true));
  EXPECT_LT(order_key(-std::nan(""), false), order_key(-kInf, false));
}

TEST(Fp, PacketCodecsKeepPositionsAndReportNaN) {
  std::array<std::byte, kPacketBytes> packet;
  std::vector<double> xs(20);
  for (std::size_t i = 0; i < xs.size(); ++i)
    xs[i] = static_cast<double>(i) - 7.5;
  encode_keys(xs, false, packet);
  std::vector<double> back(xs.size());
  EXPECT_EQ(decode_keys(packet, false, back), Status::ok);
  EXPECT_EQ(back, xs);
  xs[3] = std::nan("");
  encode_keys(xs, false, packet);
  EXPECT_EQ(decode_keys(packet, false, back), Status::not_finite);
  EXPECT_TRUE(std::isnan(back[3]));

  encode_exponents(xs, packet);
  std::vector<std::uint32_t> e(xs.size());
  decode_exponents(packet, e);
  EXPECT_EQ(e[0], exponent_of(-7.5));
  EXPECT_EQ(e[3], kSpecialExponent);
}

}  // namespace
}  // namespace bgl::collective_net_emu::fp
