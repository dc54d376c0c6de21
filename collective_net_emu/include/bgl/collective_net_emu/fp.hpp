#pragma once
// Floating-point reductions on an integer ALU, as BG/L's tree did them: two phases, one for the
// exponents and one for the normalised mantissas.
//
// Sum of doubles, element by element:
//   phase 1  every task contributes exponent_of(x) (u32 lane); the tree's integer MAX gives E, the
//            largest biased exponent of that element over all tasks (2047 when a NaN or an
//            infinity takes part).
//   phase 2  every task contributes its x as a 128-bit two's-complement fixed-point integer on a
//            grid of 2^(E - 1075 - G) (to_fixed); the tree's wide integer ADD sums them exactly;
//            from_fixed converts the sum back with one round-to-nearest-even.
// G (guard_bits) is 74 - ceil(log2(tasks)), so that tasks * 2^(53 + G) <= 2^127: the sum cannot
// overflow the lane. An input whose exponent is within G of E converts exactly; a smaller one is
// rounded to the grid (half a grid unit at most).
//
// Error bound, with n tasks and ulp(E) = 2^(E - 1075) the ulp of a double with the element's
// largest exponent:
//     |result - exact sum| <= 1/2 ulp(result) + n * 2^-(G+1) * ulp(E)
// (the second term is at most 2^(2*ceil(log2 n) - 75) ulp(E), e.g. 2^-63 ulp(E) for 64 tasks).
// When every input lies within G binades of the largest, the result is the correctly rounded exact
// sum. It never depends on the order in which tasks arrive: integer addition is exact.
//
// Special values travel in-band: when E = 2047 each task adds a count of its NaN / +inf / -inf to
// the element's lane instead, and the result is the IEEE answer (NaN, +inf, -inf) with
// Status::not_finite. A finite exact sum beyond the double range gives +-inf with
// Status::overflow. Zero sums are +0 (the sign of an all-negative-zero sum is not tracked).
//
// MAX and MIN of doubles take one phase: order_key maps doubles to int64 so that integer order is
// the numeric order (-0 < +0), the tree's i64 MAX/MIN combines, and from_order_key maps back. A NaN
// maps to the extreme the operation selects, so any NaN makes the result NaN (Status::not_finite);
// infinities are ordinary values there.
#include <array>
#include <cstdint>
#include <span>

#include "bgl/collective_net_emu/alu.hpp"
#include "bgl/collective_net_emu/status.hpp"

namespace bgl::collective_net_emu::fp {

inline constexpr std::uint32_t kSpecialExponent = 2047;
inline constexpr std::size_t kExponentsPerPacket = lanes_per_packet(Lane::u32);  // 64
inline constexpr std::size_t kFixedPerPacket = lanes_per_packet(Lane::w128);     // 16
inline constexpr std::size_t kKeysPerPacket = lanes_per_packet(Lane::i64);       // 32
inline constexpr Op kExponentOp{AluOp::max, Lane::u32};
inline constexpr Op kFixedOp{AluOp::add, Lane::w128};

using Fixed = std::array<std::uint64_t, 2>;  // little-endian words, two's complement

// Biased exponent with zero and subnormals at 1 (they share the grid of the smallest normals),
// NaN and infinities at 2047.
std::uint32_t exponent_of(double x);
int guard_bits(int tasks);

// x on the grid of element maximum `emax` (emax >= exponent_of(x)).
Fixed to_fixed(double x, std::uint32_t emax, int guard);
struct Value {
  double value;
  Status status;
};
Value from_fixed(const Fixed& sum, std::uint32_t emax, int guard);

std::int64_t order_key(double x, bool nan_high);
double from_order_key(std::int64_t key);

// Packet codecs: up to the per-packet count of values; unused lanes are written as zero.
void encode_exponents(std::span<const double> x, PacketSpan out);
void decode_exponents(ConstPacketSpan in, std::span<std::uint32_t> emax);
void encode_fixed(std::span<const double> x, std::span<const std::uint32_t> emax, int guard,
                  PacketSpan out);
Status decode_fixed(ConstPacketSpan in, std::span<const std::uint32_t> emax, int guard,
                    std::span<double> out);
void encode_keys(std::span<const double> x, bool nan_high, PacketSpan out);
Status decode_keys(ConstPacketSpan in, bool nan_high, std::span<double> out);

}  // namespace bgl::collective_net_emu::fp
