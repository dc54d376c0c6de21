#pragma once
// On-the-wire formats of the message layer's packets (the packet header's dispatch id and protocol
// word, and what the payload starts with). Internal to the message layer.
#include <cstdint>
#include <cstring>
#include <span>

#include "bgl/message_layer/bgl_ids.h"
#include "bgl/packet_layer/header.hpp"

namespace bgl::message_layer::wire {

// Packet-header dispatch ids owned by the message layer (its range: bgl/message_layer/bgl_ids.h).
enum Type : std::uint8_t {
  kOnePacket = 1,   // [First][user header][data]                          ordered
  kEagerFirst = 2,  // [First][user header][data...]                       ordered, word = 0
  kEagerData = 3,   // [data]                                              ordered, word = offset
  kScout = 4,   // [First][user header]                                ordered, word = sender slot
  kRzvAck = 5,  // [Ack]                                               word = 0
  kRzvData =
      6,  // [u32 chunk index][data]                             adaptive, word = receiver slot
  kRzvFin = 7,   // []                                                  word = sender slot
  kAeFirst = 8,  // [First][user header][data...]                       adaptive, word = parity<<31
  kAeData = 9,  // [data]                                              adaptive, word = parity<<31 |
                // offset
  kAeToken =
      10,  // []                                                  returns the adaptive-eager token
  kVnRts = 11,  // [First][user header][VnSource]  (virtual FIFO)      word = sender slot
  kLastType = kVnRts,
};
static_assert(int{kLastType} <= int{BGL_DISPATCH_ML_LAST},
              "the message layer's dispatch ids: bgl_ids.h");

struct First {
  std::uint8_t handler;
  std::uint8_t header_bytes;
  std::uint16_t
      seq;  // per (source, destination) message number: restores order for adaptive firsts
  std::uint32_t bytes_low;
  std::uint32_t bytes_high;

  std::uint64_t bytes() const { return bytes_low | (std::uint64_t{bytes_high} << 32); }
};
static_assert(sizeof(First) == 12);

struct Ack {
  std::uint32_t sender_slot;
  std::uint32_t receiver_slot;
  std::uint32_t data_group;  // FIFO group the data go to (1: the receiver's coprocessor)
};

// Where a virtual-node message's data are: the sender's process and address (cell 0), or the
// node's shared cell `cell - 1` from the sender (address 0).
struct VnSource {
  std::uint64_t address;
  std::int32_t pid;
  std::uint32_t cell;
};

inline constexpr std::size_t kFirstBytes = sizeof(First);
inline constexpr std::size_t kRzvIndexBytes = 4;
inline constexpr std::size_t kRzvChunk = packet_layer::kMaxPayloadBytes - kRzvIndexBytes;  // 236
inline constexpr std::uint32_t kParityBit = 1u << 31;

template <class T>
T load(std::span<const std::byte> p) {
  T v;
  std::memcpy(&v, p.data(), sizeof v);
  return v;
}

}  // namespace bgl::message_layer::wire
