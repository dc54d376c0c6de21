#include "bgl/collective_net_emu/fp.hpp"

#include <bit>
#include <cmath>
#include <cstring>
#include <limits>

namespace bgl::collective_net_emu::fp {
namespace {

__extension__ using u128 = unsigned __int128;

constexpr int kSignificandBits = 53;
constexpr int kBias = 1075;  // x = M * 2^(e - 1075) for biased exponent e and 53-bit M
constexpr int kMinQuantum = -1074;
constexpr std::uint64_t kHiddenBit = std::uint64_t{1} << 52;
constexpr std::uint64_t kFractionMask = kHiddenBit - 1;
constexpr std::uint64_t kInfinityBits = std::uint64_t{0x7ff} << 52;
// Counts of special values in the lane of an element whose maximum exponent is 2047.
constexpr int kPlusInfShift = 40, kMinusInfShift = 80;
constexpr std::uint64_t kCountMask = (std::uint64_t{1} << 40) - 1;

u128 to_u128(const Fixed& f) {
  return u128{f[1]} << 64 | f[0];
}
Fixed from_u128(u128 v) {
  return {static_cast<std::uint64_t>(v), static_cast<std::uint64_t>(v >> 64)};
}

int ceil_log2(int n) {
  return n <= 1 ? 0 : std::bit_width(static_cast<unsigned>(n - 1));
}

// v >> k rounded to nearest, ties to even; k may be anything >= 1.
u128 shift_round(u128 v, int k) {
  if (k >= 128) return 0;  // v < 2^127 is below half of 2^k
  const u128 q = v >> k;
  const u128 rest = v & ((u128{1} << k) - 1);
  const u128 half = u128{1} << (k - 1);
  return (rest > half || (rest == half && (q & 1))) ? q + 1 : q;
}

Fixed special_counts(double x) {
  if (std::isnan(x)) return {1, 0};
  if (std::isinf(x)) {
    const u128 one = 1;
    return from_u128(one << (x > 0 ? kPlusInfShift : kMinusInfShift));
  }
  return {0, 0};
}

Value decode_special(const Fixed& sum) {
  const u128 v = to_u128(sum);
  const auto nans = static_cast<std::uint64_t>(v) & kCountMask;
  const auto plus = static_cast<std::uint64_t>(v >> kPlusInfShift) & kCountMask;
  const auto minus = static_cast<std::uint64_t>(v >> kMinusInfShift) & kCountMask;
  constexpr double inf = std::numeric_limits<double>::infinity();
  if (nans != 0 || (plus != 0 && minus != 0))
    return {std::numeric_limits<double>::quiet_NaN(), Status::not_finite};
  return {plus != 0 ? inf : -inf, Status::not_finite};
}

}  // namespace

std::uint32_t exponent_of(double x) {
  const auto e = static_cast<std::uint32_t>(std::bit_cast<std::uint64_t>(x) >> 52 & 0x7ff);
  return e == 0 ? 1 : e;
}

int guard_bits(int tasks) {
  return 74 - ceil_log2(tasks);
}

Fixed to_fixed(double x, std::uint32_t emax, int guard) {
  if (emax == kSpecialExponent) [[unlikely]]
    return special_counts(x);
  const auto bits = std::bit_cast<std::uint64_t>(x);
  const auto field = static_cast<std::uint32_t>(bits >> 52 & 0x7ff);
  const std::uint64_t m = (bits & kFractionMask) | (field ? kHiddenBit : 0);
  const int shift = static_cast<int>(field ? field : 1) - static_cast<int>(emax) + guard;
  const u128 magnitude = shift >= 0 ? u128{m} << shift : shift_round(m, -shift);
  return from_u128((bits >> 63) ? u128{0} - magnitude : magnitude);
}

Value from_fixed(const Fixed& sum, std::uint32_t emax, int guard) {
  if (emax == kSpecialExponent) [[unlikely]]
    return decode_special(sum);
  const u128 v = to_u128(sum);
  const std::uint64_t sign = static_cast<std::uint64_t>(v >> 127) << 63;
  const u128 a = sign ? u128{0} - v : v;
  if (a == 0) return {0.0, Status::ok};
  const int q = static_cast<int>(emax) - kBias - guard;  // the grid: value = a * 2^q
  const auto hi = static_cast<std::uint64_t>(a >> 64);
  const int t =
      hi ? 128 - std::countl_zero(hi) : 64 - std::countl_zero(static_cast<std::uint64_t>(a));
  // One rounding: to 53 significant bits, or to the subnormal quantum when that is coarser.
  const int k = std::max(t - kSignificandBits, kMinQuantum - q);
  std::uint64_t m = static_cast<std::uint64_t>(k > 0 ? shift_round(a, k) : a);
  int exponent = k > 0 ? q + k : q;  // value = m * 2^exponent exactly, m <= 2^53
  if (m == 0) return {std::bit_cast<double>(sign), Status::ok};
  // Normalise to a 53-bit significand without going below the smallest quantum.
  const int s =
      std::min(kSignificandBits - static_cast<int>(std::bit_width(m)), exponent - kMinQuantum);
  if (s > 0) {
    m <<= s;
    exponent -= s;
  } else if (s < 0) {  // rounding carried to 2^53
    m >>= 1;
    exponent += 1;
  }
  if (m < kHiddenBit) return {std::bit_cast<double>(sign | m), Status::ok};  // subnormal
  const auto biased = static_cast<std::uint64_t>(exponent + kBias);
  if (biased >= 2047) return {std::bit_cast<double>(sign | kInfinityBits), Status::overflow};
  return {std::bit_cast<double>(sign | biased << 52 | (m & kFractionMask)), Status::ok};
}

std::int64_t order_key(double x, bool nan_high) {
  if (std::isnan(x))
    return nan_high ? std::numeric_limits<std::int64_t>::max()
                    : std::numeric_limits<std::int64_t>::min();
  const auto b = std::bit_cast<std::int64_t>(x);
  return b ^ ((b >> 63) & std::numeric_limits<std::int64_t>::max());
}

double from_order_key(std::int64_t key) {
  if (key == std::numeric_limits<std::int64_t>::max() ||
      key == std::numeric_limits<std::int64_t>::min())
    return std::numeric_limits<double>::quiet_NaN();
  return std::bit_cast<double>(key ^ ((key >> 63) & std::numeric_limits<std::int64_t>::max()));
}

void encode_exponents(std::span<const double> x, PacketSpan out) {
  std::uint32_t lanes[kExponentsPerPacket] = {};
  for (std::size_t i = 0; i < x.size() && i < kExponentsPerPacket; ++i)
    lanes[i] = exponent_of(x[i]);
  std::memcpy(out.data(), lanes, kPacketBytes);
}

void decode_exponents(ConstPacketSpan in, std::span<std::uint32_t> emax) {
  std::uint32_t lanes[kExponentsPerPacket];
  std::memcpy(lanes, in.data(), kPacketBytes);
  for (std::size_t i = 0; i < emax.size() && i < kExponentsPerPacket; ++i)
    emax[i] = lanes[i];
}

void encode_fixed(std::span<const double> x, std::span<const std::uint32_t> emax, int guard,
                  PacketSpan out) {
  Fixed lanes[kFixedPerPacket] = {};
  for (std::size_t i = 0; i < x.size() && i < kFixedPerPacket; ++i)
    lanes[i] = to_fixed(x[i], emax[i], guard);
  std::memcpy(out.data(), lanes, kPacketBytes);
}

Status decode_fixed(ConstPacketSpan in, std::span<const std::uint32_t> emax, int guard,
                    std::span<double> out) {
  Fixed lanes[kFixedPerPacket];
  std::memcpy(lanes, in.data(), kPacketBytes);
  Status s = Status::ok;
  for (std::size_t i = 0; i < out.size() && i < kFixedPerPacket; ++i) {
    const Value v = from_fixed(lanes[i], emax[i], guard);
    out[i] = v.value;
    s = worst(s, v.status);
  }
  return s;
}

void encode_keys(std::span<const double> x, bool nan_high, PacketSpan out) {
  std::int64_t lanes[kKeysPerPacket] = {};
  for (std::size_t i = 0; i < x.size() && i < kKeysPerPacket; ++i)
    lanes[i] = order_key(x[i], nan_high);
  std::memcpy(out.data(), lanes, kPacketBytes);
}

Status decode_keys(ConstPacketSpan in, bool nan_high, std::span<double> out) {
  std::int64_t lanes[kKeysPerPacket];
  std::memcpy(lanes, in.data(), kPacketBytes);
  const std::int64_t nan = nan_high ? std::numeric_limits<std::int64_t>::max()
                                    : std::numeric_limits<std::int64_t>::min();
  Status s = Status::ok;
  for (std::size_t i = 0; i < out.size() && i < kKeysPerPacket; ++i) {
    out[i] = from_order_key(lanes[i]);
    if (lanes[i] == nan) s = Status::not_finite;
  }
  return s;
}

}  // namespace bgl::collective_net_emu::fp
