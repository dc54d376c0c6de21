#pragma once
// Reference for floating-point sums: the exact sum of doubles as a 2304-bit two's-complement
// fixed-point integer (bit 0 = 2^-1074, the smallest subnormal), converted back with one
// round-to-nearest-even. Independent of the library's 128-bit fixed point on purpose.
#include <array>
#include <bit>
#include <cmath>
#include <cstdint>

namespace bgl::collective_net_emu::test {

class ExactSum {
 public:
  static constexpr int kWords = 36;

  // Finite x only.
  void add(double x) {
    const auto bits = std::bit_cast<std::uint64_t>(x);
    const auto field = static_cast<int>(bits >> 52 & 0x7ff);
    const std::uint64_t m =
        (bits & ((std::uint64_t{1} << 52) - 1)) | (field ? std::uint64_t{1} << 52 : 0);
    if (m == 0) return;
    const int shift = (field ? field : 1) - 1;
    std::array<std::uint64_t, kWords> v{};
    const int word = shift / 64, bit = shift % 64;
    v[static_cast<std::size_t>(word)] = m << bit;
    if (bit != 0) v[static_cast<std::size_t>(word + 1)] = m >> (64 - bit);
    if (bits >> 63) negate(v);
    std::uint64_t carry = 0;
    for (int i = 0; i < kWords; ++i) {
      const auto k = static_cast<std::size_t>(i);
      const std::uint64_t s = w_[k] + v[k];
      const std::uint64_t c1 = s < w_[k];
      w_[k] = s + carry;
      carry = c1 | (w_[k] < s);
    }
  }

  bool is_zero() const {
    for (auto x : w_)
      if (x) return false;
    return true;
  }

  // The correctly rounded double (+-inf beyond the range).
  double to_double() const {
    auto mag = w_;
    const bool negative = (mag[kWords - 1] >> 63) != 0;
    if (negative) negate(mag);
    int top = -1;
    for (int i = kWords - 1; i >= 0 && top < 0; --i)
      if (mag[static_cast<std::size_t>(i)])
        top = i * 64 + 63 - std::countl_zero(mag[static_cast<std::size_t>(i)]);
    if (top < 0) return 0.0;
    double r;
    if (top <= 52) {
      r = std::ldexp(static_cast<double>(mag[0]), -1074);
    } else {
      const int k = top - 52;
      std::uint64_t m = 0;
      for (int b = 52; b >= 0; --b)
        m = m << 1 | bit(mag, k + b);
      const bool round = bit(mag, k - 1) != 0;
      bool sticky = false;
      for (int b = 0; b < k - 1 && !sticky; ++b)
        sticky = bit(mag, b) != 0;
      if (round && (sticky || (m & 1))) ++m;
      r = std::ldexp(static_cast<double>(m), k - 1074);
    }
    return negative ? -r : r;
  }

 private:
  static std::uint64_t bit(const std::array<std::uint64_t, kWords>& a, int i) {
    return a[static_cast<std::size_t>(i / 64)] >> (i % 64) & 1;
  }
  static void negate(std::array<std::uint64_t, kWords>& a) {
    std::uint64_t carry = 1;
    for (auto& x : a) {
      x = ~x + carry;
      carry = carry && x == 0;
    }
  }

  std::array<std::uint64_t, kWords> w_{};
};

}  // namespace bgl::collective_net_emu::test
