#pragma once
// The 16-byte torus packet header. Layout (byte offsets), documented in docs/PACKETS.md:
//   0..2  destination x, y, z          8      dispatch id (software: packet type / handler)
//   3     destination FIFO group       9..11  source rank, 24-bit little endian
//   4     flags (see Flag)             12..15 protocol word (software: sequence, message id, ...)
//   5     size in 32-byte chunks (1..8)
//   6     payload bytes (0..240)
//   7     check byte: xor of bytes 0..6 and 0x5a, so that garbage is recognised
// Bytes 0..7 are what BG/L's hardware header carries; 8..15 are the software header.
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>

#include "bgl/torus_emu/direction.hpp"
#include "bgl/torus_emu/shape.hpp"

namespace bgl::packet_layer {

inline constexpr std::size_t kChunkBytes = 32;
inline constexpr std::size_t kMaxPacketBytes = 256;
inline constexpr std::size_t kHeaderBytes = 16;
inline constexpr std::size_t kMaxPayloadBytes = kMaxPacketBytes - kHeaderBytes;  // 240
inline constexpr std::uint32_t kMaxSourceRank = (1u << 24) - 1;

enum class Routing : std::uint8_t { deterministic, adaptive };

// Chunks needed to carry `payload` bytes: ceil((payload + 16) / 32).
constexpr std::uint8_t chunks_for(std::size_t payload) {
  return static_cast<std::uint8_t>((payload + kHeaderBytes + kChunkBytes - 1) / kChunkBytes);
}

struct PacketHeader {
  enum Flag : std::uint8_t {
    kAdaptive = 1u << 0,
    kDeposit = 1u << 1,
    kHighPriority = 1u << 2,
    kLineDirShift = 4,  // bits 4..6: Direction of a deposit-bit line
  };

  std::array<std::uint8_t, 3> dest{};
  std::uint8_t dest_group = 0;
  std::uint8_t flags = 0;
  std::uint8_t chunks = 0;
  std::uint8_t payload_bytes = 0;
  std::uint8_t check = 0;
  std::uint8_t dispatch = 0;
  std::array<std::uint8_t, 3> source{};
  std::uint32_t word = 0;

  torus_emu::Coord destination() const { return {dest[0], dest[1], dest[2]}; }
  std::uint32_t source_rank() const {
    return source[0] | (std::uint32_t{source[1]} << 8) | (std::uint32_t{source[2]} << 16);
  }
  bool adaptive() const { return flags & kAdaptive; }
  bool deposit() const { return flags & kDeposit; }
  bool high_priority() const { return flags & kHighPriority; }
  torus_emu::Direction line_direction() const {
    return static_cast<torus_emu::Direction>((flags >> kLineDirShift) & 7u);
  }
  std::size_t packet_bytes() const { return std::size_t{chunks} * kChunkBytes; }

  // The check byte of a header whose bytes 0..7 are `hardware` (little endian; byte 7, the check
  // byte itself, is ignored): for producers that build the header in a register.
  static constexpr std::uint8_t check_of(std::uint64_t hardware) {
    hardware &= 0x00ffffffffffffffULL;
    hardware ^= hardware >> 32;
    hardware ^= hardware >> 16;
    hardware ^= hardware >> 8;
    return static_cast<std::uint8_t>(hardware) ^ 0x5a;
  }
  // Inline: computed for every packet sent and checked for every packet received.
  std::uint8_t compute_check() const {
    // One load of the 8 hardware bytes, folded to one byte.
    std::uint64_t word;
    std::memcpy(&word, this, sizeof word);
    return check_of(word);
  }
  void seal() { check = compute_check(); }

  enum class Problem : std::uint8_t {
    none,
    check_byte,
    size,
    payload_size,
    destination,
    group,
    deposit,
    wrong_node,
    wrong_group
  };
  // What makes this header impossible for a packet sent on `shape` (Problem::none when it is fine).
  // Cheap enough for every received packet: no allocation, no division.
  Problem validate(const torus_emu::Shape& shape, int groups) const;
  std::string describe() const;
};

std::string_view to_string(PacketHeader::Problem p);
static_assert(sizeof(PacketHeader) == kHeaderBytes);
static_assert(std::is_trivially_copyable_v<PacketHeader>);

// Copies n <= 256 bytes of a packet: 32-byte blocks, the last one ending at n (overlapping the one
// before it), small sizes in two overlapping words. Every packet goes through two of these, and
// the compiler's inline `rep movsq` for an unknown size below 256 costs more to start than the
// whole copy.
inline void copy_packet_bytes(std::byte* dst, const std::byte* src, std::size_t n) {
  if (n >= 32) {
    for (std::size_t i = 0; i + 32 < n; i += 32)
      std::memcpy(dst + i, src + i, 32);
    std::memcpy(dst + n - 32, src + n - 32, 32);
  } else if (n >= 16) {
    std::memcpy(dst, src, 16);
    std::memcpy(dst + n - 16, src + n - 16, 16);
  } else if (n >= 8) {
    std::memcpy(dst, src, 8);
    std::memcpy(dst + n - 8, src + n - 8, 8);
  } else if (n >= 4) {
    std::memcpy(dst, src, 4);
    std::memcpy(dst + n - 4, src + n - 4, 4);
  } else {
    for (std::size_t i = 0; i < n; ++i)
      dst[i] = src[i];
  }
}

// A whole packet as a FIFO holds it. 8-byte aligned only (not like BG/L's 32-byte chunks): in a
// reception FIFO slot it follows the slot's sequence number directly, so that the sequence, the
// header and the first 40 payload bytes share one cache line (reception_fifo.hpp).
struct alignas(8) Packet {
  PacketHeader header;
  std::array<std::byte, kMaxPayloadBytes> payload;
};
static_assert(sizeof(Packet) == kMaxPacketBytes);

}  // namespace bgl::packet_layer
