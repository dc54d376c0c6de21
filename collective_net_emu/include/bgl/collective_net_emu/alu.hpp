#pragma once
// The collective network's ALU: what a tree router does to the packets that meet at a node.
//
// BG/L's ALU has bitwise and integer operations only: ADD (two's complement, carry
// within a lane), MAX, MIN, AND, OR, XOR over the 256-byte packet read as an array of lanes. The
// emulator offers 32- and 64-bit lanes (signed and unsigned, which matters for MAX/MIN) and wide
// lanes of 128, 192 and 256 bits for ADD: the fixed-point mantissas of the two-phase
// floating-point sum need more than 64 bits (see fp.hpp). Integer ADD wraps modulo 2^width, so
// every operation is associative and commutative and the result does not depend on the order in
// which packets meet.
#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

namespace bgl::collective_net_emu {

inline constexpr std::size_t kPacketBytes = 256;  // fixed, all payload
using PacketSpan = std::span<std::byte, kPacketBytes>;
using ConstPacketSpan = std::span<const std::byte, kPacketBytes>;

enum class AluOp : std::uint8_t { add, max, min, bit_and, bit_or, bit_xor };

// Lane widths. Bitwise operations ignore the lane; MAX/MIN need a 32- or 64-bit lane.
enum class Lane : std::uint8_t { i32, u32, i64, u64, w128, w192, w256 };

constexpr std::size_t lane_bytes(Lane l) {
  constexpr std::array<std::size_t, 7> bytes{4, 4, 8, 8, 16, 24, 32};
  return bytes[static_cast<std::size_t>(l)];
}
// Lanes per packet (a 192-bit lane leaves the last 16 bytes of the packet unused).
constexpr std::size_t lanes_per_packet(Lane l) {
  return kPacketBytes / lane_bytes(l);
}
// Message bytes a packet carries: whole lanes only, so that no lane straddles two packets.
constexpr std::size_t payload_bytes(Lane l) {
  return lanes_per_packet(l) * lane_bytes(l);
}

struct Op {
  AluOp alu = AluOp::add;
  Lane lane = Lane::u64;

  constexpr bool valid() const {
    const bool wide = lane == Lane::w128 || lane == Lane::w192 || lane == Lane::w256;
    return !(wide && (alu == AluOp::max || alu == AluOp::min)) &&
           static_cast<int>(alu) <= static_cast<int>(AluOp::bit_xor) &&
           static_cast<int>(lane) <= static_cast<int>(Lane::w256);
  }
  // A compact code carried with every contribution so that a combine can detect tasks that
  // disagree about the operation.
  constexpr std::uint16_t code() const {
    return static_cast<std::uint16_t>(static_cast<unsigned>(alu) << 4 |
                                      static_cast<unsigned>(lane));
  }
  static constexpr Op from_code(std::uint16_t c) {
    return Op{static_cast<AluOp>(c >> 4), static_cast<Lane>(c & 0xf)};
  }
  bool operator==(const Op&) const = default;
};

std::string to_string(Op op);  // "add.u64", "max.i32", "add.w128", ...

// dst = a op b, lane by lane over the whole packet. dst may be a or b.
void combine(Op op, PacketSpan dst, ConstPacketSpan a, ConstPacketSpan b);
// dst = dst op b.
inline void combine_into(Op op, PacketSpan dst, ConstPacketSpan b) {
  combine(op, dst, dst, b);
}

// Wide lanes are little-endian arrays of 64-bit words (word 0 least significant), two's
// complement: sum = a + b modulo 2^(64*words), the carry rippling across the words.
void add_wide(std::span<std::uint64_t> sum, std::span<const std::uint64_t> a,
              std::span<const std::uint64_t> b);

}  // namespace bgl::collective_net_emu
