#include "bgl/collective_net_emu/alu.hpp"

#include <algorithm>
#include <cstring>
#include <stdexcept>

namespace bgl::collective_net_emu {
namespace {

// Loads both packets into local arrays (alias-safe, and the compiler vectorises the loop), applies
// f lane by lane, stores the result.
template <class T, class F>
void lanewise(std::byte* dst, const std::byte* a, const std::byte* b, F f) {
  constexpr std::size_t n = kPacketBytes / sizeof(T);
  T x[n], y[n];
  std::memcpy(x, a, kPacketBytes);
  std::memcpy(y, b, kPacketBytes);
  for (std::size_t i = 0; i < n; ++i)
    x[i] = f(x[i], y[i]);
  std::memcpy(dst, x, kPacketBytes);
}

// Unsigned arithmetic: two's-complement wrap-around without undefined behaviour, and the same bits
// for signed and unsigned lanes.
template <class T>
void add_lanes(std::byte* dst, const std::byte* a, const std::byte* b) {
  lanewise<T>(dst, a, b, [](T x, T y) { return static_cast<T>(x + y); });
}

template <class T>
void minmax_lanes(bool max, std::byte* dst, const std::byte* a, const std::byte* b) {
  if (max)
    lanewise<T>(dst, a, b, [](T x, T y) { return std::max(x, y); });
  else
    lanewise<T>(dst, a, b, [](T x, T y) { return std::min(x, y); });
}

template <std::size_t Words>
void wide_add_lanes(std::byte* dst, const std::byte* a, const std::byte* b) {
  constexpr std::size_t words = kPacketBytes / 8;
  constexpr std::size_t lanes = words / Words;
  std::uint64_t x[words], y[words];
  std::memcpy(x, a, kPacketBytes);
  std::memcpy(y, b, kPacketBytes);
  for (std::size_t l = 0; l < lanes; ++l)
    add_wide({x + l * Words, Words}, {x + l * Words, Words}, {y + l * Words, Words});
  // A 192-bit lane leaves two words over: they add as 64-bit lanes, so the whole packet is still
  // combined order-independently.
  for (std::size_t w = lanes * Words; w < words; ++w)
    x[w] += y[w];
  std::memcpy(dst, x, kPacketBytes);
}

void bitwise(AluOp alu, std::byte* dst, const std::byte* a, const std::byte* b) {
  switch (alu) {
    case AluOp::bit_and:
      return lanewise<std::uint64_t>(dst, a, b, [](auto x, auto y) { return x & y; });
    case AluOp::bit_or:
      return lanewise<std::uint64_t>(dst, a, b, [](auto x, auto y) { return x | y; });
    default:
      return lanewise<std::uint64_t>(dst, a, b, [](auto x, auto y) { return x ^ y; });
  }
}

void add(Lane lane, std::byte* dst, const std::byte* a, const std::byte* b) {
  switch (lane) {
    case Lane::i32:
    case Lane::u32:
      return add_lanes<std::uint32_t>(dst, a, b);
    case Lane::i64:
    case Lane::u64:
      return add_lanes<std::uint64_t>(dst, a, b);
    case Lane::w128:
      return wide_add_lanes<2>(dst, a, b);
    case Lane::w192:
      return wide_add_lanes<3>(dst, a, b);
    case Lane::w256:
      return wide_add_lanes<4>(dst, a, b);
  }
}

void minmax(bool max, Lane lane, std::byte* dst, const std::byte* a, const std::byte* b) {
  switch (lane) {
    case Lane::i32:
      return minmax_lanes<std::int32_t>(max, dst, a, b);
    case Lane::u32:
      return minmax_lanes<std::uint32_t>(max, dst, a, b);
    case Lane::i64:
      return minmax_lanes<std::int64_t>(max, dst, a, b);
    case Lane::u64:
      return minmax_lanes<std::uint64_t>(max, dst, a, b);
    default:
      throw std::invalid_argument("MAX/MIN need a 32- or 64-bit lane");
  }
}

}  // namespace

std::string to_string(Op op) {
  constexpr const char* alu[] = {"add", "max", "min", "and", "or", "xor"};
  constexpr const char* lane[] = {"i32", "u32", "i64", "u64", "w128", "w192", "w256"};
  if (!op.valid()) return "invalid(" + std::to_string(op.code()) + ")";
  return std::string(alu[static_cast<int>(op.alu)]) + "." + lane[static_cast<int>(op.lane)];
}

void add_wide(std::span<std::uint64_t> sum, std::span<const std::uint64_t> a,
              std::span<const std::uint64_t> b) {
  std::uint64_t carry = 0;
  for (std::size_t w = 0; w < sum.size(); ++w) {
    const std::uint64_t s = a[w] + b[w];
    const std::uint64_t c1 = s < a[w];
    const std::uint64_t t = s + carry;
    const std::uint64_t c2 = t < s;
    sum[w] = t;
    carry = c1 | c2;
  }
}

void combine(Op op, PacketSpan dst, ConstPacketSpan a, ConstPacketSpan b) {
  switch (op.alu) {
    case AluOp::add:
      return add(op.lane, dst.data(), a.data(), b.data());
    case AluOp::max:
    case AluOp::min:
      return minmax(op.alu == AluOp::max, op.lane, dst.data(), a.data(), b.data());
    default:
      return bitwise(op.alu, dst.data(), a.data(), b.data());
  }
}

}  // namespace bgl::collective_net_emu
